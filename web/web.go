// Package web holds the files the binary serves as they are: the OpenAPI
// document of the API and the vendored Swagger UI and ReDoc assets (see
// vendor.sh and assets/VERSIONS.txt), so the docs work with no network.
package web

import (
	"embed"
	"io/fs"
)

// OpenAPI is the OpenAPI document served at /openapi.json. It is generated
// from the router (`make openapi`); a test fails when it is out of date.
//
//go:embed openapi.json
var OpenAPI []byte

//go:embed assets
var assets embed.FS

// Assets is the assets folder: docs.html, redoc.html, swagger-ui/, redoc/.
var Assets, _ = fs.Sub(assets, "assets")

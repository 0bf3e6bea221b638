// Package web holds the files the binary serves as they are: the OpenAPI
// document of the API, the vendored Swagger UI and ReDoc assets (see
// vendor.sh and assets/VERSIONS.txt), so the docs work with no network, and
// the built web console (console/dist, built from console/src: see
// docs/console.md).
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

//go:embed console/dist
var consoleDist embed.FS

// Console is the built console: index.html and the content-hashed files of
// assets/ it names. It is committed, so `go build` alone gives a working
// console; CI rebuilds it from console/src and fails on a difference.
var Console, _ = fs.Sub(consoleDist, "console/dist")

package server_test

import (
	"bytes"
	"flag"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/web"
)

var update = flag.Bool("update", false, "rewrite web/openapi.json from the route table")

func TestOpenAPIDocumentIsCurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got, err := BuildOpenAPI(e.app.Server.Routes(), "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("../web/openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, web.OpenAPI) {
		t.Fatal("web/openapi.json is out of date with the routes: run `make openapi` and commit the result")
	}
}

// Every route the router serves is in the document, and the document names
// no route the router does not serve.
func TestRoutesMatchDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	router, err := loadDocument()
	if err != nil {
		t.Fatal(err)
	}
	_ = router
	documented := map[string]bool{}
	for _, r := range e.app.Server.Routes() {
		documented[r.Method+" "+r.Path] = true
	}
	doc := mustDoc(t)
	inDoc := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inDoc[method+" "+path] = true
		}
	}
	skip := map[string]bool{}
	for _, p := range server.DocRoutes() {
		skip[p] = true
	}
	served := map[string]bool{}
	for _, ri := range e.app.Server.EngineRoutes() {
		if skip[ri.Path] {
			continue
		}
		key := ri.Method + " " + openAPIPath(ri.Path)
		if ri.Method == "HEAD" {
			// HEAD is served wherever GET is, and documented once, in the
			// API's description, rather than beside every GET.
			if !inDoc["GET "+openAPIPath(ri.Path)] {
				t.Errorf("%s is served without a documented GET", key)
			}
			continue
		}
		served[key] = true
		if !inDoc[key] {
			t.Errorf("%s is served but not in web/openapi.json", key)
		}
	}
	for key := range inDoc {
		if !served[key] {
			t.Errorf("%s is in web/openapi.json but not served", key)
		}
	}
	var keys []string
	for k := range served {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) < 20 {
		t.Fatalf("only %d routes served: %v", len(keys), keys)
	}
}

// openAPIPath turns :id into {id}.
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// mustDoc is the parsed web/openapi.json, shared by every test: read it,
// never change it.
func mustDoc(t *testing.T) *openapi3.T {
	t.Helper()
	if _, err := loadDocument(); err != nil {
		t.Fatal(err)
	}
	return docSpec
}

package server

import (
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// The API's conventions that hold for every route, checked from the route
// table before a handler runs: JSON bodies are declared as JSON, and every
// query parameter is one the route knows. Both are refused the way an
// unknown JSON field is, so a typo never silently does nothing.

// conventions are the checks handle puts in front of a route's handler,
// after authentication: a caller without the right to a route hears that
// first.
func conventions(r Route) []gin.HandlerFunc {
	checks := []gin.HandlerFunc{knownQuery(queryNames(r.Query), r.Path)}
	if r.Body != nil {
		checks = append(checks, requireJSON)
	}
	return checks
}

// msgNotJSON is the detail of the 415 for a body declared as something else.
const msgNotJSON = "send Content-Type: application/json"

// requireJSON refuses a body declared as anything but JSON with 415. A
// request without Content-Type is read as JSON, as before; a charset may be
// named, and must be UTF-8, the only one JSON has (RFC 8259).
func requireJSON(c *gin.Context) {
	if ct := c.GetHeader("Content-Type"); ct != "" && !isJSONType(ct) {
		abort(c, http.StatusUnsupportedMediaType, msgNotJSON)
		return
	}
	c.Next()
}

func isJSONType(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// knownQuery refuses a query string that does not parse, or that names a
// parameter outside allowed, with a 422 naming it. A route without a query
// type takes no parameters at all.
func knownQuery(allowed map[string]bool, path string) gin.HandlerFunc {
	return func(c *gin.Context) {
		raw := c.Request.URL.RawQuery
		if raw == "" {
			c.Next()
			return
		}
		values, err := url.ParseQuery(raw)
		if err != nil {
			abort(c, http.StatusUnprocessableEntity, "query: the query string is malformed: "+err.Error())
			return
		}
		var unknown []string
		for name := range values {
			if !allowed[name] {
				unknown = append(unknown, name)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			name := unknown[0]
			if name == "" {
				name = strconv.Quote(name)
			}
			detail := name + ": is not a known query parameter"
			if len(allowed) == 0 {
				detail += " (" + c.Request.Method + " " + path + " takes none)"
			}
			abort(c, http.StatusUnprocessableEntity, detail)
			return
		}
		c.Next()
	}
}

// queryNames lists the parameters of a query type: the `form` names of its
// fields, embedded structs included (the same walk the OpenAPI document
// makes of it).
func queryNames(q any) map[string]bool {
	names := map[string]bool{}
	if q == nil {
		return names
	}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			if name := strings.Split(f.Tag.Get("form"), ",")[0]; name != "" && name != "-" {
				names[name] = true
			}
		}
	}
	walk(reflect.TypeOf(q))
	return names
}

// omitHeadBody drops the body of every answer to HEAD, whatever server
// runs the router: HEAD runs the GET route's handlers (handle registers
// both), so its status and headers are GET's. It is global, so 404s and
// 405s keep no body either. (Handlers that stream, a download or an event
// stream, answer HEAD before they start.)
func omitHeadBody(c *gin.Context) {
	if c.Request.Method == http.MethodHead {
		c.Writer = headWriter{c.Writer}
	}
	c.Next()
}

type headWriter struct{ gin.ResponseWriter }

func (w headWriter) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	return len(b), nil
}

func (w headWriter) WriteString(s string) (int, error) {
	w.WriteHeaderNow()
	return len(s), nil
}

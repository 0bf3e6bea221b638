package server_test

import (
	"encoding/json"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server"
)

// badValues replace one field of a valid request body at a time: each a
// JSON value of the wrong type or out of any sensible range.
var badValues = []string{`"x"`, `""`, `-1`, `0`, `1.5`, `1e308`, `9223372036854775808`, `true`, `null`, `[]`, `{}`,
	`["x"]`, `[-1]`, `{"a":1}`, `"` + strings.Repeat("é", 3000) + `"`}

// badBodies replace a whole request body.
var badBodies = []string{`[]`, `"x"`, `1`, `null`, `{`, `{"a":}`, `{}`, `{"a":1}{"b":2}`}

// badSegments replace one numeric segment of a path.
var badSegments = []string{"abc", "-1", "0", "1.5", "99999999999999999999", "%00"}

// badQueryValues are given to every query parameter a route declares.
var badQueryValues = []string{"abc", "-1", "0", "99999999999999999999", "1e400", "", "%ff", strings.Repeat("z", 3000)}

// TestNoServerErrorFromBadInput sends every route of the authorization
// table, as the super admin (so that every check runs), the input a client
// could get wrong: each field of its body with each bad value, whole
// bodies that are not the object it takes, each id in its path replaced,
// and each query parameter it declares given nonsense. A 5xx from any of
// them is a bug (input must get a 4xx that says what is wrong), and every
// 4xx must carry a detail.
func TestNoServerErrorFromBadInput(t *testing.T) {
	skipTableUnderRace(t)
	t.Parallel()
	provider := fakeOpenAI(t, nil)
	fixture, routes := newAuthzFixture(t, provider.URL)
	byRoute := map[string]*server.Route{}
	for _, r := range routes {
		byRoute[r.Method+" "+r.Path] = r
	}
	const role = 4 // super_admin
	token, fill := fixture.tokens[authzRoles[role]], fixture.fill[authzRoles[role]]
	// A read changes nothing another case sees (as in caseEnv), so the
	// GET cases share one app; the others each get their own copy.
	reads := fixture.env(t)
	for _, c := range authzTable {
		if c.file || c.stream || c.want[role] >= 500 {
			continue
		}
		method, tmpl, _ := strings.Cut(c.route, " ")
		if c.path != "" {
			tmpl = c.path
		}
		var query any
		if r := byRoute[c.route]; r != nil {
			query = r.Query
		}
		t.Run(strings.ReplaceAll(c.route, "/", "_"), func(t *testing.T) {
			t.Parallel()
			e := reads
			if method != "GET" {
				e = fixture.env(t)
			}
			path := fill.Replace(tmpl)
			var body string
			if c.body != nil {
				body = fill.Replace(mustJSON(t, c.body))
			}
			check := func(path, body string) {
				t.Helper()
				var b any
				if body != "" {
					b = body
				}
				got := e.do(t, method, path, token, b)
				if got.Code >= 500 {
					t.Errorf("%s %s %.300s: %d %s", method, path, body, got.Code, got.Body)
				} else if got.Code >= 400 && method != "HEAD" && !strings.Contains(got.Body, `"detail"`) {
					t.Errorf("%s %s %.300s: %d without a detail: %s", method, path, body, got.Code, got.Body)
				}
			}
			for _, p := range badPaths(path) {
				check(p, body)
			}
			for _, q := range badQueries(query) {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				check(path+sep+q, body)
			}
			if method == "GET" || method == "DELETE" && c.body == nil {
				return
			}
			for _, b := range badBodies {
				check(path, b)
			}
			var fields map[string]json.RawMessage
			if json.Unmarshal([]byte(body), &fields) != nil {
				return
			}
			keys := make([]string, 0, len(fields))
			for k := range fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				for _, v := range badValues {
					mutated := map[string]json.RawMessage{}
					for k2, v2 := range fields {
						mutated[k2] = v2
					}
					mutated[k] = json.RawMessage(v)
					check(path, mustJSON(t, mutated))
				}
			}
		})
	}
}

// badPaths are path with each of its numeric segments replaced by each bad
// segment in turn.
func badPaths(path string) []string {
	p, query, _ := strings.Cut(path, "?")
	segs := strings.Split(p, "/")
	var out []string
	for i, s := range segs {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			continue
		}
		for _, bad := range badSegments {
			c := append([]string(nil), segs...)
			c[i] = bad
			q := strings.Join(c, "/")
			if query != "" {
				q += "?" + query
			}
			out = append(out, q)
		}
	}
	return out
}

// badQueries are query strings giving one declared parameter of query (a
// struct with form tags) one bad value each.
func badQueries(query any) []string {
	if query == nil {
		return nil
	}
	t := reflect.TypeOf(query)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if name, _, _ := strings.Cut(f.Tag.Get("form"), ","); name != "" && name != "-" {
				names = append(names, name)
			}
		}
	}
	walk(t)
	var out []string
	for _, n := range names {
		for _, v := range badQueryValues {
			out = append(out, url.QueryEscape(n)+"="+url.QueryEscape(v))
		}
		// A repeated parameter, and a raw (unescaped) bad escape.
		out = append(out, n+"=1&"+n+"=2", n+"=%zz")
	}
	return out
}

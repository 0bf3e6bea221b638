package server_test

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/copydesk/copydesk/store"
)

// Every limit web/openapi.json declares on a request body is the server's:
// a value one past it is refused with a 422 naming the field, and a value
// at it is not refused for that field. A generated client trusts these
// numbers (the red team found archetype variables declared as 50
// characters that meant 50 variables, and autopilot values declared as 20
// characters where 5000 were taken).
func TestDeclaredLimitsAreEnforced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "root", store.RoleSuperAdmin)
	doc := mustDoc(t)
	paths := doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	pathParam := regexp.MustCompile(`\{[^}]+\}`)
	checked := 0
	for _, path := range keys {
		for method, op := range paths[path].Operations() {
			if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
				continue
			}
			schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
			// Ids that name nothing: the body is read before anything is
			// looked up, and nothing is changed.
			url := pathParam.ReplaceAllString(path, "999999")
			for _, c := range limitCases(schema) {
				name := method + " " + path + " " + c.field + " " + c.rule
				over := fillRequired(schema)
				over[c.field] = c.over
				r := e.do(t, method, url, tok, over)
				if r.Code != 422 || !namesField(r.Detail(), c.field) {
					t.Errorf("%s: one past the limit answered %d %s; want 422 naming %s", name, r.Code, r.Detail(), c.field)
				}
				at := fillRequired(schema)
				at[c.field] = c.at
				// Refused for what the filler wrote (not an address, no such
				// id) is fine; refused for its size is not.
				if r := e.do(t, method, url, tok, at); r.Code == 422 && namesField(r.Detail(), c.field) && aboutSize(r.Detail()) {
					t.Errorf("%s: a value at the limit was refused: %s", name, r.Detail())
				}
				checked++
			}
		}
	}
	t.Logf("%d declared limits checked", checked)
	if checked < 100 {
		t.Fatalf("only %d limits checked: the document was read wrong", checked)
	}
}

// limitCase is one declared limit of one field: a value at it and one past.
type limitCase struct {
	field, rule string
	at, over    any
}

func limitCases(s *openapi3.Schema) []limitCase {
	var out []limitCase
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n].Value
		switch {
		case p.Type.Is(openapi3.TypeString) && p.MaxLength != nil && len(p.Enum) == 0:
			m := int(*p.MaxLength)
			out = append(out, limitCase{n, fmt.Sprintf("maxLength %d", m), limitText(m), limitText(m + 1)})
		case p.Type.Is(openapi3.TypeArray) && p.MaxItems != nil:
			m := int(*p.MaxItems)
			out = append(out, limitCase{n, fmt.Sprintf("maxItems %d", m), items(p.Items.Value, m), items(p.Items.Value, m+1)})
		case p.Type.Is(openapi3.TypeArray) && p.Items.Value.MaxLength != nil:
			m := int(*p.Items.Value.MaxLength)
			out = append(out, limitCase{n, fmt.Sprintf("items maxLength %d", m), []any{limitText(m)}, []any{limitText(m + 1)}})
		case p.Type.Is(openapi3.TypeInteger) || p.Type.Is(openapi3.TypeNumber):
			if p.Max != nil {
				out = append(out, limitCase{n, fmt.Sprintf("maximum %g", *p.Max), *p.Max, *p.Max + 1})
			}
			// A zero under omitempty means "not given", not a value: a
			// minimum is checked from below only where below is not 0.
			if p.Min != nil && !p.ExclusiveMin.IsTrue() && *p.Min-1 != 0 {
				out = append(out, limitCase{n, fmt.Sprintf("minimum %g", *p.Min), *p.Min, *p.Min - 1})
			}
		}
		if p.Type.Is(openapi3.TypeObject) && p.MaxProps != nil {
			m := int(*p.MaxProps)
			out = append(out, limitCase{n, fmt.Sprintf("maxProperties %d", m), props(m, 1), props(m+1, 1)})
		}
		if ap := p.AdditionalProperties.Schema; p.Type.Is(openapi3.TypeObject) && ap != nil && ap.Value.MaxLength != nil {
			m := int(*ap.Value.MaxLength)
			out = append(out, limitCase{n, fmt.Sprintf("values maxLength %d", m), props(1, m), props(1, m+1)})
		}
	}
	return out
}

func limitText(n int) string { return strings.Repeat("a", n) }

func items(s *openapi3.Schema, n int) []any {
	out := make([]any, n)
	for i := range out {
		v := validValue(s)
		if s.Type.Is(openapi3.TypeInteger) || s.Type.Is(openapi3.TypeNumber) {
			v = i + 1 // distinct ids
		}
		if s.Type.Is(openapi3.TypeString) && len(s.Enum) == 0 {
			v = fmt.Sprintf("v%d", i)
		}
		out[i] = v
	}
	return out
}

func props(n, length int) map[string]any {
	out := map[string]any{}
	for i := range n {
		out[fmt.Sprintf("k%d", i)] = limitText(length)
	}
	return out
}

// fillRequired is a body with each required property given a value its
// schema allows.
func fillRequired(s *openapi3.Schema) map[string]any {
	out := map[string]any{}
	for _, n := range s.Required {
		if p := s.Properties[n]; p != nil {
			out[n] = validValue(p.Value)
		}
	}
	return out
}

func validValue(s *openapi3.Schema) any {
	for _, v := range s.Enum {
		if v != nil {
			return v
		}
	}
	switch {
	case s.Type.Is(openapi3.TypeString):
		if s.Format == "date-time" {
			return "2030-01-01T00:00:00Z"
		}
		return limitText(max(int(s.MinLength), 1))
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		v := 1.0
		if s.Min != nil {
			v = math.Max(v, *s.Min)
			if s.ExclusiveMin.IsTrue() {
				v = *s.Min + 1
			}
		}
		return v
	case s.Type.Is(openapi3.TypeBoolean):
		return false
	case s.Type.Is(openapi3.TypeArray):
		return items(s.Items.Value, int(s.MinItems))
	case s.Type.Is(openapi3.TypeObject):
		return fillRequired(s)
	}
	return nil
}

// aboutSize: the detail speaks of a length, a count or a bound.
func aboutSize(detail string) bool {
	for _, w := range []string{"at most", "at least", "characters", "items", "greater than", "less than"} {
		if strings.Contains(detail, w) {
			return true
		}
	}
	return false
}

// namesField: the detail is about the field (field: …, field.key: …,
// field[0]: …).
func namesField(detail, field string) bool {
	return strings.HasPrefix(detail, field+":") || strings.HasPrefix(detail, field+".") || strings.HasPrefix(detail, field+"[")
}

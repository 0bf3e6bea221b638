package server

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin/binding"
	"github.com/go-playground/validator/v10"
)

// The structs below carry every tag × kind the request types use; each
// case is also run through Gin's validator (go-playground/validator, which
// checkRules replaced in the binary; tests may still link it), so a
// difference in meaning fails here.

type ruleSection struct {
	Heading  string `json:"heading" binding:"required,max=5"`
	Guidance string `json:"guidance" binding:"max=8"`
}

type ruleInner struct {
	Label string `json:"label" binding:"omitempty,oneof=a b"`
}

type ruleProbe struct {
	Name     string            `json:"name" binding:"required,max=4"`
	Kind     string            `json:"kind" binding:"omitempty,oneof=writer seo"`
	Short    string            `json:"short" binding:"omitempty,min=2,max=3"`
	Note     *string           `json:"note" binding:"omitempty,max=3"`
	Bare     *string           `json:"bare" binding:"max=3"`
	EnvID    int64             `json:"env_id" binding:"omitempty,gt=0"`
	Opt      *int64            `json:"opt" binding:"omitempty,gt=0"`
	Page     *int              `json:"page" binding:"omitempty,gte=1,lte=10"`
	Temp     *float64          `json:"temp" binding:"omitempty,gte=0,lte=2"`
	Active   *bool             `json:"active" binding:"required"`
	IDs      []int64           `json:"ids" binding:"required,max=3,dive,gt=0"`
	MoreIDs  *[]int64          `json:"more_ids" binding:"omitempty,max=2,dive,gt=0"`
	Words    []string          `json:"words" binding:"omitempty,max=3,dive,min=2"`
	Vars     map[string]string `json:"vars" binding:"max=2,dive,max=3"`
	Outline  []ruleSection     `json:"outline" binding:"max=2,dive"`
	POutline *[]ruleSection    `json:"p_outline" binding:"omitempty,max=2,dive"`
	Inner    ruleInner         `json:"inner"`
	PInner   *ruleInner        `json:"p_inner"`
	When     time.Time         `json:"when"`
	hidden   string            `binding:"required"` //lint:ignore U1000 an unexported field is never checked
}

// okProbe keeps every rule of ruleProbe.
func okProbe() ruleProbe {
	return ruleProbe{Name: "ann", Bare: ptr("x"), Active: ptr(false), IDs: []int64{1}}
}

func ptr[T any](v T) *T { return &v }

func TestCheckRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(p *ruleProbe)
		want string // "" when every rule holds
	}{
		{"all rules kept", func(p *ruleProbe) {}, ""},
		{"everything set and kept", func(p *ruleProbe) {
			p.Kind, p.Short, p.Note, p.EnvID, p.Opt = "seo", "ab", ptr("abc"), 3, ptr(int64(1))
			p.Page, p.Temp, p.MoreIDs, p.Words = ptr(10), ptr(2.0), &[]int64{1, 2}, []string{"ab", "cd"}
			p.Vars = map[string]string{"a": "b"}
			p.Outline = []ruleSection{{Heading: "h"}}
			p.POutline = &[]ruleSection{{Heading: "h", Guidance: "g"}}
			p.Inner.Label, p.PInner, p.When = "a", &ruleInner{Label: "b"}, time.Now()
		}, ""},
		{"required string empty", func(p *ruleProbe) { p.Name = "" }, "name: is required"},
		{"max counts characters, not bytes", func(p *ruleProbe) { p.Name = "ñäöü" }, ""},
		{"string over max", func(p *ruleProbe) { p.Name = "annie" }, "name: must be at most 4 characters"},
		{"oneof refused", func(p *ruleProbe) { p.Kind = "poet" }, "kind: must be one of: writer, seo"},
		{"omitempty skips an empty string", func(p *ruleProbe) { p.Short = "" }, ""},
		{"string under min", func(p *ruleProbe) { p.Short = "é" }, "short: must be at least 2 characters"},
		{"pointer to a long string", func(p *ruleProbe) { p.Note = ptr("abcd") }, "note: must be at most 3 characters"},
		{"omitempty does not skip a pointer to an empty string", func(p *ruleProbe) { p.Note = ptr("") }, ""},
		{"nil pointer without omitempty breaks its first rule", func(p *ruleProbe) { p.Bare = nil }, "bare: must be at most 3"},
		{"integer not greater", func(p *ruleProbe) { p.EnvID = -1 }, "env_id: must be greater than 0"},
		{"omitempty skips a zero integer", func(p *ruleProbe) { p.EnvID = 0 }, ""},
		{"a pointer to zero is a value", func(p *ruleProbe) { p.Opt = ptr(int64(0)) }, "opt: must be greater than 0"},
		{"below gte", func(p *ruleProbe) { p.Page = ptr(0) }, "page: must be at least 1"},
		{"above lte", func(p *ruleProbe) { p.Page = ptr(11) }, "page: must be at most 10"},
		{"float above lte", func(p *ruleProbe) { p.Temp = ptr(2.01) }, "temp: must be at most 2"},
		{"float below gte", func(p *ruleProbe) { p.Temp = ptr(-0.5) }, "temp: must be at least 0"},
		{"NaN keeps no bound", func(p *ruleProbe) { p.Temp = ptr(math.NaN()) }, "temp: must be at least 0"},
		{"required pointer nil", func(p *ruleProbe) { p.Active = nil }, "active: is required"},
		{"required nil slice", func(p *ruleProbe) { p.IDs = nil }, "ids: is required"},
		{"required empty slice is a value", func(p *ruleProbe) { p.IDs = []int64{} }, ""},
		{"slice over max", func(p *ruleProbe) { p.IDs = []int64{1, 2, 3, 4} }, "ids: must have at most 3 items"},
		{"dive on integers", func(p *ruleProbe) { p.IDs = []int64{1, 2, 0} }, "ids[2]: must be greater than 0"},
		{"pointer to a slice over max", func(p *ruleProbe) { p.MoreIDs = &[]int64{1, 2, 3} }, "more_ids: must have at most 2 items"},
		{"dive through a pointer to a slice", func(p *ruleProbe) { p.MoreIDs = &[]int64{0} }, "more_ids[0]: must be greater than 0"},
		{"dive on strings", func(p *ruleProbe) { p.Words = []string{"ab", "c"} }, "words[1]: must be at least 2 characters"},
		{"map counts items", func(p *ruleProbe) { p.Vars = map[string]string{"a": "", "b": "", "c": ""} }, "vars: must be at most 2"},
		{"map value too long", func(p *ruleProbe) { p.Vars = map[string]string{"a": "abc", "b": "abcd"} }, "vars.b: must be at most 3 characters"},
		{"map values kept", func(p *ruleProbe) { p.Vars = map[string]string{"a": "abc", "b": ""} }, ""},
		{"slice of structs over max", func(p *ruleProbe) { p.Outline = make([]ruleSection, 3) }, "outline: must have at most 2 items"},
		{"dive into structs", func(p *ruleProbe) { p.Outline = []ruleSection{{Heading: "h"}, {}} }, "outline[1].heading: is required"},
		{"second rule of a dived struct", func(p *ruleProbe) {
			p.Outline = []ruleSection{{Heading: "h", Guidance: "123456789"}}
		}, "outline[0].guidance: must be at most 8 characters"},
		{"dive into structs through a pointer", func(p *ruleProbe) {
			p.POutline = &[]ruleSection{{Heading: "h"}, {Heading: "toolong"}}
		}, "p_outline[1].heading: must be at most 5 characters"},
		{"nested struct without a tag is checked", func(p *ruleProbe) { p.Inner.Label = "c" }, "inner.label: must be one of: a, b"},
		{"pointer to a struct is checked", func(p *ruleProbe) { p.PInner = &ruleInner{Label: "c"} }, "p_inner.label: must be one of: a, b"},
		{"the first broken rule in field order wins", func(p *ruleProbe) {
			p.Words = []string{"x"}
			p.Kind = "poet"
		}, "kind: must be one of: writer, seo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := okProbe()
			tc.edit(&p)
			got := ""
			if re := checkRules(&p); re != nil {
				got = re.path + ": " + re.text
			}
			if got != tc.want {
				t.Fatalf("checkRules = %q, want %q", got, tc.want)
			}
			if err := validate(&p); (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
				t.Fatalf("validate = %v, want %q", err, tc.want)
			}
			agreeWithValidator(t, &p, got)
		})
	}
}

// agreeWithValidator checks that go-playground/validator, as Gin set it up,
// finds the same rule broken, in the same words and on the same Go field.
func agreeWithValidator(t *testing.T, v any, got string) {
	t.Helper()
	err := binding.Validator.ValidateStruct(v)
	if err == nil {
		if got != "" {
			t.Fatalf("the validator finds nothing wrong; checkRules says %q", got)
		}
		return
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		t.Fatalf("validator: %v", err)
	}
	fe := verrs[0]
	want := jsonNamespace(reflect.TypeOf(v), fe.StructNamespace()) + ": " + ruleText(fe.Tag(), fe.Param(), fe.Kind())
	if got != want {
		t.Fatalf("the validator says %q (%s); checkRules says %q", want, fe.StructNamespace(), got)
	}
}

// jsonNamespace spells the validator's Go path ("ruleProbe.Outline[1].Heading")
// with JSON names ("outline[1].heading").
func jsonNamespace(t reflect.Type, ns string) string {
	parts := strings.Split(ns, ".")[1:]
	for i, p := range parts {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		name, idx, _ := strings.Cut(p, "[")
		f, ok := t.FieldByName(name)
		if !ok {
			return ns
		}
		jn, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case idx != "" && f.Type.Kind() == reflect.Map: // a map's value: vars.key
			jn += "." + strings.TrimSuffix(idx, "]")
		case idx != "":
			jn += "[" + idx
		}
		parts[i] = jn
		t = f.Type
	}
	return strings.Join(parts, ".")
}

func TestCheckRulesQueryNames(t *testing.T) {
	t.Parallel()
	type q struct {
		pageQuery
		Status string `form:"status" binding:"omitempty,oneof=a b"`
		Plain  int    `binding:"omitempty,gt=1"`
	}
	cases := []struct {
		name string
		q    q
		want string
	}{
		{"embedded field by its form name", q{pageQuery: pageQuery{PerPage: ptr(201)}}, "per_page: must be at most 200"},
		{"own field", q{Status: "c"}, "status: must be one of: a, b"},
		{"no form tag: the Go name", q{Plain: 1}, "Plain: must be greater than 1"},
		{"kept", q{pageQuery: pageQuery{Page: ptr(1)}, Status: "a"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if re := checkRules(&tc.q); re != nil {
				got = re.form + ": " + re.text
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckRulesNotAStruct(t *testing.T) {
	t.Parallel()
	var nilProbe *ruleProbe
	for _, v := range []any{nil, nilProbe, ptr(3), map[string]string{}} {
		if re := checkRules(v); re != nil {
			t.Errorf("checkRules(%#v) = %+v, want nil", v, re)
		}
	}
}

func TestParseRulesRefuses(t *testing.T) {
	t.Parallel()
	for _, tag := range []string{"email", "required=1", "max", "max=ten", "oneof=", "min=1,url"} {
		if _, err := parseRules(tag); err == nil {
			t.Errorf("parseRules(%q) accepted it", tag)
		}
	}
	for _, tag := range []string{"", "required", "omitempty,max=3,dive,min=2", "omitempty,gte=0.5,lte=2", "max=0x10"} {
		if _, err := parseRules(tag); err != nil {
			t.Errorf("parseRules(%q): %v", tag, err)
		}
	}
}

func TestCheckRulesPanicsOnAMisfit(t *testing.T) {
	t.Parallel()
	cases := []any{
		&struct {
			B bool `binding:"max=1"`
		}{},
		&struct {
			F float64 `binding:"oneof=1 2"`
		}{F: 1},
		&struct {
			N int `binding:"max=1.5"`
		}{},
	}
	for i, v := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("case %d: no panic", i)
				}
			}()
			checkRules(v)
		}()
	}
}

// TestEveryBindingTagParses reads every `binding` tag in the package's
// sources, so a tag checkRules does not know fails here rather than at the
// first request that reaches it.
func TestEveryBindingTagParses(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			field, ok := node.(*ast.Field)
			if !ok || field.Tag == nil {
				return true
			}
			raw, err := strconv.Unquote(field.Tag.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(field.Pos()), err)
			}
			tag, ok := reflect.StructTag(raw).Lookup("binding")
			if !ok {
				return true
			}
			n++
			if _, err := parseRules(tag); err != nil {
				t.Errorf("%s: %v", fset.Position(field.Pos()), err)
			}
			return true
		})
	}
	if n < 100 {
		t.Fatalf("found only %d binding tags; is the test reading the package?", n)
	}
}

// FuzzCheckRules sets ruleProbe's fields from fuzzed values and compares
// checkRules with go-playground/validator.
func FuzzCheckRules(f *testing.F) {
	f.Add("ann", "seo", "ab", int64(1), 1.5, 3, "ab", true)
	f.Add("", "", "", int64(0), 0.0, 0, "", false)
	f.Add("ñäöüx", "poet", "é", int64(-1), -0.5, 11, "c", true)
	f.Fuzz(func(t *testing.T, s, kind, short string, n int64, fl float64, page int, word string, flag bool) {
		p := ruleProbe{Name: s, Kind: kind, Short: short, EnvID: n, Opt: &n, Page: &page, Temp: &fl,
			Bare: &word, Words: []string{word, short}, IDs: []int64{n, int64(page)}}
		if flag {
			p.Active = &flag
			p.Outline = []ruleSection{{Heading: s, Guidance: word}}
			p.Inner.Label = word
		}
		got := ""
		if re := checkRules(&p); re != nil {
			got = re.path + ": " + re.text
		}
		agreeWithValidator(t, &p, got)
	})
}

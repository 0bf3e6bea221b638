package server

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The `binding` struct tags of request types are checked here rather than by
// Gin's validator (go-playground/validator). That validator looks methods up
// by a name known only at run time (reflect.Value.MethodByName), and one such
// call anywhere in a binary makes the Go linker keep every exported method of
// every type that is ever put in an interface; linking it also ran ~1.3 ms of
// package init at every start, `copydesk version` included. See
// docs/DECISIONS.md.
//
// Only the tags the request types use are known: required, omitempty, min,
// max, gt, gte, lte, oneof and dive, with the validator's meaning on the
// kinds used (strings count characters, slices and maps count items, numbers
// compare values; a nil pointer breaks its first rule unless that rule is
// omitempty; a non-nil pointer is a value even when it points at a zero).
// An unknown tag or a rule that cannot apply to its field's kind panics the
// first time the type is checked, as the validator did.

// rule is one comma-separated part of a `binding` tag.
type rule struct {
	tag   string // as written: "max"
	param string // as written: "100"
	i     int64  // param as an integer (lengths, integers), when isInt
	isInt bool
	f     float64
	vals  []string // oneof
}

// ruleField is one field of a struct the checker looks at.
type ruleField struct {
	index int
	json  string // the JSON name; "" for an embedded struct without one
	form  string // the query parameter's name
	rules []rule
}

// structRules is the compiled list of one struct type's fields.
type structRules struct {
	fields []ruleField
}

// rulesCache maps reflect.Type to *structRules.
var rulesCache sync.Map

var timeType = reflect.TypeFor[time.Time]()

// ruleError is the first broken rule: the JSON path of the field
// ("sections[2].heading"), its query parameter name, and the rule in words.
type ruleError struct {
	path, form, text string
}

// checkRules applies the `binding` tags of v (a struct or a pointer to one)
// and returns the first broken rule in field order, or nil.
func checkRules(v any) *ruleError {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	return checkStruct(rv, nil)
}

// pathSeg is one step of the path to a field, kept as a list so that the
// path is only spelt out when a rule is broken.
type pathSeg struct {
	parent *pathSeg
	field  *ruleField
	index  int    // -1: the field itself; mapValue: the value of key; else an item of it
	key    string // of a map's value
}

// mapValue is the index of a map's value in a path.
const mapValue = -2

func (p *pathSeg) jsonPath() string {
	var segs []*pathSeg
	for s := p; s != nil; s = s.parent {
		segs = append(segs, s)
	}
	var b strings.Builder
	for i := len(segs) - 1; i >= 0; i-- {
		switch s := segs[i]; {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case s.index == mapValue:
			b.WriteString("." + s.key)
		case s.field.json == "": // an embedded struct: JSON lifts its fields
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.field.json)
		}
	}
	return b.String()
}

// formName is the query parameter's name: that of the innermost field, with
// the index of an item.
func (p *pathSeg) formName() string {
	suffix := ""
	s := p
	for ; s != nil && s.index != -1; s = s.parent {
		if s.index == mapValue {
			suffix = "." + s.key + suffix
			continue
		}
		suffix = "[" + strconv.Itoa(s.index) + "]" + suffix
	}
	if s == nil {
		return suffix
	}
	return s.field.form + suffix
}

func checkStruct(v reflect.Value, parent *pathSeg) *ruleError {
	sr := rulesFor(v.Type())
	for i := range sr.fields {
		f := &sr.fields[i]
		if err := checkField(v.Field(f.index), f.rules, &pathSeg{parent: parent, field: f, index: -1}); err != nil {
			return err
		}
	}
	return nil
}

// checkField follows the validator's traverseField: pointers are followed, a
// nil one breaks its first rule unless that is omitempty, the rules run in
// order, dive applies the rest to each item, and a struct (not a time) is
// checked field by field after its own rules.
func checkField(v reflect.Value, rules []rule, at *pathSeg) *ruleError {
	isPtr := false
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			break
		}
		isPtr = true
		v = v.Elem()
	}
	kind := v.Kind()
	nested := false
	switch kind {
	case reflect.Pointer, reflect.Interface, reflect.Invalid:
		if len(rules) == 0 || rules[0].tag == "omitempty" {
			return nil
		}
		return broken(rules[0], kind, at)
	case reflect.Struct:
		nested = !v.Type().ConvertibleTo(timeType)
		// The validator skips required on a struct that is not a pointer.
		if nested && len(rules) > 0 && rules[0].tag == "required" {
			rules = rules[1:]
		}
	}
	for i, r := range rules {
		switch r.tag {
		case "omitempty":
			if !hasValue(v, isPtr) {
				return nil
			}
		case "dive":
			if kind == reflect.Map {
				return checkMapValues(v, rules[i+1:], at)
			}
			for j := 0; j < v.Len(); j++ {
				if err := checkField(v.Index(j), rules[i+1:], &pathSeg{parent: at, index: j}); err != nil {
					return err
				}
			}
			return nil
		default:
			if !r.holds(v, isPtr) {
				return broken(r, kind, at)
			}
		}
	}
	if nested {
		return checkStruct(v, at)
	}
	return nil
}

// checkMapValues applies rules to each value of a map with string keys, in
// key order, so that the first broken one is always the same.
func checkMapValues(v reflect.Value, rules []rule, at *pathSeg) *ruleError {
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		if err := checkField(v.MapIndex(k), rules, &pathSeg{parent: at, index: mapValue, key: k.String()}); err != nil {
			return err
		}
	}
	return nil
}

func broken(r rule, kind reflect.Kind, at *pathSeg) *ruleError {
	return &ruleError{path: at.jsonPath(), form: at.formName(), text: ruleText(r.tag, r.param, kind)}
}

// hasValue is what required asks and omitempty skips on: a non-nil slice,
// map or pointer, a value reached through a pointer, or a non-zero value.
func hasValue(v reflect.Value, isPtr bool) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
		return !v.IsNil()
	}
	if isPtr {
		return true
	}
	return v.IsValid() && !v.IsZero()
}

// holds reports whether v keeps the rule.
func (r rule) holds(v reflect.Value, isPtr bool) bool {
	switch r.tag {
	case "required":
		return hasValue(v, isPtr)
	case "oneof":
		var s string
		switch v.Kind() {
		case reflect.String:
			s = v.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s = strconv.FormatInt(v.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			s = strconv.FormatUint(v.Uint(), 10)
		default:
			panic(fmt.Sprintf("binding: oneof on a %s", v.Type()))
		}
		for _, x := range r.vals {
			if x == s {
				return true
			}
		}
		return false
	}
	// min, max, gt, gte, lte: sizes for strings, slices and maps; values
	// for numbers.
	var c int // -1, 0, 1: v against the parameter
	k := v.Kind()
	if !r.isInt && k != reflect.Float32 && k != reflect.Float64 {
		panic(fmt.Sprintf("binding: %s=%s on a %s", r.tag, r.param, v.Type()))
	}
	switch k {
	case reflect.String:
		c = cmpInt(int64(utf8.RuneCountInString(v.String())), r.i)
	case reflect.Slice, reflect.Map, reflect.Array:
		c = cmpInt(int64(v.Len()), r.i)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c = cmpInt(v.Int(), r.i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if r.i < 0 {
			panic(fmt.Sprintf("binding: %s=%s on a %s", r.tag, r.param, v.Type()))
		}
		switch u, p := v.Uint(), uint64(r.i); {
		case u < p:
			c = -1
		case u > p:
			c = 1
		}
	case reflect.Float32, reflect.Float64:
		// Compared directly rather than through c, so that NaN keeps
		// no rule, as with the validator.
		switch f := v.Float(); r.tag {
		case "min", "gte":
			return f >= r.f
		case "max", "lte":
			return f <= r.f
		case "gt":
			return f > r.f
		}
	default:
		panic(fmt.Sprintf("binding: %s on a %s", r.tag, v.Type()))
	}
	switch r.tag {
	case "min", "gte":
		return c >= 0
	case "max", "lte":
		return c <= 0
	case "gt":
		return c > 0
	}
	panic("binding: unknown rule " + r.tag)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ruleText is the broken rule in words; kind is that of the value checked
// (after pointers), so a length reads as characters or items.
func ruleText(tag, p string, kind reflect.Kind) string {
	switch tag {
	case "required":
		return "is required"
	case "min", "max":
		bound := "at least"
		if tag == "max" {
			bound = "at most"
		}
		switch kind {
		case reflect.String:
			return fmt.Sprintf("must be %s %s characters", bound, p)
		case reflect.Slice: // not arrays or maps, as before
			return fmt.Sprintf("must have %s %s items", bound, p)
		}
		return "must be " + bound + " " + p
	case "gte":
		return "must be at least " + p
	case "lte":
		return "must be at most " + p
	case "gt":
		return "must be greater than " + p
	case "oneof":
		return "must be one of: " + strings.Join(strings.Fields(p), ", ")
	case "dive":
		return "has an invalid item"
	}
	return fmt.Sprintf("breaks the rule %q", tag)
}

// rulesFor compiles t's fields once.
func rulesFor(t reflect.Type) *structRules {
	if sr, ok := rulesCache.Load(t); ok {
		return sr.(*structRules)
	}
	sr := &structRules{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.Anonymous && !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("binding")
		if tag == "-" {
			continue
		}
		rules, err := parseRules(tag)
		if err != nil {
			panic(fmt.Sprintf("binding: %s.%s: %v", t, f.Name, err))
		}
		jn, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if jn == "" && !f.Anonymous {
			jn = f.Name
		}
		form, _, _ := strings.Cut(f.Tag.Get("form"), ",")
		if form == "" {
			form = f.Name
		}
		sr.fields = append(sr.fields, ruleField{index: i, json: jn, form: form, rules: rules})
	}
	actual, _ := rulesCache.LoadOrStore(t, sr)
	return actual.(*structRules)
}

// parseRules reads one `binding` tag; an unknown rule or a parameter that
// is not a number where one is needed is an error.
func parseRules(tag string) ([]rule, error) {
	if tag == "" {
		return nil, nil
	}
	var out []rule
	for _, part := range strings.Split(tag, ",") {
		name, param, hasParam := strings.Cut(part, "=")
		r := rule{tag: name, param: param}
		switch name {
		case "required", "omitempty", "dive":
			if hasParam {
				return nil, fmt.Errorf("%s takes no parameter", name)
			}
		case "min", "max", "gt", "gte", "lte":
			// A parameter with a fraction only suits floats.
			i, err := strconv.ParseInt(param, 0, 64)
			r.i, r.f, r.isInt = i, float64(i), err == nil
			if !r.isInt {
				if r.f, err = strconv.ParseFloat(param, 64); err != nil {
					return nil, fmt.Errorf("%s=%q: not a number", name, param)
				}
			}
		case "oneof":
			r.vals = strings.Fields(param)
			if len(r.vals) == 0 {
				return nil, fmt.Errorf("oneof without values")
			}
		default:
			return nil, fmt.Errorf("unknown rule %q", part)
		}
		out = append(out, r)
	}
	return out, nil
}

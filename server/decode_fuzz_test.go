package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// decodeProbe is a request body with one field of each shape handlers use.
type decodeProbe struct {
	Name    string        `json:"name" binding:"required,max=10"`
	Count   *int64        `json:"count" binding:"omitempty,gte=1"`
	Tags    []string      `json:"tags" binding:"omitempty,max=3,dive,min=2"`
	Nested  *decodeNested `json:"nested"`
	Enabled bool          `json:"enabled"`
}

type decodeNested struct {
	Label string `json:"label" binding:"omitempty,oneof=a b"`
	Score int    `json:"score"`
}

// decodeLimit stands in for the server's body limit in these tests.
const decodeLimit = 512

// limited reads body the way the server does: through http.MaxBytesReader.
func limited(body []byte) io.Reader {
	return http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(body)), decodeLimit)
}

func FuzzDecodeBody(f *testing.F) {
	seeds := []string{
		`{"name":"ann","count":3,"tags":["ab","cd"],"nested":{"label":"a","score":2},"enabled":true}`,
		`{"name":"ann"}`,
		`{}`,
		``,
		`   `,
		`null`,
		`{`,
		`{"name":`,
		`{"name":"ann"} {"name":"bob"}`,
		`{"name":"ann"} trailing`,
		`{"name":"ann"}]`,
		`{"name":"ann"}` + "\n\t ",
		`{"name":1}`,
		`{"count":"3"}`,
		`{"count":1e400}`,
		`{"count":-0.5}`,
		`{"tags":"ab"}`,
		`{"tags":[1,2]}`,
		`{"nested":[]}`,
		`{"nested":{"score":"x"}}`,
		`{"nested":{"unknown":1}}`,
		`{"enabled":"yes"}`,
		`{"bogus":true}`,
		`{"a\"b":1}`,
		`[]`,
		`"string"`,
		`42`,
		`{"name":"\ud800"}`,
		"{\"name\":\"\xff\"}",
		`{"name":"ann","name":"bob"}`,
		strings.Repeat(`[`, 20000),
		`{"name":"` + strings.Repeat("x", decodeLimit) + `"}`,
		`{"name":"ann"}` + strings.Repeat(" ", decodeLimit),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	allowed := map[store.Kind]bool{store.KindMalformed: true, store.KindInvalid: true, store.KindTooLarge: true}

	f.Fuzz(func(t *testing.T, data []byte) {
		var dst decodeProbe
		err := decodeBody(limited(data), &dst)
		if err == nil {
			if len(data) > decodeLimit {
				t.Fatalf("decodeBody accepted %d bytes over a %d-byte limit", len(data), decodeLimit)
			}
			if !json.Valid(data) {
				t.Fatalf("decodeBody accepted input that is not a single JSON value: %q", data)
			}
			err = validate(&dst)
			if err == nil {
				return
			}
		}
		var se *store.Error
		if !errors.As(err, &se) {
			t.Fatalf("error %T %v is not a *store.Error", err, err)
		}
		if !allowed[se.Kind] {
			t.Fatalf("error %q has kind %d; want BadRequest, Invalid or TooLarge", se.Message, se.Kind)
		}
		if se.Message == "" {
			t.Fatal("error with an empty message")
		}
	})
}

func TestDecodeBody(t *testing.T) {
	tests := []struct {
		name string
		body string
		kind store.Kind // KindInternal: no error
		msg  []string   // the message contains each
	}{
		{"OK", `{"name":"ann","count":3,"tags":["ab"],"nested":{"label":"b","score":-1},"enabled":true}`, store.KindInternal, nil},
		{"TrailingWhitespaceOK", "{\"name\":\"ann\"}\r\n\t ", store.KindInternal, nil},
		{"UnknownFieldInvalid", `{"name":"ann","colour":"red"}`, store.KindInvalid, []string{"colour", "not a known field"}},
		{"UnknownNestedFieldInvalid", `{"nested":{"weight":1}}`, store.KindInvalid, []string{"weight"}},
		{"WrongTypeStringInvalid", `{"name":5}`, store.KindInvalid, []string{"name: must be a string"}},
		{"WrongTypePointerIntInvalid", `{"count":"3"}`, store.KindInvalid, []string{"count: must be an integer"}},
		{"FractionInvalid", `{"count":1.5}`, store.KindInvalid, []string{"count: must be an integer"}},
		{"OverflowInvalid", `{"count":1e400}`, store.KindInvalid, []string{"count: must be an integer"}},
		{"WrongTypeArrayInvalid", `{"tags":"ab"}`, store.KindInvalid, []string{"tags: must be an array"}},
		{"WrongTypeArrayItemInvalid", `{"tags":["ab",7]}`, store.KindInvalid, []string{"tags", "a string"}},
		{"WrongTypeNestedInvalid", `{"nested":"x"}`, store.KindInvalid, []string{"nested: must be an object"}},
		{"WrongTypeInNestedInvalid", `{"nested":{"score":"high"}}`, store.KindInvalid, []string{"nested.score: must be an integer"}},
		{"WrongTypeBoolInvalid", `{"enabled":"yes"}`, store.KindInvalid, []string{"enabled: must be true or false"}},
		{"TrailingObjectBadRequest", `{"name":"ann"}{"name":"bob"}`, store.KindMalformed, []string{"single JSON object"}},
		{"TrailingGarbageBadRequest", `{"name":"ann"} and more`, store.KindMalformed, []string{"single JSON object"}},
		{"TrailingBracketBadRequest", `{"name":"ann"}]`, store.KindMalformed, []string{"single JSON object"}},
		{"EmptyBadRequest", ``, store.KindMalformed, []string{"empty"}},
		{"WhitespaceOnlyBadRequest", " \n ", store.KindMalformed, []string{"empty"}},
		{"TruncatedBadRequest", `{"name":"an`, store.KindMalformed, []string{"ends too early"}},
		{"SyntaxBadRequest", `{name:"ann"}`, store.KindMalformed, []string{"not valid JSON"}},
		{"ArrayBadRequest", `[{"name":"ann"}]`, store.KindMalformed, []string{"must be a JSON object"}},
		{"StringBadRequest", `"ann"`, store.KindMalformed, []string{"must be a JSON object"}},
		{"TooLarge", `{"name":"` + strings.Repeat("x", decodeLimit) + `"}`, store.KindTooLarge, []string{"larger than 512 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst decodeProbe
			err := decodeBody(limited([]byte(tt.body)), &dst)
			if tt.kind == store.KindInternal {
				if err != nil {
					t.Fatalf("decodeBody: %v", err)
				}
				return
			}
			var se *store.Error
			if !errors.As(err, &se) {
				t.Fatalf("decodeBody = %v, want a *store.Error", err)
			}
			if se.Kind != tt.kind {
				t.Fatalf("kind %d (%q), want %d", se.Kind, se.Message, tt.kind)
			}
			for _, m := range tt.msg {
				if !strings.Contains(se.Message, m) {
					t.Errorf("message %q does not contain %q", se.Message, m)
				}
			}
		})
	}

	t.Run("OKFillsFields", func(t *testing.T) {
		var dst decodeProbe
		body := `{"name":"ann","count":3,"tags":["ab","cd"],"nested":{"label":"a","score":2},"enabled":true}`
		if err := decodeBody(strings.NewReader(body), &dst); err != nil {
			t.Fatal(err)
		}
		if dst.Name != "ann" || dst.Count == nil || *dst.Count != 3 || len(dst.Tags) != 2 || dst.Nested == nil ||
			dst.Nested.Label != "a" || dst.Nested.Score != 2 || !dst.Enabled {
			t.Errorf("decoded %+v", dst)
		}
	})

	t.Run("TooLargeAfterAValidObject", func(t *testing.T) {
		var dst decodeProbe
		err := decodeBody(limited([]byte(`{"name":"ann"}`+strings.Repeat(" ", 2*decodeLimit))), &dst)
		if err == nil {
			t.Fatal("decodeBody accepted a body over the limit")
		}
		if k := store.KindOf(err); k != store.KindTooLarge {
			t.Fatalf("kind %d (%q) for a body over the limit of %d bytes whose start is a whole object", k, store.Message(err), decodeLimit)
		}
	})
}

// TestDecodeBodyThenValidate runs bodies through decodeBody and validate,
// as decodeJSON does, and checks the 422 detail names the JSON field path.
func TestDecodeBodyThenValidate(t *testing.T) {
	tests := []struct {
		name string
		body string
		msg  string // "": valid
	}{
		{"Valid", `{"name":"ann"}`, ""},
		{"ValidFull", `{"name":"ann","count":1,"tags":["ab","cd","ef"],"nested":{"label":"b"}}`, ""},
		{"Required", `{"enabled":true}`, "name: is required"},
		{"MaxString", `{"name":"abcdefghijk"}`, "name: must be at most 10 characters"},
		{"Gte", `{"name":"ann","count":0}`, "count: must be at least 1"},
		{"MaxItems", `{"name":"ann","tags":["ab","cd","ef","gh"]}`, "tags: must have at most 3 items"},
		{"DiveItem", `{"name":"ann","tags":["ab","c"]}`, "tags[1]: must be at least 2 characters"},
		{"NestedOneOf", `{"name":"ann","nested":{"label":"c"}}`, "nested.label: must be one of: a, b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p decodeProbe
			if err := decodeBody(strings.NewReader(tt.body), &p); err != nil {
				t.Fatalf("decodeBody: %v", err)
			}
			err := validate(&p)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if store.KindOf(err) != store.KindInvalid {
				t.Fatalf("validate = %v, want KindInvalid", err)
			}
			if got := store.Message(err); got != tt.msg {
				t.Errorf("message %q, want %q", got, tt.msg)
			}
		})
	}
}

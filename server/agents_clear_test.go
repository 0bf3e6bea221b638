package server_test

import (
	"fmt"
	"testing"
)

// PUT /api/agents/{id} keeps temperature and max_tokens on a null, and
// sets them back to null (the model's default) when clear names them; a
// field both given and cleared, or an unknown field to clear, is refused.
func TestAgentClearParameters(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	a := agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Writer", "kind": "writer", "temperature": 0.4, "max_tokens": 800})
	path := fmt.Sprintf("/api/agents/%d", agID(a))

	r := e.do(t, "PUT", path, f.edATok, map[string]any{"temperature": nil, "max_tokens": nil, "name": "Writer 2"})
	if r.Code != 200 || agNum(r.Data()["temperature"]) != 0.4 || agNum(r.Data()["max_tokens"]) != 800 {
		t.Fatalf("a null keeps the values: %d %s", r.Code, r.Body)
	}
	r = e.do(t, "PUT", path, f.edATok, map[string]any{"clear": []string{"temperature"}})
	if r.Code != 200 || r.Data()["temperature"] != nil || agNum(r.Data()["max_tokens"]) != 800 {
		t.Fatalf("clear temperature: %d %s", r.Code, r.Body)
	}
	r = e.do(t, "PUT", path, f.edATok, map[string]any{"clear": []string{"max_tokens"}, "temperature": 0})
	if r.Code != 200 || r.Data()["max_tokens"] != nil || r.Data()["temperature"] == nil || agNum(r.Data()["temperature"]) != 0 {
		t.Fatalf("clear max_tokens, temperature 0: %d %s", r.Code, r.Body)
	}
	// Stored: read again.
	got := e.do(t, "GET", path, f.edATok, nil).Data()
	if got["max_tokens"] != nil || agNum(got["temperature"]) != 0 || got["name"] != "Writer 2" {
		t.Fatalf("stored %v", got)
	}
	for _, body := range []map[string]any{
		{"clear": []string{"temperature"}, "temperature": 1},
		{"clear": []string{"max_tokens"}, "max_tokens": 100},
		{"clear": []string{"model"}},
	} {
		if r := e.do(t, "PUT", path, f.edATok, body); r.Code != 422 {
			t.Fatalf("%v: %d %s", body, r.Code, r.Body)
		}
	}
	if got := e.do(t, "GET", path, f.edATok, nil).Data(); agNum(got["temperature"]) != 0 || got["max_tokens"] != nil {
		t.Fatalf("a refused change changed %v", got)
	}
}

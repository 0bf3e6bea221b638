package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store/storetest"
)

// A panic in a handler is a 500 with the standard body and no internals.
func TestPanicIsA500(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	dir := t.TempDir()
	storetest.WriteDB(t, filepath.Join(dir, DBFile))
	cfg := Config{DataDir: dir, SecretKey: strings.Repeat("k", 40), Hasher: &auth.Hasher{Time: 1, MemoryKiB: 64, Threads: 1}}
	a, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Server.handle(Route{Method: "GET", Path: "/api/test-panic", Access: public}, func(*gin.Context) { panic("secret internals") })
	w := httptest.NewRecorder()
	a.Server.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/api/test-panic", nil))
	body, _ := io.ReadAll(w.Body)
	var m map[string]string
	if w.Code != 500 || json.Unmarshal(body, &m) != nil || len(m) != 1 || m["detail"] == "" || strings.Contains(string(body), "secret") {
		t.Fatalf("got %d %s", w.Code, body)
	}
	if !strings.Contains(logs.String(), "secret internals") {
		t.Fatal("the panic was not logged")
	}
}

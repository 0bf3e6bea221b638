package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
	"github.com/copydesk/copydesk/web"
)

// testSecret stands in for secret.key in tests.
const testSecret = "test-secret-key-0123456789abcdef0123456789"

// cheapHasher keeps tests fast; the real cost is measured by the benchmarks.
var cheapHasher = auth.Hasher{Time: 1, MemoryKiB: 64, Threads: 1}

// clock is the settable time source shared by the store and the services.
type clock = storetest.Clock

// envT0 is where an env's clock starts.
var envT0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// env is a copydesk app on a temporary data dir with the real router.
type env struct {
	t     *testing.T
	app   *server.App
	clock *clock
	h     http.Handler
}

type envOption func(*server.Config)

// newEnv opens an app on a fresh data directory whose database is already
// migrated (a copy of storetest's template); with COPYDESK_TEST_DATABASE
// set, on a fresh PostgreSQL database of the test's own instead.
func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	dir := t.TempDir()
	if storetest.Postgres() {
		pgDirs.Store(dir, storetest.NewPostgres(t))
	} else {
		storetest.WriteDB(t, filepath.Join(dir, server.DBFile))
	}
	return openEnv(t, dir, opts...)
}

// pgDirs are the PostgreSQL databases of the data directories newEnv made
// (COPYDESK_TEST_DATABASE), so that an app opened again on one (a restart)
// finds its database.
var pgDirs sync.Map // data directory -> database address

// openEnv opens an app on the data directory dir, as it is.
func openEnv(t testing.TB, dir string, opts ...envOption) *env {
	t.Helper()
	if url, ok := pgDirs.Load(dir); ok {
		opts = append([]envOption{func(c *server.Config) { c.Database = url.(string) }}, opts...)
	}
	// A usage event that cannot be stored fails the test: the cost would
	// leave analytics and budgets unseen; so does an event a stream sends
	// that the document does not name. Checked when the test ends
	// (registered first, so it runs after the app is closed): jobs may
	// record after the test's own goroutine is done.
	var reportMu sync.Mutex
	var reported []error
	t.Cleanup(func() {
		reportMu.Lock()
		defer reportMu.Unlock()
		for _, err := range reported {
			t.Error(err)
		}
	})
	// The local servers tests run stand in for public sites, web sources'
	// included (TestWebSourceFetchRefused checks the default).
	cfg := server.Config{DataDir: dir, SecretKey: testSecret, Hasher: &cheapHasher, Version: "test", AllowWebSourcesPrivate: true,
		AstroRoots: []string{os.TempDir()},
		// Every event a stream sends is one its route documents.
		OnUndeclaredEvent: func(route, event string) {
			reportMu.Lock()
			defer reportMu.Unlock()
			reported = append(reported, fmt.Errorf("%s sent event %q, which its Route.Events (server/events.go) do not name", route, event))
		},
		OnUsageRecordError: func(err error) {
			reportMu.Lock()
			defer reportMu.Unlock()
			reported = append(reported, fmt.Errorf("usage not recorded: %w", err))
		}}
	for _, o := range opts {
		o(&cfg)
	}
	app, err := server.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	c := storetest.NewClock(envT0)
	app.DB.Now = c.Now
	tt, _ := t.(*testing.T)
	return &env{t: tt, app: app, clock: c, h: app.Server.Handler()}
}

// user creates an account with a role and returns it with a token.
func (e *env) user(t testing.TB, name string, role store.Role) (*store.User, string) {
	t.Helper()
	u, err := e.app.Auth.CreateUser(context.Background(), auth.NewAccount{
		Email: name + "@example.com", Username: name, Password: "password-" + name, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return u, e.login(t, name+"@example.com", "password-"+name)
}

func (e *env) login(t testing.TB, email, password string) string {
	t.Helper()
	r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": email, "password": password})
	if r.Code != 200 {
		t.Fatalf("login %s: %d %s", email, r.Code, r.Body)
	}
	return r.JSON()["access_token"].(string)
}

// resp is a recorded response.
type resp struct {
	Code   int
	Header http.Header
	Body   string
}

func (r resp) JSON() map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		panic("response is not a JSON object: " + r.Body)
	}
	return m
}

// Data is the "data" object of an enveloped response.
func (r resp) Data() map[string]any {
	d, _ := r.JSON()["data"].(map[string]any)
	return d
}

func (r resp) Detail() string {
	d, _ := r.JSON()["detail"].(string)
	return d
}

// do sends a request through the real router; body may be a string (sent
// as is), nil, or anything else (sent as JSON). Every response is checked
// against the OpenAPI document.
func (e *env) do(t testing.TB, method, path, token string, body any, headers ...string) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.send(t, req)
}

func (e *env) send(t testing.TB, req *http.Request) resp {
	t.Helper()
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	r := resp{Code: w.Code, Header: w.Header(), Body: w.Body.String()}
	checkAgainstDocument(t, req, r)
	return r
}

// sendStream sends a request to an event stream and ends the stream as soon
// as its status is written: a stream's status is checked without waiting for
// a deadline, which a loaded machine could miss. A stream that writes
// nothing for 20 s fails the test rather than hanging it.
func (e *env) sendStream(t testing.TB, req *http.Request) resp {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 20*time.Second)
	defer cancel()
	req = req.WithContext(ctx)
	w := &statusSignal{ResponseRecorder: httptest.NewRecorder(), written: cancel}
	e.h.ServeHTTP(w, req)
	if !w.wroteHeader {
		t.Fatalf("%s %s: no status within 20 s", req.Method, req.URL.Path)
	}
	r := resp{Code: w.Code, Header: w.Header(), Body: w.Body.String()}
	checkAgainstDocument(t, req, r)
	return r
}

// statusSignal calls written once the status is written.
type statusSignal struct {
	*httptest.ResponseRecorder
	written     func()
	wroteHeader bool
}

func (w *statusSignal) WriteHeader(code int) {
	w.ResponseRecorder.WriteHeader(code)
	w.wroteHeader = true
	w.written()
}

func (w *statusSignal) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseRecorder.Write(b)
}

func (w *statusSignal) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// upload sends a multipart file.
func (e *env) upload(t testing.TB, path, token, field, filename string, content []byte) resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(content)
	mw.Close()
	req := httptest.NewRequest("POST", path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(t, req)
}

// The document is parsed once per test binary; tests only read it.
var (
	docOnce   sync.Once
	docSpec   *openapi3.T
	docRouter routers.Router
	docErr    error
)

func loadDocument() (routers.Router, error) {
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		docSpec, docErr = loader.LoadFromData(web.OpenAPI)
		if docErr != nil {
			return
		}
		if docErr = docSpec.Validate(loader.Context); docErr != nil {
			return
		}
		docRouter, docErr = gorillamux.NewRouter(docSpec)
	})
	return docRouter, docErr
}

// checkAgainstDocument validates a response against web/openapi.json: its
// status must be documented for the route and its body must match the
// schema. Paths outside the API (docs pages) are skipped.
func checkAgainstDocument(t testing.TB, req *http.Request, r resp) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return
	}
	router, err := loadDocument()
	if err != nil {
		t.Fatalf("openapi document: %v", err)
	}
	// gorillamux needs an absolute URL to match against the server list.
	u := *req.URL
	u.Scheme, u.Host = "http", "localhost"
	r2 := req.Clone(req.Context())
	r2.URL = &u
	head := req.Method == http.MethodHead
	if head {
		// HEAD answers with a status GET documents, and no body.
		if r.Body != "" {
			t.Errorf("HEAD %s → %d sent a body: %s", req.URL.Path, r.Code, truncate(r.Body, 200))
		}
		r2.Method = http.MethodGet
	}
	route, params, err := router.FindRoute(r2)
	if err != nil {
		if r.Code == 404 || r.Code == 405 {
			return // unknown route or method: nothing to check
		}
		t.Fatalf("%s %s: not in the OpenAPI document (%v)", req.Method, req.URL.Path, err)
	}
	if head {
		if route.Operation.Responses.Status(r.Code) == nil {
			t.Errorf("HEAD %s → %d: GET documents no such status", req.URL.Path, r.Code)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: r.Code,
		Header: r.Header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	in.SetBodyBytes([]byte(r.Body))
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s → %d does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, r.Code, err, truncate(r.Body, 500))
	}
	// Every error, whatever the route, has {"detail": "..."}, and beside it
	// only a 422's non-empty "fields".
	if r.Code >= 400 {
		var m map[string]any
		err := json.Unmarshal([]byte(r.Body), &m)
		if fields, ok := m["fields"]; ok {
			if list, _ := fields.([]any); r.Code != 422 || len(list) == 0 {
				t.Errorf("%s %s → %d: fields beside detail outside a 422, or empty: %s", req.Method, req.URL.Path, r.Code, r.Body)
			}
			delete(m, "fields")
		}
		if err != nil || len(m) != 1 || m["detail"] == nil || m["detail"] == "" {
			t.Errorf("%s %s → %d: error body is not {\"detail\"}: %s", req.Method, req.URL.Path, r.Code, r.Body)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// startJobs runs the app's job runner until stop is called (or the test
// ends); stop returns once it has stopped, as a shutdown would.
func startJobs(t *testing.T, e *env) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.app.Jobs.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("job runner: %v", err)
			}
		case <-time.After(agBound):
			t.Errorf("the job runner did not stop within %s", agBound)
		}
	}
	t.Cleanup(stop)
	return stop
}

// serveApp listens and runs the whole app as serve does (App.Run: the
// start-up's orphan handling, the job runner, the HTTP server) until stop
// is called (or the test ends). stop returns once Run has, and reports
// whether it did so without an error within agBound; if not, the test
// fails, saying what.
func serveApp(t *testing.T, e *env) (stop func(what string) bool) {
	t.Helper()
	if err := e.app.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.app.Run(ctx) }()
	var once sync.Once
	ok := false
	stop = func(what string) bool {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: Run: %v", what, err)
					return
				}
				ok = true
			case <-time.After(agBound):
				t.Errorf("%s: Run did not return within %s", what, agBound)
			}
		})
		return ok
	}
	t.Cleanup(func() { stop("at the end of the test") })
	return stop
}

// restoresOnSQLite skips a test that restores through the API on
// PostgreSQL, where that restore answers 409 (TestBackupAPI checks it) and
// a restore is done offline, by `copydesk restore --database`
// (TestInstancesRestoreOffline). Backups themselves run on both engines.
func restoresOnSQLite(t testing.TB) {
	t.Helper()
	if storetest.Postgres() {
		t.Skip("restores through the API are SQLite's: on PostgreSQL they answer 409 and restore offline (docs/scaling.md)")
	}
}

package clustertest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/internal/clustertest"
	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
)

// modelStandIn is a local stand-in for an OpenAI-style provider: each chat
// completion is announced on arrived and then waits until release is
// closed before it answers with one article.
type modelStandIn struct {
	*httptest.Server
	arrived chan struct{}
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

const standInKey = "sk-test-good-key-0001"

const standInArticle = "TITLE: Sourdough for beginners\nDESCRIPTION: How to bake your first loaf.\n---\n## Introduction\n\nFlour, water, salt and time."

func newModelStandIn(t *testing.T) *modelStandIn {
	m := &modelStandIn{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+standInKey {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		switch {
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/models"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"openai"}]}`)
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions"):
			var req map[string]any
			_ = json.NewDecoder(r.Body).Decode(&req)
			m.mu.Lock()
			m.calls++
			m.mu.Unlock()
			m.arrived <- struct{}{}
			select {
			case <-m.release:
			case <-r.Context().Done(): // the instance that asked is gone
				return
			}
			model, _ := req["model"].(string)
			usage := `{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}`
			if stream, _ := req["stream"].(bool); stream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", model, standInArticle)
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", model)
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", model, usage)
				fmt.Fprint(w, "data: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":%s}`,
				model, standInArticle, usage)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(m.Close)
	t.Cleanup(m.Release)
	return m
}

// Release lets every held and later call answer.
func (m *modelStandIn) Release() {
	select {
	case <-m.release:
	default:
		close(m.release)
	}
}

func (m *modelStandIn) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// client calls one instance's API with a bearer token.
type client struct {
	t     *testing.T
	base  string
	token string
}

// do sends body as JSON and returns the status and the decoded answer;
// it fails the test unless the status is want.
func (c client) do(method, path string, body any, want int) map[string]any {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d %v, want %d", method, path, resp.StatusCode, out, want)
	}
	if d, ok := out["data"].(map[string]any); ok {
		return d
	}
	return out
}

func id(m map[string]any) int64 {
	v, ok := m["id"].(float64)
	if !ok {
		panic(fmt.Sprintf("no id in %v", m))
	}
	return int64(v)
}

// TestKill9DuringAutopilotRun: instance A is inside an autopilot run (the
// model stand-in holds its generation) when it is killed with kill -9;
// instance B takes the run's job over once A's lease expires, resumes it
// at its first unfinished step and finishes it, and the WordPress
// stand-in ends with exactly one post.
func TestKill9DuringAutopilotRun(t *testing.T) {
	const lease, poll = 2 * time.Second, 100 * time.Millisecond
	c := clustertest.New(t, clustertest.Options{Args: []string{"--lease", lease.String(), "--job-poll", poll.String()}})
	site := wptest.New()
	t.Cleanup(site.Close)
	model := newModelStandIn(t)

	// The first account, from the shell as an operator makes it.
	const email, password = "admin@example.com", "correct horse battery staple"
	cmd := exec.Command(clustertest.Binary(t), "users", "create", "--database", c.Database, "--data-dir", t.TempDir(),
		"--init", "--email", email, "--username", "admin", "--role", "super_admin", "--password-stdin")
	cmd.Env = append(os.Environ(), "COPYDESK_SECRET_KEY="+c.SecretKey)
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("users create: %v\n%s", err, out)
	}

	a := c.Start(t)
	api := client{t: t, base: a.URL}
	api.token = api.do("POST", "/api/auth/login", map[string]any{"email": email, "password": password}, 200)["access_token"].(string)

	// The installation, through A's API: a model credential as the AI
	// default, an environment publishing to the WordPress stand-in, an
	// agent, a keyword in an active campaign, the autopilot's config.
	cred := id(api.do("POST", "/api/configurations", map[string]any{"name": "Model", "provider": "openai", "base_url": model.URL + "/v1",
		"api_key": standInKey, "default_model": "gpt-4o-mini"}, 201))
	api.do("PUT", "/api/settings/ai-content", map[string]any{"credential_id": cred, "model": "gpt-4o-mini"}, 200)
	wp := id(api.do("POST", "/api/configurations", map[string]any{"name": "Blog", "provider": "wordpress", "base_url": site.URL,
		"username": site.User, "application_password": site.Password}, 201))
	env := id(api.do("POST", "/api/environments", map[string]any{"name": "Bakery"}, 201))
	api.do("PUT", fmt.Sprintf("/api/environments/%d/configuration", env), map[string]any{"wordpress": map[string]any{"base_url": site.URL, "credential_id": wp}}, 200)
	agent := id(api.do("POST", "/api/agents", map[string]any{"environment_id": env, "name": "W", "kind": "writer", "is_active": true}, 201))
	var archetype int64
	arch := api.do("GET", "/api/cie/archetypes?per_page=200", nil, 200)
	items, _ := arch["items"].([]any)
	for _, it := range items {
		if m := it.(map[string]any); m["builtin"] == "how-to" {
			archetype = id(m)
		}
	}
	if archetype == 0 {
		t.Fatalf("no built-in how-to archetype in %v", arch)
	}
	kw := id(api.do("POST", "/api/seo/keywords", map[string]any{"environment_id": env, "keyword": "sourdough starter"}, 201))
	api.do("POST", "/api/seo/campaigns", map[string]any{"environment_id": env, "name": "Bread", "target": "wordpress", "post_status": "publish",
		"archetype_id": archetype, "agent_id": agent, "keyword_ids": []int64{kw}, "status": "active", "cadence": 10}, 201)
	api.do("PUT", "/api/autopilot/config", map[string]any{"environment_id": env, "variables": map[string]any{"audience": "home bakers"},
		"max_posts_per_day": 5}, 200)

	// A run, and A inside it: the model stand-in holds A's generation.
	run := id(api.do("POST", "/api/autopilot/run-now", map[string]any{"environment_id": env}, 202))
	select {
	case <-model.arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model stand-in got no call within 30s; A's log:\n%s", a.Log())
	}
	b := c.Start(t) // started now, so it cannot be the one inside the run
	a.Kill()
	killed := time.Now()
	model.Release()

	// B finishes the run: within the lease, one poll and a margin for the
	// run's own steps.
	bAPI := client{t: t, base: b.URL, token: api.token}
	limit := lease + poll + 10*time.Second
	var got map[string]any
	for {
		got = bAPI.do("GET", fmt.Sprintf("/api/autopilot/runs/%d", run), nil, 200)
		if s := got["status"]; s != "running" && s != "queued" && s != "pending" || time.Since(killed) > limit {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(killed)
	if got["status"] != "succeeded" {
		t.Fatalf("the run is %v %v after A was killed, want succeeded: %v", got["status"], took, got)
	}
	if n := site.PostCount(); n != 1 {
		t.Fatalf("the WordPress stand-in has %d posts, want exactly 1 (%d creates asked)", n, site.Requested("POST /wp/v2/posts"))
	}
	if n := site.Requested("POST /wp/v2/posts"); n != 1 {
		t.Fatalf("%d post creates reached the WordPress stand-in, want 1", n)
	}
	if n := model.Calls(); n != 2 {
		t.Fatalf("the model stand-in got %d calls, want 2 (A's, cut by the kill, and B's)", n)
	}
	post, _ := got["post"].(map[string]any)
	if post == nil || post["kind"] != "wordpress" {
		t.Fatalf("the run's post: %v", got["post"])
	}
	t.Logf("instance B finished the run %v after A was killed (lease %v, poll %v)", took.Round(10*time.Millisecond), lease, poll)
}

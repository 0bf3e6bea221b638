package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// cieLLM is a local server speaking OpenAI's chat completions wire format,
// plain and streamed (chunks, the usage chunk, [DONE]). answer gives the
// text of the n-th call (from 1) and whether to cut the stream off after
// half of it: then no usage chunk and no [DONE] are sent.
type cieLLM struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []map[string]any
}

func newCIELLM(t *testing.T, answer func(n int) (text string, cut bool)) *cieLLM {
	t.Helper()
	f := &cieLLM{}
	f.srv = agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("provider got a body that is not JSON: %v", err)
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		n := len(f.requests)
		f.mu.Unlock()
		text, cut := answer(n)
		if stream, _ := req["stream"].(bool); !stream {
			agCompletion(w, text)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(body string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",%s}\n\n", body)
			w.(http.Flusher).Flush()
		}
		chunk(`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`)
		pieces := strings.SplitAfter(text, " ")
		if cut {
			pieces = pieces[:len(pieces)/2]
		}
		for _, p := range pieces {
			b, _ := json.Marshal(p)
			chunk(`"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]`)
		}
		if cut {
			return // the connection ends mid-answer
		}
		chunk(`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`)
		chunk(`"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	return f
}

func (f *cieLLM) Requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

const goodArticle = "TITLE: Sourdough for beginners\nDESCRIPTION: How to bake your first loaf.\n---\n## Introduction\n\nFlour, water, salt and time."

// cieDetail is an error's detail, or the body of a success.
func cieDetail(r resp) string {
	if r.Code >= 400 {
		return r.Detail()
	}
	return r.Body
}

// cieBuiltin is the id of a built-in archetype.
func cieBuiltin(t *testing.T, e *env, tok, slug string) int64 {
	t.Helper()
	r := e.do(t, "GET", "/api/cie/archetypes?per_page=200", tok, nil)
	if r.Code != 200 {
		t.Fatalf("list archetypes: %d %s", r.Code, r.Body)
	}
	for _, it := range agItems(r.Data()) {
		if it["builtin"] == slug {
			return agID(it)
		}
	}
	t.Fatalf("no built-in %q", slug)
	return 0
}

func TestBuiltinArchetypes(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	r := f.e.do(t, "GET", "/api/cie/archetypes", f.viewATok, nil)
	if r.Code != 200 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	var slugs []string
	for _, it := range agItems(r.Data()) {
		if it["environment_id"] != nil || len(it["outline"].([]any)) == 0 || it["prompt_template"] == "" {
			t.Errorf("built-in %v", it)
		}
		slugs = append(slugs, it["builtin"].(string))
	}
	if got := strings.Join(slugs, ","); got != "how-to,listicle,comparison,review,pillar-page" {
		t.Fatalf("built-ins: %s", got)
	}
}

func TestArchetypePreview(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	mine := f.e.do(t, "POST", "/api/cie/archetypes", f.edATok, map[string]any{"environment_id": f.envA, "name": "Recipe",
		"outline":            []map[string]any{{"heading": "Ingredients", "guidance": "A list."}, {"heading": "Method"}},
		"prompt_template":    "Write a recipe for {{ dish }} for {{audience}} in {{language}}. {{notes}}",
		"optional_variables": []string{"notes", "season"}, "target_words": 600, "tone": "warm"})
	if mine.Code != 201 {
		t.Fatalf("create: %d %s", mine.Code, mine.Body)
	}
	id := agID(mine.Data())
	if got := fmt.Sprint(mine.Data()["variables"]); got != "[dish audience language notes]" {
		t.Fatalf("variables %s", got)
	}
	path := fmt.Sprintf("/api/cie/archetypes/%d/preview", id)
	cases := []struct {
		name   string
		vars   map[string]any
		code   int
		detail string
	}{
		{"Missing", map[string]any{"dish": "soup"}, 422, `variables: missing "audience"`},
		{"MissingSeveral", map[string]any{}, 422, `missing "dish", "audience"`},
		{"Unknown", map[string]any{"dish": "soup", "audience": "cooks", "colour": "red"}, 422, `variables: unknown "colour"`},
		{"BadTargetWords", map[string]any{"dish": "soup", "audience": "cooks", "target_words": "many"}, 422, "variables.target_words"},
		{"BadLanguage", map[string]any{"dish": "soup", "audience": "cooks", "language": "Klingon!"}, 422, "variables.language"},
		{"OptionalNotUsedIsAllowed", map[string]any{"dish": "soup", "audience": "cooks", "season": "winter"}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.e.do(t, "POST", path, f.edATok, map[string]any{"variables": c.vars})
			if r.Code != c.code || !strings.Contains(cieDetail(r), c.detail) {
				t.Fatalf("%d %s; want %d with %q", r.Code, r.Body, c.code, c.detail)
			}
		})
	}

	t.Run("Rendered", func(t *testing.T) {
		r := f.e.do(t, "POST", path, f.viewATok, map[string]any{"variables": map[string]any{"dish": "soup", "audience": "cooks", "target_words": "800"}})
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d := r.Data()
		// The optional variable left out is empty; language comes from
		// the settings' default.
		if d["user"] != "Write a recipe for soup for cooks in en." {
			t.Fatalf("user prompt %q", d["user"])
		}
		sys := d["system"].(string)
		for _, want := range []string{`language "en"`, "warm tone", "about 800 words", "1. Ingredients: A list.\n2. Method\n", "TITLE:", "DESCRIPTION:", "---"} {
			if !strings.Contains(sys, want) {
				t.Errorf("system prompt lacks %q:\n%s", want, sys)
			}
		}
	})

	t.Run("AsSent", func(t *testing.T) {
		// What generate sends is what preview showed.
		llm := newCIELLM(t, func(int) (string, bool) { return goodArticle, false })
		agConfigure(t, f.e, llm.srv.URL+"/v1")
		agRunJobs(t, f.e)
		vars := map[string]any{"dish": "soup", "audience": "cooks"}
		prev := f.e.do(t, "POST", path, f.edATok, map[string]any{"variables": vars, "environment_id": f.envA}).Data()
		run := f.e.do(t, "POST", fmt.Sprintf("/api/cie/archetypes/%d/generate", id), f.edATok, map[string]any{"variables": vars, "environment_id": f.envA})
		if run.Code != 202 {
			t.Fatalf("generate: %d %s", run.Code, run.Body)
		}
		done := cieWaitRun(t, f.e, f.edATok, agID(run.Data()))
		if done["status"] != "succeeded" {
			t.Fatalf("run %v", done)
		}
		msgs := llm.Requests()[0]["messages"].([]any)
		if msgs[0].(map[string]any)["content"] != prev["system"] || msgs[1].(map[string]any)["content"] != prev["user"] {
			t.Fatalf("sent %v\npreviewed %v", msgs, prev)
		}
	})
}

func TestArchetypeValidation(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	base := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"environment_id": f.envA, "name": "X", "prompt_template": "About {{keyword}}"}
		mod(m)
		return m
	}
	cases := []struct {
		name   string
		body   map[string]any
		detail string
	}{
		{"UnclosedPlaceholder", base(func(m map[string]any) { m["prompt_template"] = "About {{keyword" }), "is not a placeholder"},
		{"BadPlaceholderName", base(func(m map[string]any) { m["prompt_template"] = "About {{key word}}" }), "is not a placeholder"},
		{"StrayClose", base(func(m map[string]any) { m["prompt_template"] = "About }} x" }), "}} without"},
		{"BadOptionalName", base(func(m map[string]any) { m["optional_variables"] = []string{"no good"} }), "optional_variables"},
		{"EmptyHeading", base(func(m map[string]any) { m["outline"] = []map[string]any{{"heading": " "}} }), "outline[0].heading"},
		{"OtherEnvironment", base(func(m map[string]any) { m["environment_id"] = f.envB }), "environment_id: no environment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.e.do(t, "POST", "/api/cie/archetypes", f.edATok, c.body)
			if r.Code != 422 || !strings.Contains(cieDetail(r), c.detail) {
				t.Fatalf("%d %s; want 422 with %q", r.Code, r.Body, c.detail)
			}
		})
	}
}

// An editor is refused a global archetype the same way whether making or
// changing one: 403, the role may not.
func TestArchetypeGlobalByEditor(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	r := f.e.do(t, "POST", "/api/cie/archetypes", f.edATok, map[string]any{"name": "X", "prompt_template": "About {{keyword}}"})
	if r.Code != 403 || !strings.Contains(r.Detail(), "only admins make global archetypes") {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
}

// Ownership and tenancy: who sees, changes, copies and generates what.
func TestArchetypeOwnership(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	llm := newCIELLM(t, func(int) (string, bool) { return goodArticle, false })
	agConfigure(t, f.e, llm.srv.URL+"/v1")
	builtin := cieBuiltin(t, f.e, f.edATok, "how-to")
	create := func(tok string, env any) int64 {
		t.Helper()
		body := map[string]any{"name": "Mine", "prompt_template": "About {{keyword}}"}
		if env != nil {
			body["environment_id"] = env
		}
		r := f.e.do(t, "POST", "/api/cie/archetypes", tok, body)
		if r.Code != 201 {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		return agID(r.Data())
	}
	ofA := create(f.edATok, f.envA)
	ofB := create(f.edBTok, f.envB)
	global := create(f.adminTok, nil)
	arch := func(id int64) string { return fmt.Sprintf("/api/cie/archetypes/%d", id) }
	vars := map[string]any{"keyword": "sourdough", "audience": "beginners"}

	cases := []struct {
		name, method, path, tok string
		body                    any
		code                    int
		detail                  string
	}{
		{"OtherEnvironmentIsNotFound", "GET", arch(ofB), f.edATok, nil, 404, ""},
		{"ViewerSeesOwnEnvironment", "GET", arch(ofA), f.viewATok, nil, 200, ""},
		{"EditorChangesOwn", "PUT", arch(ofA), f.edATok, map[string]any{"tone": "dry"}, 200, ""},
		{"EditorCannotChangeOthers", "PUT", arch(ofB), f.edATok, map[string]any{"tone": "dry"}, 404, ""},
		{"EditorCannotChangeGlobal", "PUT", arch(global), f.edATok, map[string]any{"tone": "dry"}, 403, "only admins"},
		{"AdminChangesGlobal", "PUT", arch(global), f.adminTok, map[string]any{"tone": "dry"}, 200, ""},
		{"BuiltinIsReadOnly", "PUT", arch(builtin), f.adminTok, map[string]any{"tone": "dry"}, 409, "/copy"},
		{"BuiltinCannotBeDeleted", "DELETE", arch(builtin), f.adminTok, nil, 409, "built-in"},
		{"CopyToOthersEnvironment", "POST", arch(builtin) + "/copy", f.edATok, map[string]any{"environment_id": f.envB}, 422, "environment_id"},
		{"GenerateInUnseenEnvironment", "POST", arch(builtin) + "/generate", f.edATok, map[string]any{"variables": vars, "environment_id": f.envB}, 422, "environment_id"},
		{"GenerateOutsideItsEnvironment", "POST", arch(ofA) + "/generate", f.edATok, map[string]any{"variables": map[string]any{"keyword": "x"}, "environment_id": f.envC}, 422, "used only there"},
		{"GenerateOthersArchetype", "POST", arch(ofB) + "/generate", f.edATok, map[string]any{"variables": map[string]any{"keyword": "x"}, "environment_id": f.envA}, 404, ""},
		{"ViewerCannotGenerate", "POST", arch(builtin) + "/generate", f.viewATok, map[string]any{"variables": vars, "environment_id": f.envA}, 403, ""},
		{"GenerateNeedsEnvironment", "POST", arch(builtin) + "/generate", f.edATok, map[string]any{"variables": vars}, 422, "environment_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.e.do(t, c.method, c.path, c.tok, c.body)
			if r.Code != c.code || !strings.Contains(cieDetail(r), c.detail) {
				t.Fatalf("%d %s; want %d with %q", r.Code, r.Body, c.code, c.detail)
			}
		})
	}

	t.Run("CopyIsEditable", func(t *testing.T) {
		r := f.e.do(t, "POST", arch(builtin)+"/copy", f.edATok, map[string]any{"environment_id": f.envA})
		if r.Code != 201 || r.Data()["builtin"] != "" || r.Data()["name"] != "How-to guide (copy)" || agNum(r.Data()["environment_id"]) != float64(f.envA) {
			t.Fatalf("copy: %d %s", r.Code, r.Body)
		}
		if u := f.e.do(t, "PUT", arch(agID(r.Data())), f.edATok, map[string]any{"target_words": 900}); u.Code != 200 || agNum(u.Data()["target_words"]) != 900 {
			t.Fatalf("update the copy: %d %s", u.Code, u.Body)
		}
	})

	t.Run("Lists", func(t *testing.T) {
		ids := func(tok, query string) map[int64]bool {
			r := f.e.do(t, "GET", "/api/cie/archetypes?per_page=200"+query, tok, nil)
			if r.Code != 200 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			out := map[int64]bool{}
			for _, it := range agItems(r.Data()) {
				out[agID(it)] = true
			}
			return out
		}
		if a := ids(f.edATok, ""); !a[ofA] || a[ofB] || !a[global] || !a[builtin] {
			t.Fatalf("editor A lists %v", a)
		}
		if b := ids(f.adminTok, fmt.Sprintf("&environment_id=%d", f.envB)); b[ofA] || !b[ofB] || !b[global] {
			t.Fatalf("admin lists for B %v", b)
		}
		if r := f.e.do(t, "GET", fmt.Sprintf("/api/cie/archetypes?environment_id=%d", f.envB), f.edATok, nil); r.Code != 404 {
			t.Fatalf("editor A lists B's: %d", r.Code)
		}
	})

	t.Run("RunsOfOthersAreNotFound", func(t *testing.T) {
		r := f.e.do(t, "POST", arch(builtin)+"/generate", f.edATok, map[string]any{"variables": vars, "environment_id": f.envA})
		if r.Code != 202 || r.Data()["status"] != "queued" {
			t.Fatalf("generate: %d %s", r.Code, r.Body)
		}
		run := fmt.Sprintf("/api/cie/runs/%d", agID(r.Data()))
		if g := f.e.do(t, "GET", run, f.edBTok, nil); g.Code != 404 {
			t.Fatalf("editor B reads A's run: %d", g.Code)
		}
		if g := f.e.do(t, "GET", run, f.viewATok, nil); g.Code != 200 {
			t.Fatalf("viewer A reads A's run: %d", g.Code)
		}
	})
}

// cieWaitRun polls a generation until it reaches a final status.
func cieWaitRun(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	var d map[string]any
	agWaitFor(t, fmt.Sprintf("generation %d finishing", id), func() bool {
		r := e.do(t, "GET", fmt.Sprintf("/api/cie/runs/%d", id), tok, nil)
		if r.Code != 200 {
			t.Fatalf("get run: %d %s", r.Code, r.Body)
		}
		d = r.Data()
		s := d["status"]
		return s == "succeeded" || s == "failed" || s == "cancelled"
	})
	return d
}

// An answer that does not parse is sent back with the parse error once;
// a second one fails the run, keeping the raw answer.
func TestGenerateParseRetry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		answers []string
		status  string
		check   func(t *testing.T, run map[string]any)
	}{
		{"SecondAnswerParses", []string{"Sure! Here is your article about sourdough.", goodArticle}, "succeeded", func(t *testing.T, run map[string]any) {
			if run["title"] != "Sourdough for beginners" || run["description"] != "How to bake your first loaf." ||
				run["body"] != "## Introduction\n\nFlour, water, salt and time." || run["raw_output"] != "" {
				t.Fatalf("article %v", run)
			}
		}},
		{"BothFail", []string{"Sure!", "TITLE: Only a title"}, "failed", func(t *testing.T, run map[string]any) {
			if run["raw_output"] != "TITLE: Only a title" || !strings.Contains(run["error"].(string), "did not follow the article format") ||
				!strings.Contains(run["error"].(string), "DESCRIPTION") || run["title"] != "" {
				t.Fatalf("failed run %v", run)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := agSetup(t)
			llm := newCIELLM(t, func(n int) (string, bool) { return c.answers[n-1], false })
			agConfigure(t, f.e, llm.srv.URL+"/v1")
			agRunJobs(t, f.e)
			builtin := cieBuiltin(t, f.e, f.edATok, "listicle")
			r := f.e.do(t, "POST", fmt.Sprintf("/api/cie/archetypes/%d/generate", builtin), f.edATok,
				map[string]any{"variables": map[string]any{"keyword": "sourdough", "audience": "beginners"}, "environment_id": f.envA})
			if r.Code != 202 {
				t.Fatalf("generate: %d %s", r.Code, r.Body)
			}
			run := cieWaitRun(t, f.e, f.edATok, agID(r.Data()))
			if run["status"] != c.status || agNum(run["attempts"]) != 2 || agNum(run["input_tokens"]) != 20 || agNum(run["output_tokens"]) != 10 {
				t.Fatalf("run %v", run)
			}
			c.check(t, run)
			reqs := llm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d provider calls, want 2", len(reqs))
			}
			// The second call carries the first answer and what was wrong.
			msgs := reqs[1]["messages"].([]any)
			if len(msgs) != 4 || msgs[2].(map[string]any)["role"] != "assistant" || msgs[2].(map[string]any)["content"] != c.answers[0] ||
				!strings.Contains(msgs[3].(map[string]any)["content"].(string), "could not be read: expected a line starting with \"TITLE:\"") {
				t.Fatalf("retry messages %v", msgs)
			}
			if n, evs := agUsage(t, f.e, f.adminTok, "&source=cie"); n != 2 || evs[0]["environment_id"] != float64(f.envA) {
				t.Fatalf("%d usage events with source cie: %v", n, evs)
			}
		})
	}
}

// stream: true streams the article as SSE from the real wire format.
func TestGenerateStream(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	llm := newCIELLM(t, func(n int) (string, bool) {
		if n == 1 {
			return "Here goes nothing", false
		}
		return goodArticle, false
	})
	agConfigure(t, f.e, llm.srv.URL+"/v1")
	agRunJobs(t, f.e)
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	builtin := cieBuiltin(t, f.e, f.edATok, "review")
	res, body, evs := agPostStream(t, fmt.Sprintf("%s/api/cie/archetypes/%d/generate", srv.URL, builtin), f.edATok,
		map[string]any{"variables": map[string]any{"keyword": "a stand mixer", "audience": "home bakers"}, "environment_id": f.envA, "stream": true})
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	names := agEventNames(evs)
	if !strings.HasPrefix(names, "run,delta") || !strings.Contains(names, ",retry,delta") || !strings.HasSuffix(names, ",done") {
		t.Fatalf("events %s", names)
	}
	// The deltas after the retry are the article; the done event has it
	// parsed.
	var text strings.Builder
	for _, ev := range evs {
		switch ev.name {
		case "retry":
			text.Reset()
		case "delta":
			var d struct{ Text string }
			json.Unmarshal([]byte(ev.data), &d)
			text.WriteString(d.Text)
		}
	}
	if text.String() != goodArticle {
		t.Fatalf("streamed %q", text.String())
	}
	var done map[string]any
	json.Unmarshal([]byte(evs[len(evs)-1].data), &done)
	if done["status"] != "succeeded" || done["title"] != "Sourdough for beginners" || !strings.HasPrefix(done["body"].(string), "## Introduction") {
		t.Fatalf("done %v", done)
	}
	got := f.e.do(t, "GET", fmt.Sprintf("/api/cie/runs/%d", agID(done)), f.edATok, nil).Data()
	if got["title"] != done["title"] || got["status"] != "succeeded" {
		t.Fatalf("stored run %v", got)
	}
}

// A stream cut off mid-answer fails the generation with the partial text
// kept, and its usage is recorded, estimated and marked so.
func TestGenerateCutOffStream(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	llm := newCIELLM(t, func(int) (string, bool) { return goodArticle, true })
	agConfigure(t, f.e, llm.srv.URL+"/v1")
	agRunJobs(t, f.e)
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	builtin := cieBuiltin(t, f.e, f.edATok, "how-to")
	_, _, evs := agPostStream(t, fmt.Sprintf("%s/api/cie/archetypes/%d/generate", srv.URL, builtin), f.edATok,
		map[string]any{"variables": map[string]any{"keyword": "sourdough", "audience": "beginners"}, "environment_id": f.envA, "stream": true})
	last := evs[len(evs)-1]
	if last.name != "error" || !strings.Contains(last.data, "connection lost") {
		t.Fatalf("events %s, last %v", agEventNames(evs), last)
	}
	var first map[string]any
	json.Unmarshal([]byte(evs[0].data), &first)
	run := cieWaitRun(t, f.e, f.edATok, agID(first))
	partial := strings.Join(strings.SplitAfter(goodArticle, " ")[:len(strings.SplitAfter(goodArticle, " "))/2], "")
	if run["status"] != "failed" || run["raw_output"] != partial || run["usage_estimated"] != true ||
		agNum(run["output_tokens"]) != float64((len(partial)+3)/4) || agNum(run["input_tokens"]) == 0 {
		t.Fatalf("run %v\nwant raw %q", run, partial)
	}
	n, items := agUsage(t, f.e, f.adminTok, "&source=cie")
	if n != 1 || items[0]["estimated"] != true || items[0]["status"] != "error" || items[0]["output_tokens"] != run["output_tokens"] {
		t.Fatalf("usage %v", items)
	}
}

// Generations are listed newest first within the caller's environments,
// by environment, archetype and status, and a queued or running one can be
// cancelled by an editor; a finished one cannot.
func TestCIERunsListAndCancel(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	llm := newCIELLM(t, func(int) (string, bool) { return goodArticle, false })
	agConfigure(t, f.e, llm.srv.URL+"/v1") // no job runner: the runs stay queued
	listicle, howTo := cieBuiltin(t, f.e, f.edATok, "listicle"), cieBuiltin(t, f.e, f.edATok, "how-to")
	generate := func(tok string, arch, envID int64) int64 {
		t.Helper()
		r := f.e.do(t, "POST", fmt.Sprintf("/api/cie/archetypes/%d/generate", arch), tok,
			map[string]any{"variables": map[string]any{"keyword": "sourdough", "audience": "beginners"}, "environment_id": envID})
		if r.Code != 202 {
			t.Fatalf("generate: %d %s", r.Code, r.Body)
		}
		return agID(r.Data())
	}
	a1, a2 := generate(f.edATok, listicle, f.envA), generate(f.edATok, howTo, f.envA)
	b1 := generate(f.edBTok, listicle, f.envB)
	list := func(tok, query string) []int64 {
		t.Helper()
		r := f.e.do(t, "GET", "/api/cie/runs?per_page=50"+query, tok, nil)
		if r.Code != 200 {
			t.Fatalf("list %s: %d %s", query, r.Code, r.Body)
		}
		var ids []int64
		for _, it := range agItems(r.Data()) {
			ids = append(ids, agID(it))
		}
		return ids
	}
	same := func(got []int64, want ...int64) bool { return fmt.Sprint(got) == fmt.Sprint(want) }
	if got := list(f.viewATok, ""); !same(got, a2, a1) {
		t.Fatalf("viewer A lists %v, want %v", got, []int64{a2, a1})
	}
	if got := list(f.adminTok, ""); !same(got, b1, a2, a1) {
		t.Fatalf("admin lists %v", got)
	}
	if got := list(f.edATok, fmt.Sprintf("&archetype_id=%d", listicle)); !same(got, a1) {
		t.Fatalf("editor A lists listicles %v", got)
	}
	if got := list(f.adminTok, fmt.Sprintf("&environment_id=%d", f.envB)); !same(got, b1) {
		t.Fatalf("admin lists B %v", got)
	}
	if r := f.e.do(t, "GET", fmt.Sprintf("/api/cie/runs?environment_id=%d", f.envB), f.edATok, nil); r.Code != 404 {
		t.Fatalf("editor A lists B's runs: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "GET", "/api/cie/runs?status=done", f.edATok, nil); r.Code != 422 {
		t.Fatalf("an unknown status: %d %s", r.Code, r.Body)
	}

	cancel := func(tok string, id int64) resp {
		return f.e.do(t, "POST", fmt.Sprintf("/api/cie/runs/%d/cancel", id), tok, nil)
	}
	if r := cancel(f.viewATok, a1); r.Code != 403 {
		t.Fatalf("viewer cancels: %d %s", r.Code, r.Body)
	}
	if r := cancel(f.edBTok, a1); r.Code != 404 {
		t.Fatalf("editor B cancels A's: %d %s", r.Code, r.Body)
	}
	r := cancel(f.edATok, a1)
	if r.Code != 200 || r.Data()["status"] != "cancelled" || r.Data()["error"] != "cancelled by alice" {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
	if r := cancel(f.edATok, a1); r.Code != 409 || !strings.Contains(r.Detail(), "already cancelled") {
		t.Fatalf("cancel again: %d %s", r.Code, r.Body)
	}
	if got := list(f.edATok, "&status=cancelled"); !same(got, a1) {
		t.Fatalf("cancelled runs %v", got)
	}
	if got := list(f.edATok, "&status=queued"); !same(got, a2) {
		t.Fatalf("queued runs %v", got)
	}
}

// An article cut off at the max tokens limit fails at once (asking again
// would be cut off again) saying so and naming the setting to raise, not
// "did not follow the article format"; the run shows stop_reason length.
func TestGenerateCutOffAtMaxTokens(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	fake := fakeOpenAI(t, func(n int, req map[string]any) (int, string) { return 200, "TITLE: Sourdough\nDESCRIPTION: How to" })
	fake.finish = "length"
	agConfigure(t, f.e, fake.URL+"/v1")
	agRunJobs(t, f.e)
	builtin := cieBuiltin(t, f.e, f.edATok, "listicle")
	r := f.e.do(t, "POST", fmt.Sprintf("/api/cie/archetypes/%d/generate", builtin), f.edATok,
		map[string]any{"variables": map[string]any{"keyword": "sourdough", "audience": "beginners"}, "environment_id": f.envA})
	if r.Code != 202 {
		t.Fatalf("generate: %d %s", r.Code, r.Body)
	}
	run := cieWaitRun(t, f.e, f.edATok, agID(r.Data()))
	msg, _ := run["error"].(string)
	if run["status"] != "failed" || run["stop_reason"] != "length" || run["truncated"] != true || agNum(run["attempts"]) != 1 ||
		!strings.Contains(msg, "cut off at the max tokens limit") || !strings.Contains(msg, "max_output_tokens") ||
		strings.Contains(msg, "article format") || run["raw_output"] != "TITLE: Sourdough\nDESCRIPTION: How to" {
		t.Fatalf("cut-off generation: %v", run)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("%d provider calls, want 1", n)
	}
}

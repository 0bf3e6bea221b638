package server_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/seo/seotest"
	"github.com/copydesk/copydesk/store"
)

// importFile sends a keyword export to the import route, with fields
// beside it.
func (e *env) importFile(t testing.TB, token string, fields map[string]string, name string, content []byte) resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if content != nil {
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(content)
	}
	mw.Close()
	req := httptest.NewRequest("POST", "/api/seo/keywords/import", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(t, req)
}

func itemsOf(t testing.TB, r resp) []map[string]any {
	t.Helper()
	if r.Code != 200 {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	var out []map[string]any
	for _, it := range r.Data()["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func TestSEOKeywordImport(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	envA := fmt.Sprint(e.envA)
	kp := seotest.GoogleKeywordPlanner([]seotest.Row{
		{Keyword: "running shoes", Volume: "10K – 100K", BidLow: "0.85", BidHigh: "2.41"},
		{Keyword: "trail running shoes", Volume: "1K – 10K", BidLow: "0.50", BidHigh: "1.50"},
		{Keyword: "Running  Shoes", Volume: "100K – 1M"}, // the same keyword again
		{Keyword: "shoe\x01stretcher", Volume: "10"},
	})
	cases := []struct {
		name     string
		token    string
		fields   map[string]string
		file     []byte
		status   int
		detail   string
		imported float64
		updated  float64
		format   string
	}{
		{"KeywordPlannerUTF16", e.editor, map[string]string{"environment_id": envA}, kp, 200, "", 2, 0, "google_keyword_planner"},
		{"AhrefsUpdatesWhatIsThere", e.editor, map[string]string{"environment_id": envA}, seotest.AhrefsCSV([]seotest.Row{
			{Keyword: "running shoes", Volume: "74000", Difficulty: "78", CPC: "1.20", Intents: "Commercial, Transactional"},
			{Keyword: "nike pegasus 41", Volume: "90,500", Difficulty: "31", CPC: "0.95", Intents: "Navigational"},
		}), 200, "", 1, 1, "ahrefs"},
		{"SemrushSemicolon", e.editor, map[string]string{"environment_id": envA}, seotest.Semrush([]seotest.Row{
			{Keyword: "laufschuhe damen", Intents: "Transactional", Volume: "22200", Difficulty: "45", CPC: "0.65"},
		}, ';', "EUR"), 200, "", 1, 0, "semrush"},
		{"WrongEncoding", e.editor, map[string]string{"environment_id": envA}, []byte("Keyword,Volume,Difficulty\ncaf\xe9,1,1\n"), 422,
			"file: is not UTF-8, nor UTF-16 with a byte order mark", 0, 0, ""},
		{"UnknownHeader", e.editor, map[string]string{"environment_id": envA}, []byte("Term;Searches\nshoes;10\n"), 422,
			"file: no header with a Keyword column", 0, 0, ""},
		{"NoEnvironment", e.editor, nil, kp, 422, "environment_id: is required", 0, 0, ""},
		{"EnvironmentNotANumber", e.editor, map[string]string{"environment_id": "a"}, kp, 422, `environment_id: "a" is not a value of its type`, 0, 0, ""},
		{"EnvironmentNotGranted", e.editor, map[string]string{"environment_id": fmt.Sprint(e.envB)}, kp, 422,
			fmt.Sprintf("environment_id: no environment with id %d", e.envB), 0, 0, ""},
		{"NoFile", e.editor, map[string]string{"environment_id": envA}, nil, 422, "file: send the file as multipart/form-data", 0, 0, ""},
		{"Viewer", e.viewer, map[string]string{"environment_id": envA}, kp, 403, "", 0, 0, ""},
	}
	for _, c := range cases {
		r := e.importFile(t, c.token, c.fields, "export.csv", c.file)
		if r.Code != c.status || (c.detail != "" && !strings.Contains(r.Detail(), c.detail)) {
			t.Fatalf("%s: %d %s", c.name, r.Code, r.Body)
		}
		if r.Code != 200 {
			continue
		}
		d := r.Data()
		if d["imported"] != c.imported || d["updated"] != c.updated || d["format"] != c.format {
			t.Fatalf("%s: %s", c.name, r.Body)
		}
		if c.name == "KeywordPlannerUTF16" {
			rej := d["rejections"].([]any)
			if d["encoding"] != "utf-16le" || d["delimiter"] != "tab" || d["rows"] != 4.0 || d["duplicates"] != 1.0 || d["rejected"] != 1.0 ||
				len(rej) != 1 || rej[0].(map[string]any)["line"] != 7.0 || !strings.Contains(rej[0].(map[string]any)["reason"].(string), "control characters") {
				t.Fatalf("%s: %s", c.name, r.Body)
			}
		}
	}
	// What the imports left: one "running shoes" with Ahrefs' metrics over
	// the Keyword Planner range, searched by part of its name.
	items := itemsOf(t, e.do(t, "GET", "/api/seo/keywords?environment_id="+envA+"&q=RUNNING%20shoes&sort=keyword", e.viewer, nil))
	if len(items) != 2 || items[0]["keyword"] != "running shoes" || items[0]["search_volume"] != 74000.0 || items[0]["search_volume_high"] != nil ||
		items[0]["difficulty"] != 78.0 || items[0]["cpc"] != 1.2 || items[0]["currency"] != "USD" || items[0]["source"] != "import:google_keyword_planner" ||
		fmt.Sprint(items[0]["intent"]) != "[commercial transactional]" || items[1]["search_volume_high"] != 10000.0 {
		t.Fatalf("after the imports: %v", items)
	}
	t.Run("TooLarge", func(t *testing.T) {
		big := bytes.Repeat([]byte("x"), 50<<20+1)
		r := e.importFile(t, e.editor, map[string]string{"environment_id": envA}, "big.csv", big)
		if r.Code != 413 || !strings.Contains(r.Detail(), "50 MiB") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
}

func TestSEOKeywords(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	ctx := context.Background()
	envA := fmt.Sprint(e.envA)
	mk := func(kw string, vol, diff int64, cpc float64, status, cluster string, intent ...string) int64 {
		bits, _ := store.IntentBits(intent)
		k, err := e.app.DB.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: e.envA, Keyword: kw, SearchVolume: &vol, Difficulty: &diff,
			CPC: &cpc, Currency: "USD", Status: status, Cluster: cluster, Intent: bits, Source: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(1e9)
		return k.ID
	}
	shoes := mk("Running Shoes", 74000, 78, 1.2, "new", "shoes", "commercial", "transactional")
	trail := mk("trail shoes", 9900, 40, 0.8, "planned", "shoes", "transactional")
	lace := mk("how to lace shoes", 1900, 12, 0.1, "new", "guides", "informational")
	brand := mk("nike pegasus", 90500, 31, 0.95, "ignored", "", "navigational")
	other, err := e.app.DB.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: e.envB, Keyword: "secret", Status: "new", Source: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(items []map[string]any) []int64 {
		var out []int64
		for _, it := range items {
			out = append(out, int64(it["id"].(float64)))
		}
		return out
	}
	t.Run("Filters", func(t *testing.T) {
		cases := []struct {
			query string
			want  []int64
		}{
			{"", []int64{lace, brand, shoes, trail}}, // by keyword
			{"&status=new", []int64{lace, shoes}},
			{"&intent=transactional", []int64{shoes, trail}},
			{"&cluster=shoes", []int64{shoes, trail}},
			{"&volume_min=9900&volume_max=74000", []int64{shoes, trail}},
			{"&difficulty_min=30&difficulty_max=40", []int64{brand, trail}},
			{"&q=SHOES", []int64{lace, shoes, trail}},
			{"&sort=-search_volume", []int64{brand, shoes, trail, lace}},
			{"&sort=difficulty", []int64{lace, brand, trail, shoes}},
			{"&sort=-cpc", []int64{shoes, brand, trail, lace}},
			{"&sort=created_at", []int64{shoes, trail, lace, brand}},
			{"&sort=-updated_at&status=new", []int64{lace, shoes}},
		}
		for _, c := range cases {
			got := ids(itemsOf(t, e.do(t, "GET", "/api/seo/keywords?environment_id="+envA+c.query, e.viewer, nil)))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: got %v, want %v", c.query, got, c.want)
			}
		}
	})
	t.Run("BadQueries", func(t *testing.T) {
		cases := []struct{ query, detail string }{
			{"", "environment_id: is required"},
			{"?environment_id=" + envA + "&sort=volume", "sort: must be one of: keyword, -keyword, search_volume"},
			{"?environment_id=" + envA + "&status=done", "status: must be one of"},
			{"?environment_id=" + envA + "&intent=local", "intent: must be one of"},
			{"?environment_id=" + envA + "&difficulty_max=101", "difficulty_max: must be at most 100"},
			{"?environment_id=" + envA + "&volume_min=10&volume_max=5", "volume_min: must not be above volume_max"},
			{"?environment_id=" + envA + "&campaign=1", "campaign: is not a known query parameter"},
		}
		for _, c := range cases {
			r := e.do(t, "GET", "/api/seo/keywords"+c.query, e.viewer, nil)
			if r.Code != 422 || !strings.HasPrefix(r.Detail(), c.detail) {
				t.Errorf("%s: %d %s", c.query, r.Code, r.Body)
			}
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/seo/keywords?environment_id=%d", e.envB), e.viewer, nil); r.Code != 404 {
			t.Errorf("an environment not granted: %d %s", r.Code, r.Body)
		}
	})
	t.Run("CreateAndChange", func(t *testing.T) {
		post, err := e.app.DB.CreateWordPressPost(ctx, store.NewWordPressPost{EnvironmentID: e.envA, Title: "Lace", Slug: "lace", Status: "draft"})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name, method, path string
			body               map[string]any
			status             int
			detail             string
		}{
			{"Create", "POST", "/api/seo/keywords", map[string]any{"environment_id": e.envA, "keyword": "Café  Latte", "intent": []string{"commercial"},
				"target_url": "https://example.com/latte"}, 201, ""},
			{"Duplicate", "POST", "/api/seo/keywords", map[string]any{"environment_id": e.envA, "keyword": "cafe\u0301 latte"}, 409,
				"keyword: this environment has this keyword already"},
			{"BadIntent", "POST", "/api/seo/keywords", map[string]any{"environment_id": e.envA, "keyword": "x", "intent": []string{"local"}}, 422, "intent"},
			{"NoKeyword", "POST", "/api/seo/keywords", map[string]any{"environment_id": e.envA}, 422, "keyword: is required"},
			{"LinkPost", "PUT", fmt.Sprintf("/api/seo/keywords/%d", lace), map[string]any{"post_kind": "wordpress", "post_id": post.ID,
				"status": "published"}, 200, ""},
			{"Unlink", "PUT", fmt.Sprintf("/api/seo/keywords/%d", lace), map[string]any{"post_id": 0}, 200, ""},
			{"PostKindAlone", "PUT", fmt.Sprintf("/api/seo/keywords/%d", lace), map[string]any{"post_kind": "astro"}, 422, "post_id: is required with post_kind"},
			{"RenameOntoAnother", "PUT", fmt.Sprintf("/api/seo/keywords/%d", trail), map[string]any{"keyword": "RUNNING SHOES"}, 409, "keyword:"},
			{"RangeBelowLow", "PUT", fmt.Sprintf("/api/seo/keywords/%d", trail), map[string]any{"search_volume_high": 10}, 422, "search_volume_high:"},
			{"OtherEnvironment", "PUT", fmt.Sprintf("/api/seo/keywords/%d", other.ID), map[string]any{"cluster": "x"}, 404, "keyword not found"},
		}
		for _, c := range cases {
			r := e.do(t, c.method, c.path, e.editor, c.body)
			if r.Code != c.status || (c.detail != "" && !strings.HasPrefix(r.Detail(), c.detail)) {
				t.Fatalf("%s: %d %s", c.name, r.Code, r.Body)
			}
			switch c.name {
			case "Create":
				if d := r.Data(); d["keyword"] != "Café Latte" || d["normalized"] != "café latte" || d["status"] != "new" || d["source"] != "manual" {
					t.Fatalf("created: %s", r.Body)
				}
			case "LinkPost":
				if d := r.Data(); d["post_kind"] != "wordpress" || d["post_id"] != float64(post.ID) || d["status"] != "published" {
					t.Fatalf("linked: %s", r.Body)
				}
			case "Unlink":
				if d := r.Data(); d["post_kind"] != nil || d["post_id"] != nil || d["status"] != "published" {
					t.Fatalf("unlinked: %s", r.Body)
				}
			}
		}
	})
	t.Run("Bulk", func(t *testing.T) {
		r := e.do(t, "POST", "/api/seo/keywords/bulk-update", e.editor, map[string]any{"ids": []int64{shoes, trail, other.ID, 999999},
			"status": "planned", "cluster": "running"})
		if r.Code != 200 || r.Data()["changed"] != 2.0 {
			t.Fatalf("bulk update: %d %s", r.Code, r.Body)
		}
		got := ids(itemsOf(t, e.do(t, "GET", "/api/seo/keywords?environment_id="+envA+"&cluster=running&status=planned", e.viewer, nil)))
		if !slices.Equal(got, []int64{shoes, trail}) {
			t.Fatalf("after bulk update: %v", got)
		}
		for _, c := range []struct {
			body   map[string]any
			detail string
		}{
			{map[string]any{"ids": []int64{shoes}}, "body: set at least one of status, cluster, intent, parent_keyword"},
			{map[string]any{"ids": []int64{}, "status": "new"}, "ids: must have at least 1"},
			{map[string]any{"ids": []int64{shoes}, "status": "done"}, "status: must be one of"},
		} {
			if r := e.do(t, "POST", "/api/seo/keywords/bulk-update", e.editor, c.body); r.Code != 422 || !strings.HasPrefix(r.Detail(), c.detail) {
				t.Errorf("%v: %d %s", c.body, r.Code, r.Body)
			}
		}
		r = e.do(t, "POST", "/api/seo/keywords/bulk-delete", e.editor, map[string]any{"ids": []int64{brand, other.ID, brand}})
		if r.Code != 200 || r.Data()["changed"] != 1.0 {
			t.Fatalf("bulk delete: %d %s", r.Code, r.Body)
		}
		if k, err := e.app.DB.KeywordByID(ctx, other.ID); err != nil || k.Cluster != "" {
			t.Fatalf("a keyword of another environment was touched: %+v %v", k, err)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/seo/keywords/%d", brand), e.viewer, nil); r.Code != 404 {
			t.Fatalf("deleted keyword: %d", r.Code)
		}
	})
}

func TestSEOCampaigns(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	ctx := context.Background()
	var kws []int64
	for _, kw := range []string{"one", "two", "three"} {
		k, err := e.app.DB.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: e.envA, Keyword: kw, Status: "new", Source: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		kws = append(kws, k.ID)
	}
	kwB, err := e.app.DB.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: e.envB, Keyword: "b", Status: "new", Source: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	agA, err := e.app.DB.CreateAgent(ctx, store.AgentInput{EnvironmentID: &e.envA, Name: "Writer A", Kind: "writer", IsActive: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	agB, err := e.app.DB.CreateAgent(ctx, store.AgentInput{EnvironmentID: &e.envB, Name: "Writer B", Kind: "writer", IsActive: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := e.app.DB.CreateArchetype(ctx, store.ArchetypeInput{EnvironmentID: &e.envA, Name: "Guide", PromptTemplate: "About {{keyword}}",
		TargetWords: 800}, 1)
	if err != nil {
		t.Fatal(err)
	}
	create := func(body map[string]any) resp { return e.do(t, "POST", "/api/seo/campaigns", e.editor, body) }
	r := create(map[string]any{"environment_id": e.envA, "name": "Spring", "target": "astro", "agent_id": agA.ID, "archetype_id": arch.ID,
		"cadence": 2, "keyword_ids": []int64{kws[2], kws[0]}})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	camp := int64(r.Data()["id"].(float64))
	if p := r.Data()["progress"].(map[string]any); p["done"] != 0.0 || p["total"] != 2.0 || r.Data()["status"] != "draft" {
		t.Fatalf("created: %s", r.Body)
	}
	path := fmt.Sprintf("/api/seo/campaigns/%d", camp)
	t.Run("Refused", func(t *testing.T) {
		cases := []struct {
			name   string
			method string
			path   string
			body   map[string]any
			status int
			detail string
		}{
			{"AgentOfAnotherEnvironment", "POST", "/api/seo/campaigns", map[string]any{"environment_id": e.envA, "name": "X", "target": "astro",
				"agent_id": agB.ID}, 422, fmt.Sprintf("agent_id: no agent with id %d", agB.ID)},
			{"KeywordOfAnotherEnvironment", "POST", "/api/seo/campaigns", map[string]any{"environment_id": e.envA, "name": "X", "target": "astro",
				"keyword_ids": []int64{kwB.ID}}, 422, "keyword_ids: no keyword with id"},
			{"NameTaken", "POST", "/api/seo/campaigns", map[string]any{"environment_id": e.envA, "name": "SPRING", "target": "wordpress"}, 409, "name:"},
			{"BadTarget", "POST", "/api/seo/campaigns", map[string]any{"environment_id": e.envA, "name": "X", "target": "ghost"}, 422, "target: must be one of"},
			{"KeywordInAnother", "POST", "/api/seo/campaigns", map[string]any{"environment_id": e.envA, "name": "X", "target": "astro",
				"keyword_ids": []int64{kws[0]}}, 409, fmt.Sprintf("keyword %d is in campaign \"Spring\" already", kws[0])},
			{"ActivateWithoutProject", "PUT", path, map[string]any{"status": "active"}, 409, "status: environment"},
			{"Cadence", "PUT", path, map[string]any{"cadence": 0}, 422, "cadence: must be at least 1"},
			{"AddOtherEnvironment", "POST", path + "/keywords", map[string]any{"ids": []int64{kwB.ID}}, 422, "ids: no keyword with id"},
			{"ViewerWrites", "PUT", path, map[string]any{"name": "Y"}, 403, ""},
		}
		for _, c := range cases {
			tok := e.editor
			if c.name == "ViewerWrites" {
				tok = e.viewer
			}
			r := e.do(t, c.method, c.path, tok, c.body)
			if r.Code != c.status || !strings.HasPrefix(r.Detail(), c.detail) {
				t.Errorf("%s: %d %s", c.name, r.Code, r.Body)
			}
		}
	})
	t.Run("KeywordsInOrder", func(t *testing.T) {
		r := e.do(t, "POST", path+"/keywords", e.editor, map[string]any{"ids": []int64{kws[1], kws[0]}})
		if r.Code != 200 || r.Data()["changed"] != 1.0 || r.Data()["campaign"].(map[string]any)["progress"].(map[string]any)["total"] != 3.0 {
			t.Fatalf("add: %d %s", r.Code, r.Body)
		}
		var got []int64
		for _, it := range itemsOf(t, e.do(t, "GET", path+"/keywords", e.viewer, nil)) {
			got = append(got, int64(it["id"].(float64)))
			if it["campaign_id"] != float64(camp) {
				t.Fatalf("keyword without its campaign: %v", it)
			}
		}
		if !slices.Equal(got, []int64{kws[2], kws[0], kws[1]}) {
			t.Fatalf("order: %v", got)
		}
		// One published, one ignored: 1 of 2 done.
		for i, status := range []string{"published", "ignored"} {
			if _, err := e.app.DB.UpdateKeyword(ctx, kws[i], store.KeywordUpdate{Status: &status}); err != nil {
				t.Fatal(err)
			}
		}
		d := e.do(t, "GET", path, e.viewer, nil).Data()
		if p := d["progress"].(map[string]any); p["done"] != 1.0 || p["total"] != 2.0 || p["percent"] != 50.0 ||
			d["keyword_counts"].(map[string]any)["ignored"] != 1.0 {
			t.Fatalf("progress: %v", d)
		}
		r = e.do(t, "POST", path+"/keywords/remove", e.editor, map[string]any{"ids": []int64{kws[0], kwB.ID}})
		if r.Code != 200 || r.Data()["changed"] != 1.0 {
			t.Fatalf("remove: %d %s", r.Code, r.Body)
		}
	})
	t.Run("ActivateAndList", func(t *testing.T) {
		cfg := store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: t.TempDir(), ContentDir: "src/content/blog"}}
		if _, err := e.app.DB.UpdateEnvironment(ctx, e.envA, store.EnvironmentUpdate{Configuration: &cfg}); err != nil {
			t.Fatal(err)
		}
		if r := e.do(t, "PUT", path, e.editor, map[string]any{"status": "active", "post_status": "publish"}); r.Code != 200 ||
			r.Data()["status"] != "active" || r.Data()["post_status"] != "publish" {
			t.Fatalf("activate: %d %s", r.Code, r.Body)
		}
		for _, name := range []string{"autumn", "Winter"} {
			e.clock.Advance(1e9)
			if r := create(map[string]any{"environment_id": e.envA, "name": name, "target": "wordpress"}); r.Code != 201 {
				t.Fatalf("create %s: %d %s", name, r.Code, r.Body)
			}
		}
		if r := e.do(t, "POST", "/api/seo/campaigns", e.admin, map[string]any{"environment_id": e.envB, "name": "Hidden", "target": "astro",
			"agent_id": agB.ID}); r.Code != 201 {
			t.Fatalf("create in B: %d %s", r.Code, r.Body)
		}
		names := func(query, tok string) []string {
			var out []string
			for _, it := range itemsOf(t, e.do(t, "GET", "/api/seo/campaigns"+query, tok, nil)) {
				out = append(out, it["name"].(string))
			}
			return out
		}
		cases := []struct {
			query, token string
			want         []string
		}{
			{"", e.viewer, []string{"autumn", "Spring", "Winter"}},
			{"?sort=-name", e.viewer, []string{"Winter", "Spring", "autumn"}},
			{"?sort=-created_at", e.viewer, []string{"Winter", "autumn", "Spring"}},
			{"?status=active", e.viewer, []string{"Spring"}},
			{fmt.Sprintf("?agent_id=%d", agA.ID), e.viewer, []string{"Spring"}},
			{"?q=in", e.viewer, []string{"Spring", "Winter"}},
			{"", e.admin, []string{"autumn", "Hidden", "Spring", "Winter"}},
			{fmt.Sprintf("?environment_id=%d&sort=updated_at", e.envA), e.admin, []string{"Spring", "autumn", "Winter"}},
		}
		for _, c := range cases {
			if got := names(c.query, c.token); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.query, got, c.want)
			}
		}
		if r := e.do(t, "GET", "/api/seo/campaigns?sort=status", e.viewer, nil); r.Code != 422 ||
			r.Detail() != "sort: must be one of: name, -name, created_at, -created_at, updated_at, -updated_at" {
			t.Fatalf("sort by status: %d %s", r.Code, r.Body)
		}
		var agentsCampaigns []string
		for _, it := range itemsOf(t, e.do(t, "GET", fmt.Sprintf("/api/agents/%d/campaigns", agA.ID), e.viewer, nil)) {
			agentsCampaigns = append(agentsCampaigns, it["name"].(string))
		}
		if !slices.Equal(agentsCampaigns, []string{"Spring"}) {
			t.Fatalf("agent's campaigns: %v", agentsCampaigns)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/campaigns", agB.ID), e.viewer, nil); r.Code != 404 {
			t.Fatalf("campaigns of an agent not seen: %d %s", r.Code, r.Body)
		}
	})
	t.Run("AgentKeepsTheEnvironment", func(t *testing.T) {
		// Writer B may write in A once assigned there; then A cannot be
		// taken from it while a campaign of A has it.
		if r := e.do(t, "PUT", fmt.Sprintf("/api/agents/%d/assignments", agB.ID), e.admin, map[string]any{"environment_ids": []int64{e.envA}}); r.Code != 200 {
			t.Fatalf("assign: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", path, e.editor, map[string]any{"agent_id": agB.ID}); r.Code != 200 {
			t.Fatalf("assigned agent: %d %s", r.Code, r.Body)
		}
		r := e.do(t, "PUT", fmt.Sprintf("/api/agents/%d/assignments", agB.ID), e.admin, map[string]any{"environment_ids": []int64{}})
		if r.Code != 409 || !strings.Contains(r.Detail(), `campaign "Spring"`) {
			t.Fatalf("unassign: %d %s", r.Code, r.Body)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		if r := e.do(t, "DELETE", path, e.editor, nil); r.Code != 200 {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		k, err := e.app.DB.KeywordByID(ctx, kws[2])
		if err != nil || k.CampaignID != nil {
			t.Fatalf("keyword of the deleted campaign: %+v %v", k, err)
		}
	})
}

package server_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// Tests of /api/seo/strategies: both groupings on fixed keyword sets
// through the API, SERP data from a local SerpApi (serpFake) and its
// cache, the model's refining, edits and campaigns. Identifiers are
// prefixed "strat".

// stratKeywords creates keywords in env (text -> volume, -1 for none) and
// returns their ids by text.
func stratKeywords(t *testing.T, e *env, envID int64, kws map[string]int64) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	for text, vol := range kws {
		n := store.NewKeyword{EnvironmentID: envID, Keyword: text, Status: store.KeywordNew, Source: "manual"}
		if vol >= 0 {
			n.SearchVolume = &vol
		}
		k, err := e.app.DB.CreateKeyword(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		ids[text] = k.ID
	}
	return ids
}

// stratShoes is the lexical set of the strategy package's tests.
var stratShoes = map[string]int64{
	"running shoes": 9000, "best running shoes": 4000, "running shoes for women": 2500, "trail running": 1200,
	"trail running tips": 300, "how to clean suede": 500, "cleaning suede shoes": 800,
}

// stratCreate creates a strategy and waits for its build.
func stratCreate(t *testing.T, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, "POST", "/api/seo/strategies", tok, body)
	if r.Code != 202 || r.Data()["status"] != "queued" {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	return stratWait(t, e, tok, agID(r.Data()))
}

func stratWait(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	return waitQueued(t, e, tok, fmt.Sprintf("/api/seo/strategies/%d", id))
}

// stratRender writes a strategy's clusters as "name=pillar: member, ... | ...".
func stratRender(st map[string]any) string {
	var parts []string
	for _, c := range st["clusters"].([]any) {
		cl := c.(map[string]any)
		var kws []string
		for _, k := range cl["keywords"].([]any) {
			kws = append(kws, k.(map[string]any)["keyword"].(string))
		}
		pillar := ""
		if cl["pillar_keyword_id"] != nil && agID(cl["keywords"].([]any)[0].(map[string]any)) == int64(cl["pillar_keyword_id"].(float64)) {
			pillar = kws[0]
		}
		parts = append(parts, fmt.Sprintf("%s=%s: %s", cl["name"], pillar, strings.Join(kws[1:], ", ")))
	}
	return strings.Join(parts, " | ")
}

func stratClusterIDs(st map[string]any) []int64 {
	var out []int64
	for _, c := range st["clusters"].([]any) {
		out = append(out, agID(c.(map[string]any)))
	}
	return out
}

func TestStrategyLexical(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	ids := stratKeywords(t, f.e, f.envA, stratShoes)
	ignored := stratKeywords(t, f.e, f.envA, map[string]int64{"running shoe laces": 100})["running shoe laces"]
	if _, err := f.e.app.DB.UpdateKeyword(context.Background(), ignored, store.KeywordUpdate{Status: new("ignored")}); err != nil {
		t.Fatal(err)
	}
	other := stratKeywords(t, f.e, f.envB, map[string]int64{"running shoes": 10})["running shoes"]
	agRunJobs(t, f.e)

	st := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes"})
	if st["status"] != "ready" || st["used_method"] != "lexical" || st["method"] != "auto" || st["keyword_count"] != 7.0 ||
		st["cluster_count"] != 3.0 || !strings.Contains(st["notes"].(string), "grouped by words: no SERP data") {
		t.Fatalf("strategy %v", st)
	}
	want := "running shoes=running shoes: best running shoes, running shoes for women | trail running=trail running: trail running tips | " +
		"cleaning suede shoes=cleaning suede shoes: how to clean suede"
	if got := stratRender(st); got != want {
		t.Fatalf("clusters\n got  %s\n want %s", got, want)
	}
	if v := st["clusters"].([]any)[0].(map[string]any)["total_volume"]; v != 15500.0 {
		t.Errorf("total_volume %v", v)
	}
	id := agID(st)
	path := fmt.Sprintf("/api/seo/strategies/%d", id)
	clusters := stratClusterIDs(st)

	t.Run("Edit", func(t *testing.T) {
		r := f.e.do(t, "PUT", path, f.edATok, map[string]any{"name": "Shoes, edited", "clusters": []map[string]any{
			{"id": clusters[0], "name": "Running shoes guide", "keyword_ids": []int64{ids["best running shoes"], ids["running shoes"],
				ids["running shoes for women"], ids["cleaning suede shoes"]}},
			{"id": clusters[1], "pillar_keyword_id": ids["trail running tips"], "keyword_ids": []int64{ids["trail running"], ids["trail running tips"]}},
			{"keyword_ids": []int64{ids["how to clean suede"]}},
		}})
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d := r.Data()
		want := "Running shoes guide=running shoes: best running shoes, running shoes for women, cleaning suede shoes | " +
			"trail running tips=trail running tips: trail running | how to clean suede=how to clean suede: "
		if got := stratRender(d); got != want || d["name"] != "Shoes, edited" || d["keyword_count"] != 7.0 || d["cluster_count"] != 3.0 {
			t.Fatalf("edited\n got  %s (%v)\n want %s", got, d, want)
		}
		now := stratClusterIDs(d)
		if now[0] != clusters[0] || now[1] != clusters[1] || now[2] == clusters[2] {
			t.Fatalf("cluster ids %v, were %v: the listed keep theirs, a new one is new", now, clusters)
		}
		clusters = now
		// A name alone leaves the clusters.
		r = f.e.do(t, "PUT", path, f.edATok, map[string]any{"name": "Shoes"})
		if r.Code != 200 || stratRender(r.Data()) != want {
			t.Fatalf("rename: %d %s", r.Code, r.Body)
		}
		bad := []struct {
			name   string
			body   map[string]any
			detail string
		}{
			{"Twice", map[string]any{"clusters": []map[string]any{{"keyword_ids": []int64{ids["trail running"]}}, {"keyword_ids": []int64{ids["trail running"]}}}},
				"keyword " + fmt.Sprint(ids["trail running"]) + " is in clusters[0] too"},
			{"PillarOutside", map[string]any{"clusters": []map[string]any{{"pillar_keyword_id": ids["running shoes"], "keyword_ids": []int64{ids["trail running"]}}}},
				"clusters[0].pillar_keyword_id"},
			{"AnotherEnvironment", map[string]any{"clusters": []map[string]any{{"keyword_ids": []int64{other}}}}, "clusters[0].keyword_ids: no keyword"},
			{"ForeignCluster", map[string]any{"clusters": []map[string]any{{"id": 999999, "keyword_ids": []int64{ids["trail running"]}}}}, "clusters[0].id"},
			{"NoClusters", map[string]any{"clusters": []any{}}, "clusters"},
			{"EmptyCluster", map[string]any{"clusters": []map[string]any{{"keyword_ids": []int64{}}}}, "keyword_ids"},
			{"EmptyName", map[string]any{"name": ""}, "name"},
			{"BadClusterName", map[string]any{"clusters": []map[string]any{{"name": "a\u0007", "keyword_ids": []int64{ids["trail running"]}}}}, "clusters[0].name"},
		}
		for _, c := range bad {
			if r := f.e.do(t, "PUT", path, f.edATok, c.body); r.Code != 422 || !strings.Contains(r.Detail(), c.detail) {
				t.Errorf("%s: %d %s; want 422 with %q", c.name, r.Code, r.Body, c.detail)
			}
		}
		if r := f.e.do(t, "GET", path, f.edATok, nil); stratRender(r.Data()) != want {
			t.Fatalf("a refused edit changed %s", r.Body)
		}
		if r := f.e.do(t, "PUT", path, f.edBTok, map[string]any{"name": "x"}); r.Code != 404 {
			t.Errorf("another environment's editor: %d", r.Code)
		}
	})

	t.Run("ToCampaign", func(t *testing.T) {
		ctx := context.Background()
		// One keyword is in a campaign already: it stays there.
		if _, err := f.e.app.DB.CreateCampaign(ctx, f.envA, store.CampaignInput{Name: "Other", Target: "astro", PostStatus: "draft", Cadence: 1,
			Status: store.CampaignDraft}, []int64{ids["how to clean suede"]}, f.edA.ID); err != nil {
			t.Fatal(err)
		}
		agentB := agCreate(t, f.e, f.edBTok, map[string]any{"name": "B writer", "kind": "writer", "environment_id": f.envB})
		to := path + "/to-campaign"
		for _, c := range []struct {
			body   map[string]any
			code   int
			detail string
		}{
			{map[string]any{}, 422, "target"},
			{map[string]any{"target": "medium"}, 422, "target"},
			{map[string]any{"target": "astro", "cadence": 0.5}, 422, "cadence"},
			{map[string]any{"target": "astro", "post_status": "live"}, 422, "post_status"},
			{map[string]any{"target": "astro", "agent_id": agID(agentB)}, 422, "agent_id"},
			{map[string]any{"target": "astro", "archetype_id": 999999}, 422, "archetype_id"},
			{map[string]any{"target": "astro", "name": "Other"}, 409, "name"},
		} {
			if r := f.e.do(t, "POST", to, f.edATok, c.body); r.Code != c.code || !strings.Contains(r.Detail(), c.detail) {
				t.Errorf("%v: %d %s; want %d with %q", c.body, r.Code, r.Body, c.code, c.detail)
			}
		}
		r := f.e.do(t, "POST", to, f.edATok, map[string]any{"target": "wordpress", "cadence": 2})
		if r.Code != 201 || r.Data()["name"] != "Shoes" || r.Data()["status"] != "draft" || r.Data()["keywords_added"] != 6.0 ||
			fmt.Sprint(r.Data()["skipped_keyword_ids"]) != fmt.Sprintf("[%d]", ids["how to clean suede"]) {
			t.Fatalf("to-campaign: %d %s", r.Code, r.Body)
		}
		cid := int64(r.Data()["campaign_id"].(float64))
		c, err := f.e.app.DB.CampaignByID(ctx, cid)
		if err != nil || c.Target != "wordpress" || c.Cadence != 2 || c.EnvironmentID != f.envA {
			t.Fatalf("campaign %+v %v", c, err)
		}
		kws, _, err := f.e.app.DB.ListCampaignKeywords(ctx, cid, store.Page{Page: 1, PerPage: 50})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, k := range kws {
			order = append(order, k.Keyword)
		}
		// Cluster by cluster, each pillar first.
		if got := strings.Join(order, ", "); got != "running shoes, best running shoes, running shoes for women, cleaning suede shoes, "+
			"trail running tips, trail running" {
			t.Fatalf("campaign keywords: %s", got)
		}
		if d := f.e.do(t, "GET", path, f.viewATok, nil).Data(); d["campaign_id"] != float64(cid) {
			t.Fatalf("campaign_id %v", d["campaign_id"])
		}
		if r := f.e.do(t, "POST", to, f.edATok, map[string]any{"target": "astro", "name": "Again"}); r.Code != 409 ||
			!strings.Contains(r.Detail(), "in a campaign already") {
			t.Fatalf("again: %d %s", r.Code, r.Body)
		}
	})

	t.Run("ListAndDelete", func(t *testing.T) {
		r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/strategies?environment_id=%d&status=ready&sort=name", f.envA), f.viewATok, nil)
		if r.Code != 200 || r.Data()["total"] != 1.0 || agItems(r.Data())[0]["clusters"] != nil {
			t.Fatalf("list: %d %s", r.Code, r.Body)
		}
		for _, q := range []string{"sort=score", "status=built", fmt.Sprintf("environment_id=%d", f.envB)} {
			if r := f.e.do(t, "GET", "/api/seo/strategies?"+q, f.edATok, nil); r.Code != 422 && r.Code != 404 {
				t.Errorf("%s: %d", q, r.Code)
			}
		}
		if r := f.e.do(t, "DELETE", path, f.edBTok, nil); r.Code != 404 {
			t.Fatalf("another environment's editor deletes: %d", r.Code)
		}
		if r := f.e.do(t, "DELETE", path, f.edATok, nil); r.Code != 200 {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		if r := f.e.do(t, "GET", path, f.edATok, nil); r.Code != 404 {
			t.Fatalf("deleted: %d", r.Code)
		}
		if _, err := f.e.app.DB.KeywordByID(context.Background(), ids["running shoes"]); err != nil {
			t.Fatalf("its keywords stay: %v", err)
		}
	})
}

// stratCoffee is the SERP set of the strategy package's tests, with the
// links SerpApi answers for each keyword.
var stratCoffee = map[string]struct {
	volume int64
	links  []string
}{
	"cold brew coffee":      {5000, stratLinks("brew", 1, 10)},
	"how to make cold brew": {3000, append(stratLinks("brew", 1, 3), stratLinks("howto", 1, 7)...)},
	"cold brew ratio":       {1000, append(stratLinks("brew", 2, 2), stratLinks("ratio", 1, 8)...)},
	"espresso machine":      {8000, stratLinks("machine", 1, 10)},
	"best espresso machine": {2000, append(stratLinks("machine", 3, 4), stratLinks("best", 1, 6)...)},
	"french press":          {-1, nil},
}

func stratLinks(site string, from, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("https://www.%s.example/%d/", site, from+i)
	}
	return out
}

func TestStrategySERP(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	serp := newSERPFake(t)
	vols := map[string]int64{}
	for kw, d := range stratCoffee {
		vols[kw] = d.volume
		serp.organic[kw] = d.links
	}
	// More than ten results: only the top ten count.
	serp.organic["espresso machine"] = append(serp.organic["espresso machine"], stratLinks("best", 1, 6)...)
	ids := stratKeywords(t, f.e, f.envA, vols)
	cred := f.e.credential(t, "serp", serp.srv.URL, "", &f.envA)
	agRunJobs(t, f.e)

	searches := func() int {
		n := 0
		for _, c := range serp.Calls() {
			if c.Get("engine") == "google" {
				n++
			}
		}
		return n
	}
	three := "espresso machine=espresso machine: best espresso machine | cold brew coffee=cold brew coffee: how to make cold brew | " +
		"cold brew ratio=cold brew ratio:  | french press=french press: "
	st := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee", "method": "serp"})
	if st["status"] != "ready" || st["used_method"] != "serp" || st["notes"] != "" || st["min_shared"] != 3.0 {
		t.Fatalf("strategy %v", st)
	}
	if got := stratRender(st); got != three {
		t.Fatalf("clusters\n got  %s\n want %s", got, three)
	}
	if n := searches(); n != 6 {
		t.Fatalf("%d searches; want one per keyword", n)
	}
	if q := serp.Calls()[0]; q.Get("hl") != "en" || q.Get("api_key") != "sk-test-good-key-0001" {
		t.Errorf("search %v", q)
	}

	// The SERP data is stored: another build with N = 2 asks nothing.
	st = stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 2", "min_shared": 2})
	want := "espresso machine=espresso machine: best espresso machine | cold brew coffee=cold brew coffee: how to make cold brew, cold brew ratio | " +
		"french press=french press: "
	if got := stratRender(st); got != want || st["used_method"] != "serp" || searches() != 6 {
		t.Fatalf("N=2: %s (%d searches)\nwant %s", got, searches(), want)
	}
	// refresh_serp fetches again; a keyword renamed since is fetched again
	// without it.
	stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 3", "refresh_serp": true})
	if n := searches(); n != 12 {
		t.Fatalf("%d searches after refresh_serp; want 12", n)
	}
	if _, err := f.e.app.DB.UpdateKeyword(context.Background(), ids["french press"], store.KeywordUpdate{Keyword: new("French press coffee")}); err != nil {
		t.Fatal(err)
	}
	stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 4"})
	if calls := serp.Calls(); len(calls) != 13 || calls[12].Get("q") != "French press coffee" {
		t.Fatalf("after a rename: %d calls, last %v", len(calls), calls[len(calls)-1])
	}

	three = strings.Replace(three, "french press=french press", "French press coffee=French press coffee", 1)
	// SerpApi failing: the stored data serves, with a note.
	serp.Fail(true)
	st = stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 5", "refresh_serp": true})
	if st["used_method"] != "serp" || !strings.Contains(st["notes"].(string), "serp search: serp: 401 Invalid API key") || stratRender(st) != three {
		t.Fatalf("with SerpApi failing: %v", st)
	}
	// Without the credential: method serp works from stored data.
	if err := f.e.app.DB.DeleteCredential(context.Background(), cred.ID); err != nil {
		t.Fatal(err)
	}
	st = stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 6", "method": "serp"})
	if st["used_method"] != "serp" || !strings.Contains(st["notes"].(string), "only stored SERP data was used") || stratRender(st) != three {
		t.Fatalf("from stored data: %v", st)
	}
	// A keyword without stored data and no credential: method serp is
	// refused, auto groups that keyword by words.
	stratKeywords(t, f.e, f.envA, map[string]int64{"espresso machine reviews": 700})
	r := f.e.do(t, "POST", "/api/seo/strategies", f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 7", "method": "serp"})
	if r.Code != 409 || !strings.Contains(r.Detail(), "method serp needs SERP data") {
		t.Fatalf("serp without data: %d %s", r.Code, r.Body)
	}
	st = stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Coffee 7"})
	if st["used_method"] != "serp" || !strings.Contains(st["notes"].(string), "1 keywords without SERP data were grouped by their words") ||
		!strings.Contains(stratRender(st), "espresso machine reviews=espresso machine reviews: ") {
		t.Fatalf("mixed: %v", st)
	}
	// Only some keywords, by id.
	st = stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Two", "method": "lexical",
		"keyword_ids": []int64{ids["cold brew coffee"], ids["cold brew ratio"], ids["cold brew coffee"]}})
	if stratRender(st) != "cold brew coffee=cold brew coffee: cold brew ratio" || len(st["keyword_ids"].([]any)) != 2 {
		t.Fatalf("by id: %v", st)
	}
}

func TestStrategyRefine(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	stratKeywords(t, f.e, f.envA, stratShoes)
	// No AI provider yet: refine is refused at once.
	r := f.e.do(t, "POST", "/api/seo/strategies", f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes", "refine": true})
	if r.Code != 409 {
		t.Fatalf("refine without a provider: %d %s", r.Code, r.Body)
	}
	answers := []string{"```json\n" + `{"clusters":[
		{"name":"Running shoes","keywords":["running shoes","best running shoes","running shoes for women","cleaning suede shoes"]},
		{"name":"Trail running","keywords":["trail running","trail running tips"]},
		{"name":"Shoe care","keywords":["how to clean suede"]}]}` + "\n```",
		"Here are the clusters: Running, Trail, Care", `{"clusters":[{"name":"All","keywords":["running shoes"]}]}`}
	llm := newScoutLLM(t, func(n int) string { return answers[min(n, len(answers))-1] })
	agConfigure(t, f.e, llm.url)
	agRunJobs(t, f.e)

	st := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes", "refine": true})
	want := "Running shoes=running shoes: best running shoes, running shoes for women, cleaning suede shoes | " +
		"Trail running=trail running: trail running tips | Shoe care=how to clean suede: "
	if got := stratRender(st); got != want || st["refine"] != true {
		t.Fatalf("refined\n got  %s\n want %s", got, want)
	}
	reqs := llm.Requests()
	if len(reqs) != 1 || !strings.Contains(lastUser(reqs[0]), `[{"keywords":["running shoes","best running shoes","running shoes for women"]}`) ||
		!strings.Contains(lastUser(reqs[0]), "by the words they share") {
		t.Fatalf("model requests %v", reqs)
	}
	if n, _ := agUsage(t, f.e, f.adminTok, "&source=scout"); n != 1 {
		t.Errorf("%d scout usage events; want 1", n)
	}
	// Two answers that do not hold (prose, then one leaving keywords out):
	// the clusters stay as grouped, with a note.
	st = stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes 2", "refine": true})
	if !strings.Contains(st["notes"].(string), `not refined by the model: its answer did not hold, twice: the answer leaves out "best running shoes"`) ||
		!strings.HasPrefix(stratRender(st), "running shoes=running shoes: best running shoes, running shoes for women | trail running=") {
		t.Fatalf("not refined: %v", st)
	}
	if reqs := llm.Requests(); len(reqs) != 3 || !strings.Contains(lastUser(reqs[2]), "could not be used: the answer holds no JSON object") {
		t.Fatalf("retry: %d requests", len(reqs))
	}
}

func TestStrategyRefused(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	ids := stratKeywords(t, f.e, f.envA, map[string]int64{"running shoes": 10, "trail running": 5})
	other := stratKeywords(t, f.e, f.envB, map[string]int64{"espresso": 10})["espresso"]
	base := func(mod map[string]any) map[string]any {
		m := map[string]any{"environment_id": f.envA, "name": "Plan"}
		for k, v := range mod {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	cases := []struct {
		name   string
		tok    string
		body   any
		code   int
		detail string
	}{
		{"Viewer", f.viewATok, base(nil), 403, ""},
		{"NoName", f.edATok, base(map[string]any{"name": nil}), 422, "name"},
		{"BlankName", f.edATok, base(map[string]any{"name": "   "}), 422, "name: must not be empty"},
		{"LongName", f.edATok, base(map[string]any{"name": strings.Repeat("x", 101)}), 422, "name"},
		{"Method", f.edATok, base(map[string]any{"method": "kmeans"}), 422, "method"},
		{"MinSharedLow", f.edATok, base(map[string]any{"min_shared": 0}), 422, "min_shared"},
		{"MinSharedHigh", f.edATok, base(map[string]any{"min_shared": 11}), 422, "min_shared"},
		{"SimilarityLow", f.edATok, base(map[string]any{"similarity": 0.01}), 422, "similarity"},
		{"SimilarityHigh", f.edATok, base(map[string]any{"similarity": 1.5}), 422, "similarity"},
		{"NoKeywordIDs", f.edATok, base(map[string]any{"keyword_ids": []int64{}}), 422, "keyword_ids"},
		{"ForeignKeyword", f.edATok, base(map[string]any{"keyword_ids": []int64{ids["running shoes"], other}}), 422,
			fmt.Sprintf("keyword_ids: no keyword with id %d", other)},
		{"AnotherEnvironment", f.edATok, base(map[string]any{"environment_id": f.envB}), 422, "environment_id: no environment"},
		{"NothingToGroup", f.edATok, base(map[string]any{"environment_id": f.envC}), 409, "has no keywords to group"},
		{"SERPWithoutData", f.edATok, base(map[string]any{"method": "serp"}), 409, "method serp needs SERP data: no serp credential"},
		{"RefineWithoutProvider", f.edATok, base(map[string]any{"refine": true}), 409, ""},
		{"NotJSON", f.edATok, "[1]", 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.e.do(t, "POST", "/api/seo/strategies", c.tok, c.body)
			if r.Code != c.code || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("%d %s; want %d with %q", r.Code, r.Body, c.code, c.detail)
			}
		})
	}
	// Queued (no job runner yet): it cannot be edited, made a campaign or
	// applied.
	r := f.e.do(t, "POST", "/api/seo/strategies", f.edATok, base(nil))
	if r.Code != 202 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	path := fmt.Sprintf("/api/seo/strategies/%d", agID(r.Data()))
	if r := f.e.do(t, "PUT", path, f.edATok, map[string]any{"name": "x"}); r.Code != 409 || !strings.Contains(r.Detail(), "is being built") {
		t.Fatalf("edit while queued: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "POST", path+"/to-campaign", f.edATok, map[string]any{"target": "astro"}); r.Code != 409 {
		t.Fatalf("campaign while queued: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "POST", path+"/apply", f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "only a ready strategy") {
		t.Fatalf("apply while queued: %d %s", r.Code, r.Body)
	}
	// A keyword deleted before the build leaves it; none left fails it.
	for _, id := range ids {
		if err := f.e.app.DB.DeleteKeyword(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	agRunJobs(t, f.e)
	if st := stratWait(t, f.e, f.edATok, agID(r.Data())); st["status"] != "failed" || !strings.Contains(st["error"].(string), "none of the strategy's keywords is left") {
		t.Fatalf("build without keywords: %v", st)
	}
	for _, p := range []string{"/api/seo/strategies/999999", "/api/seo/strategies/0"} {
		if r := f.e.do(t, "GET", p, f.edATok, nil); r.Code != 404 && r.Code != 422 {
			t.Errorf("%s: %d", p, r.Code)
		}
	}
}

// TestStrategyApply labels the keywords with their clusters' names:
// normalised, skipping the deleted, leaving (or with clear_others
// clearing) the others, and never another environment's.
func TestStrategyApply(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	ctx := context.Background()
	ids := stratKeywords(t, f.e, f.envA, stratShoes)
	other := stratKeywords(t, f.e, f.envB, map[string]int64{"running shoes": 10})["running shoes"]
	label := func(id int64, cluster string) {
		t.Helper()
		if _, err := f.e.app.DB.UpdateKeyword(ctx, id, store.KeywordUpdate{Cluster: &cluster}); err != nil {
			t.Fatal(err)
		}
	}
	clusterOf := func(id int64) string {
		t.Helper()
		k, err := f.e.app.DB.KeywordByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return k.Cluster
	}
	label(other, "B label")
	agRunJobs(t, f.e)
	st := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes", "method": "lexical"})
	if c := clusterOf(ids["running shoes"]); c != "" {
		t.Fatalf("the build labelled a keyword %q: only apply does", c)
	}
	path := fmt.Sprintf("/api/seo/strategies/%d", agID(st))
	cl := stratClusterIDs(st)
	// Names as an edit may leave them: inner runs of spaces (a no-break
	// one too) and a decomposed è.
	r := f.e.do(t, "PUT", path, f.edATok, map[string]any{"clusters": []map[string]any{
		{"id": cl[0], "name": "  Running \u00a0 shoes ", "keyword_ids": []int64{ids["running shoes"], ids["best running shoes"], ids["running shoes for women"]}},
		{"id": cl[1], "name": "Trail running", "keyword_ids": []int64{ids["trail running"], ids["trail running tips"]}},
		{"id": cl[2], "name": "Sue\u0300de care", "keyword_ids": []int64{ids["cleaning suede shoes"], ids["how to clean suede"]}},
	}})
	if r.Code != 200 {
		t.Fatalf("edit: %d %s", r.Code, r.Body)
	}
	label(ids["trail running"], "Trail running") // labelled so already
	label(ids["best running shoes"], "old")
	espresso := stratKeywords(t, f.e, f.envA, map[string]int64{"espresso": 50})["espresso"] // in no cluster
	label(espresso, "coffee")
	if err := f.e.app.DB.DeleteKeyword(ctx, ids["trail running tips"]); err != nil {
		t.Fatal(err)
	}
	before, err := f.e.app.DB.KeywordByID(ctx, ids["trail running"])
	if err != nil {
		t.Fatal(err)
	}

	apply := path + "/apply"
	for _, c := range []struct {
		name, tok, path string
		code            int
		detail          string
	}{
		{"Viewer", f.viewATok, apply, 403, ""},
		{"AnotherEnvironment", f.edBTok, apply, 404, "strategy not found"},
		{"Unknown", f.edATok, "/api/seo/strategies/999999/apply", 404, "strategy not found"},
		{"BadClearOthers", f.edATok, apply + "?clear_others=maybe", 422, "clear_others"},
		{"UnknownParameter", f.edATok, apply + "?clear=true", 422, "clear"},
	} {
		if r := f.e.do(t, "POST", c.path, c.tok, nil); r.Code != c.code || !strings.Contains(r.Detail(), c.detail) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, r.Code, r.Body, c.code, c.detail)
		}
	}
	if c := clusterOf(ids["running shoes"]); c != "" {
		t.Fatalf("a refused apply labelled %q", c)
	}

	want := func(r resp, changed, keywords, cleared, missing float64) {
		t.Helper()
		d := r.Data()
		if r.Code != 200 || d["changed"] != changed || d["keywords"] != keywords || d["cleared"] != cleared || d["missing_keywords"] != missing ||
			d["strategy_id"] != float64(agID(st)) {
			t.Fatalf("apply: %d %s; want changed %v, keywords %v, cleared %v, missing_keywords %v", r.Code, r.Body, changed, keywords, cleared, missing)
		}
	}
	// Six keywords left, one of them labelled so already.
	want(f.e.do(t, "POST", apply, f.edATok, nil), 5, 6, 0, 1)
	for kw, c := range map[string]string{"running shoes": "Running shoes", "best running shoes": "Running shoes", "running shoes for women": "Running shoes",
		"trail running": "Trail running", "cleaning suede shoes": "Suède care", "how to clean suede": "Suède care"} {
		if got := clusterOf(ids[kw]); got != c {
			t.Errorf("%s: cluster %q, want %q", kw, got, c)
		}
	}
	if after, _ := f.e.app.DB.KeywordByID(ctx, ids["trail running"]); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("a keyword labelled so already was written: updated_at %v, was %v", after.UpdatedAt, before.UpdatedAt)
	}
	if clusterOf(espresso) != "coffee" || clusterOf(other) != "B label" {
		t.Fatalf("without clear_others other keywords keep theirs: %q, %q", clusterOf(espresso), clusterOf(other))
	}
	// The keyword list finds a cluster by the name it shows.
	for name, n := range map[string]float64{"Running shoes": 3, "Suède care": 2, " Trail running ": 1} {
		q := url.Values{"environment_id": {fmt.Sprint(f.envA)}, "cluster": {name}}
		if r := f.e.do(t, "GET", "/api/seo/keywords?"+q.Encode(), f.viewATok, nil); r.Code != 200 || r.Data()["total"] != n {
			t.Errorf("cluster=%q: %d %s; want %v keywords", name, r.Code, r.Body, n)
		}
	}
	// Again: nothing to change. Then clear_others: the environment's
	// other keyword loses its label, another environment's keeps it.
	want(f.e.do(t, "POST", apply, f.edATok, nil), 0, 6, 0, 1)
	want(f.e.do(t, "POST", apply+"?clear_others=true", f.edATok, nil), 1, 6, 1, 1)
	if clusterOf(espresso) != "" || clusterOf(other) != "B label" || clusterOf(ids["running shoes"]) != "Running shoes" {
		t.Fatalf("clear_others: %q, %q, %q", clusterOf(espresso), clusterOf(other), clusterOf(ids["running shoes"]))
	}
	// An edit moves a keyword: applying again relabels it alone.
	r = f.e.do(t, "PUT", path, f.edATok, map[string]any{"clusters": []map[string]any{
		{"id": cl[0], "name": "Running shoes", "keyword_ids": []int64{ids["running shoes"], ids["best running shoes"]}},
		{"id": cl[2], "name": "Suède care", "keyword_ids": []int64{ids["cleaning suede shoes"], ids["how to clean suede"], ids["running shoes for women"]}},
	}})
	if r.Code != 200 {
		t.Fatalf("edit: %d %s", r.Code, r.Body)
	}
	// trail running left the strategy: without clear_others it keeps its
	// label; the count of missing keywords starts again from the edit.
	want(f.e.do(t, "POST", apply, f.edATok, nil), 1, 5, 0, 0)
	if clusterOf(ids["running shoes for women"]) != "Suède care" || clusterOf(ids["trail running"]) != "Trail running" {
		t.Fatalf("after the edit: %q, %q", clusterOf(ids["running shoes for women"]), clusterOf(ids["trail running"]))
	}
	// None of its keywords left: nothing to label.
	for _, kw := range []string{"running shoes", "best running shoes", "cleaning suede shoes", "how to clean suede", "running shoes for women"} {
		if err := f.e.app.DB.DeleteKeyword(ctx, ids[kw]); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.e.do(t, "POST", apply+"?clear_others=true", f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "no keywords left") {
		t.Fatalf("empty strategy: %d %s", r.Code, r.Body)
	}
	if clusterOf(ids["trail running"]) != "Trail running" {
		t.Fatalf("a refused clear_others cleared a keyword")
	}
}

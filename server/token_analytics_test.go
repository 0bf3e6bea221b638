package server_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// taWorld is a seeded set of usage events across two environments, three
// users and two agents.
type taWorld struct {
	e                   *env
	admin, ann, bob     string // tokens
	annID, bobID, admID int64
	envA, envB          int64
	agentA, agentB      int64
	events              []*store.UsageEvent // with their ids, in insertion order
}

func taTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func taCost(v float64) *float64 { return &v }

func newTAWorld(t *testing.T) *taWorld {
	t.Helper()
	ctx := context.Background()
	w := &taWorld{e: newEnv(t)}
	e := w.e
	adm, admin := e.user(t, "admin", store.RoleAdmin)
	ann, annTok := e.user(t, "ann", store.RoleViewer)
	bob, bobTok := e.user(t, "bob", store.RoleEditor)
	w.admin, w.ann, w.bob, w.annID, w.bobID, w.admID = admin, annTok, bobTok, ann.ID, bob.ID, adm.ID
	w.envA, w.envB = cfgEnvironment(t, e, "Alpha"), cfgEnvironment(t, e, "Beta")
	if _, err := e.app.DB.SetUserEnvironments(ctx, ann.ID, []int64{w.envA}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.DB.SetUserEnvironments(ctx, bob.ID, []int64{w.envB}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		name string
		env  int64
		dest *int64
	}{{"Writer A", w.envA, &w.agentA}, {"SEO B", w.envB, &w.agentB}} {
		ag, err := e.app.DB.CreateAgent(ctx, store.AgentInput{EnvironmentID: &a.env, Name: a.name, Kind: "writer", IsActive: true}, adm.ID)
		if err != nil {
			t.Fatal(err)
		}
		*a.dest = ag.ID
	}
	A, B := &w.envA, &w.envB
	seed := []store.UsageEvent{
		{CreatedAt: taTime("2026-11-01T09:00:00Z"), Provider: "openai", Model: "gpt-4o-mini", InputTokens: 1000, OutputTokens: 500, CachedTokens: 200,
			Cost: store.MicrosOfUSD(taCost(0.001)), LatencyMS: 100, Status: "ok", Source: "execution", UserID: &w.annID, EnvironmentID: A, AgentID: &w.agentA},
		{CreatedAt: taTime("2026-11-01T15:30:00Z"), Provider: "openai", Model: "gpt-4o", InputTokens: 2000, OutputTokens: 1000,
			Cost: store.MicrosOfUSD(taCost(0.015)), LatencyMS: 200, Status: "ok", Source: "chat", UserID: &w.annID, EnvironmentID: A},
		{CreatedAt: taTime("2026-11-02T08:00:00Z"), Provider: "anthropic", Model: "claude-sonnet-4-5", InputTokens: 3000, OutputTokens: 100,
			Cost: store.MicrosOfUSD(taCost(0.0105)), LatencyMS: 300, Status: "ok", Source: "execution", UserID: &w.bobID, EnvironmentID: B, AgentID: &w.agentB},
		{CreatedAt: taTime("2026-11-02T10:00:00Z"), Provider: "openai_compatible", Model: "llama3", InputTokens: 500, OutputTokens: 500,
			LatencyMS: 400, Status: "ok", Source: "live", UserID: &w.bobID, EnvironmentID: B},
		{CreatedAt: taTime("2026-11-03T12:00:00Z"), Provider: "openai", Model: "gpt-4o-mini", LatencyMS: 50, Status: "error",
			Error: `=HYPERLINK("http://evil.example","click")`, Source: "execution", UserID: &w.admID, EnvironmentID: A, AgentID: &w.agentA},
		{CreatedAt: taTime("2026-11-03T13:00:00Z"), Provider: "openai", Model: "gpt-4o-mini", InputTokens: 100, OutputTokens: 50,
			Cost: store.MicrosOfUSD(taCost(0.0001)), LatencyMS: 60, Status: "ok", Source: "scout", UserID: &w.annID},
		{CreatedAt: taTime("2026-11-03T14:00:00Z"), Provider: "openai_compatible", Model: "=cmd|' /C calc'!A0", InputTokens: 10, OutputTokens: 10,
			LatencyMS: 70, Status: "ok", Source: "chat", UserID: &w.bobID},
		{CreatedAt: taTime("2026-10-10T12:00:00Z"), Provider: "openai", Model: "gpt-4o-mini", InputTokens: 100, OutputTokens: 100,
			Cost: store.MicrosOfUSD(taCost(0.5)), LatencyMS: 80, Status: "ok", Source: "autopilot", UserID: &w.annID, EnvironmentID: A},
		{CreatedAt: taTime("2026-11-20T23:59:59.999Z"), Provider: "openai", Model: "gpt-4o", InputTokens: 10, OutputTokens: 10,
			Cost: store.MicrosOfUSD(taCost(0.002)), LatencyMS: 90, Status: "ok", Source: "execution", UserID: &w.admID, EnvironmentID: B},
	}
	for _, ev := range seed {
		id, err := e.app.DB.RecordUsage(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		ev.ID = id
		w.events = append(w.events, &ev)
	}
	return w
}

// pick returns the seeded events that match.
func (w *taWorld) pick(match func(*store.UsageEvent) bool) []*store.UsageEvent {
	var out []*store.UsageEvent
	for _, ev := range w.events {
		if match == nil || match(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// visibleTo is the tenancy rule for a non-admin granted envs.
func taVisibleTo(uid int64, envs ...int64) func(*store.UsageEvent) bool {
	return func(ev *store.UsageEvent) bool {
		if ev.EnvironmentID == nil {
			return ev.UserID != nil && *ev.UserID == uid
		}
		for _, e := range envs {
			if *ev.EnvironmentID == e {
				return true
			}
		}
		return false
	}
}

func taAnd(ps ...func(*store.UsageEvent) bool) func(*store.UsageEvent) bool {
	return func(ev *store.UsageEvent) bool {
		for _, p := range ps {
			if p != nil && !p(ev) {
				return false
			}
		}
		return true
	}
}

func taFrom(s string) func(*store.UsageEvent) bool {
	t := taTime(s)
	return func(ev *store.UsageEvent) bool { return !ev.CreatedAt.Before(t) }
}

func taBefore(s string) func(*store.UsageEvent) bool {
	t := taTime(s)
	return func(ev *store.UsageEvent) bool { return ev.CreatedAt.Before(t) }
}

func taIDIs(p *int64, v int64) bool { return p != nil && *p == v }

// taTotals is the expected totals of a set of events.
func taTotals(evs []*store.UsageEvent) map[string]float64 {
	m := map[string]float64{"calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "cost_usd": 0,
		"unpriced_calls": 0, "avg_latency_ms": 0}
	for _, ev := range evs {
		m["calls"]++
		if ev.Status == "error" {
			m["errors"]++
		}
		m["input_tokens"] += float64(ev.InputTokens)
		m["output_tokens"] += float64(ev.OutputTokens)
		m["cached_tokens"] += float64(ev.CachedTokens)
		if ev.Cost != nil {
			m["cost_usd"] += ev.Cost.USD()
		} else {
			m["unpriced_calls"]++
		}
		m["avg_latency_ms"] += float64(ev.LatencyMS)
	}
	if len(evs) > 0 {
		m["avg_latency_ms"] /= float64(len(evs))
	}
	return m
}

func taCheckTotals(t *testing.T, what string, got map[string]any, evs []*store.UsageEvent) {
	t.Helper()
	tot := taTotals(evs)
	for k, want := range tot {
		g, ok := got[k].(float64)
		if k == "cost_usd" && tot["calls"] > 0 && tot["unpriced_calls"] == tot["calls"] {
			// None had a price: the cost is unknown, not 0.
			ok, g, want = got[k] == nil, 0, 0
		}
		if !ok || math.Abs(g-want) > 1e-9 {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], want)
		}
	}
}

func taIDs(evs []*store.UsageEvent) []int64 {
	out := make([]int64, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}

// newestFirst orders like the usage list.
func taNewestFirst(evs []*store.UsageEvent) []*store.UsageEvent {
	out := append([]*store.UsageEvent(nil), evs...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out
}

func (w *taWorld) get(t *testing.T, tok, path string, q url.Values) resp {
	t.Helper()
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return w.e.do(t, "GET", path, tok, nil)
}

func taQuery(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestTokenAnalyticsUsageList(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	s := func(id int64) string { return strconv.FormatInt(id, 10) }
	cases := []struct {
		name  string
		q     url.Values
		match func(*store.UsageEvent) bool
	}{
		{"All", nil, nil},
		{"FromDate", taQuery("from", "2026-11-02"), taFrom("2026-11-02T00:00:00Z")},
		{"ToDateIsEndOfDay", taQuery("to", "2026-11-02"), taBefore("2026-11-03T00:00:00Z")},
		{"DateRange", taQuery("from", "2026-11-01", "to", "2026-11-01"), taAnd(taFrom("2026-11-01T00:00:00Z"), taBefore("2026-11-02T00:00:00Z"))},
		{"RFC3339Range", taQuery("from", "2026-11-01T12:00:00Z", "to", "2026-11-02T09:00:00Z"),
			taAnd(taFrom("2026-11-01T12:00:00Z"), taBefore("2026-11-02T09:00:00Z"))},
		{"RFC3339ToExclusive", taQuery("from", "2026-11-01T00:00:00Z", "to", "2026-11-02T08:00:00Z"),
			taAnd(taFrom("2026-11-01T00:00:00Z"), taBefore("2026-11-02T08:00:00Z"))},
		{"RFC3339FromInclusiveWithOffset", taQuery("from", "2026-11-01T10:00:00+01:00", "to", "2026-11-01T09:00:00.001Z"),
			taAnd(taFrom("2026-11-01T09:00:00Z"), taBefore("2026-11-01T09:00:00.001Z"))},
		{"RFC3339Milliseconds", taQuery("from", "2026-11-20T23:59:59.999Z"), taFrom("2026-11-20T23:59:59.999Z")},
		{"Environment", taQuery("environment_id", s(w.envA)), func(ev *store.UsageEvent) bool { return taIDIs(ev.EnvironmentID, w.envA) }},
		{"User", taQuery("user_id", s(w.bobID)), func(ev *store.UsageEvent) bool { return taIDIs(ev.UserID, w.bobID) }},
		{"Agent", taQuery("agent_id", s(w.agentA)), func(ev *store.UsageEvent) bool { return taIDIs(ev.AgentID, w.agentA) }},
		{"Model", taQuery("model", "gpt-4o"), func(ev *store.UsageEvent) bool { return ev.Model == "gpt-4o" }},
		{"ModelIsExact", taQuery("model", "gpt-4"), func(ev *store.UsageEvent) bool { return false }},
		{"Source", taQuery("source", "execution"), func(ev *store.UsageEvent) bool { return ev.Source == "execution" }},
		{"SourceTest", taQuery("source", "test"), func(ev *store.UsageEvent) bool { return false }},
		{"StatusError", taQuery("status", "error"), func(ev *store.UsageEvent) bool { return ev.Status == "error" }},
		{"StatusOK", taQuery("status", "ok"), func(ev *store.UsageEvent) bool { return ev.Status == "ok" }},
		{"Combined", taQuery("environment_id", s(w.envA), "user_id", s(w.annID), "from", "2026-11-01", "source", "chat"),
			func(ev *store.UsageEvent) bool {
				return taIDIs(ev.EnvironmentID, w.envA) && taIDIs(ev.UserID, w.annID) && !ev.CreatedAt.Before(taTime("2026-11-01T00:00:00Z")) && ev.Source == "chat"
			}},
		{"MissingEnvironmentForAdmin", taQuery("environment_id", "9999"), func(ev *store.UsageEvent) bool { return false }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.get(t, w.admin, "/api/token-analytics/usage", c.q)
			if r.Code != 200 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			want := taIDs(taNewestFirst(w.pick(c.match)))
			var got []int64
			for _, it := range r.Data()["items"].([]any) {
				got = append(got, int64(it.(map[string]any)["id"].(float64)))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || int(r.Data()["total"].(float64)) != len(want) {
				t.Fatalf("got %v (total %v), want %v", got, r.Data()["total"], want)
			}
		})
	}

	t.Run("Fields", func(t *testing.T) {
		r := w.get(t, w.admin, "/api/token-analytics/usage", taQuery("model", "claude-sonnet-4-5"))
		it := r.Data()["items"].([]any)[0].(map[string]any)
		ev := w.events[2]
		want := map[string]any{"id": float64(ev.ID), "created_at": "2026-11-02T08:00:00.000Z", "provider": "anthropic", "model": "claude-sonnet-4-5",
			"input_tokens": 3000.0, "output_tokens": 100.0, "cached_tokens": 0.0, "cost_usd": 0.0105, "latency_ms": 300.0, "status": "ok",
			"error": "", "source": "execution", "user_id": float64(w.bobID), "environment_id": float64(w.envB), "agent_id": float64(w.agentB),
			"credential_id": nil, "estimated": false}
		for k, v := range want {
			if it[k] != v {
				t.Errorf("%s = %#v, want %#v", k, it[k], v)
			}
		}
		// An unpriced event has a null cost, not 0.
		r = w.get(t, w.admin, "/api/token-analytics/usage", taQuery("model", "llama3"))
		it = r.Data()["items"].([]any)[0].(map[string]any)
		if v, ok := it["cost_usd"]; !ok || v != nil {
			t.Errorf("unpriced cost_usd = %#v (present %v), want null", v, ok)
		}
	})

	t.Run("Pagination", func(t *testing.T) {
		all := taIDs(taNewestFirst(w.events))
		var seen []int64
		for page := 1; page <= 4; page++ {
			r := w.get(t, w.admin, "/api/token-analytics/usage", taQuery("per_page", "4", "page", strconv.Itoa(page)))
			d := r.Data()
			if r.Code != 200 || d["total"].(float64) != float64(len(all)) || d["page"].(float64) != float64(page) || d["per_page"].(float64) != 4 {
				t.Fatalf("page %d: %d %s", page, r.Code, r.Body)
			}
			items := d["items"].([]any)
			wantN := min(4, max(0, len(all)-(page-1)*4))
			if len(items) != wantN {
				t.Fatalf("page %d: %d items, want %d", page, len(items), wantN)
			}
			for _, it := range items {
				seen = append(seen, int64(it.(map[string]any)["id"].(float64)))
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(all) {
			t.Fatalf("pages give %v, want %v", seen, all)
		}
	})
}

func TestTokenAnalyticsSummary(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	s := func(id int64) string { return strconv.FormatInt(id, 10) }
	cases := []struct {
		name     string
		q        url.Values
		match    func(*store.UsageEvent) bool
		from, to any
	}{
		{"All", nil, nil, nil, nil},
		{"November", taQuery("from", "2026-11-01", "to", "2026-11-30"), taFrom("2026-11-01T00:00:00Z"), "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z"},
		{"EnvironmentB", taQuery("environment_id", s(w.envB)), func(ev *store.UsageEvent) bool { return taIDIs(ev.EnvironmentID, w.envB) }, nil, nil},
		{"Errors", taQuery("status", "error"), func(ev *store.UsageEvent) bool { return ev.Status == "error" }, nil, nil},
		{"Nothing", taQuery("from", "2020-01-01", "to", "2020-01-02"), func(*store.UsageEvent) bool { return false }, "2020-01-01T00:00:00.000Z", "2020-01-03T00:00:00.000Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.get(t, w.admin, "/api/token-analytics/summary", c.q)
			if r.Code != 200 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			d := r.Data()
			taCheckTotals(t, "totals", d["totals"].(map[string]any), w.pick(c.match))
			if d["from"] != c.from || d["to"] != c.to {
				t.Errorf("range %v..%v, want %v..%v", d["from"], d["to"], c.from, c.to)
			}
		})
	}
	// The known figures, once by hand: 9 calls, 1 error, 3 unpriced, and
	// the known costs summed.
	tot := w.get(t, w.admin, "/api/token-analytics/summary", nil).Data()["totals"].(map[string]any)
	if tot["calls"] != 9.0 || tot["errors"] != 1.0 || tot["unpriced_calls"] != 3.0 || math.Abs(tot["cost_usd"].(float64)-0.5286) > 1e-9 ||
		tot["input_tokens"] != 6720.0 || tot["output_tokens"] != 2270.0 || tot["cached_tokens"] != 200.0 {
		t.Fatalf("totals: %v", tot)
	}
}

func TestTokenAnalyticsSeries(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	type point struct {
		key, label string
		match      func(*store.UsageEvent) bool
	}
	nov := taAnd(taFrom("2026-11-01T00:00:00Z"), taBefore("2026-11-04T00:00:00Z"))
	day := func(d string) func(*store.UsageEvent) bool {
		return func(ev *store.UsageEvent) bool { return ev.CreatedAt.Format("2006-01-02") == d }
	}
	model := func(m string) func(*store.UsageEvent) bool {
		return func(ev *store.UsageEvent) bool { return ev.Model == m }
	}
	agent := func(id int64) func(*store.UsageEvent) bool {
		return func(ev *store.UsageEvent) bool {
			if id == 0 {
				return ev.AgentID == nil
			}
			return taIDIs(ev.AgentID, id)
		}
	}
	envOf := func(id int64) func(*store.UsageEvent) bool {
		return func(ev *store.UsageEvent) bool {
			if id == 0 {
				return ev.EnvironmentID == nil
			}
			return taIDIs(ev.EnvironmentID, id)
		}
	}
	user := func(id int64) func(*store.UsageEvent) bool {
		return func(ev *store.UsageEvent) bool { return taIDIs(ev.UserID, id) }
	}
	source := func(src string) point {
		return point{src, "", func(ev *store.UsageEvent) bool { return ev.Source == src }}
	}
	s := func(id int64) string { return strconv.FormatInt(id, 10) }
	rng := taQuery("from", "2026-11-01", "to", "2026-11-03")
	withGroup := func(g string) url.Values {
		v := taQuery("from", "2026-11-01", "to", "2026-11-03")
		if g != "" {
			v.Set("group_by", g)
		}
		return v
	}
	cases := []struct {
		name    string
		q       url.Values
		groupBy string
		filter  func(*store.UsageEvent) bool
		points  []point // in the expected order
	}{
		{"DayIsDefault", rng, "day", nov, []point{{"2026-11-01", "", day("2026-11-01")}, {"2026-11-02", "", day("2026-11-02")}, {"2026-11-03", "", day("2026-11-03")}}},
		{"Day", withGroup("day"), "day", nov, []point{{"2026-11-01", "", day("2026-11-01")}, {"2026-11-02", "", day("2026-11-02")}, {"2026-11-03", "", day("2026-11-03")}}},
		// Costliest first; unpriced ones (cost 0 in the sum) last, by key.
		{"Model", withGroup("model"), "model", nov, []point{{"gpt-4o", "", model("gpt-4o")}, {"claude-sonnet-4-5", "", model("claude-sonnet-4-5")},
			{"gpt-4o-mini", "", model("gpt-4o-mini")}, {"=cmd|' /C calc'!A0", "", model("=cmd|' /C calc'!A0")}, {"llama3", "", model("llama3")}}},
		{"Agent", withGroup("agent"), "agent", nov, []point{{"", "", agent(0)}, {s(w.agentB), "SEO B", agent(w.agentB)}, {s(w.agentA), "Writer A", agent(w.agentA)}}},
		{"Environment", withGroup("environment"), "environment", nov, []point{{s(w.envA), "Alpha", envOf(w.envA)}, {s(w.envB), "Beta", envOf(w.envB)}, {"", "", envOf(0)}}},
		{"User", withGroup("user"), "user", nov, []point{{s(w.annID), "ann", user(w.annID)}, {s(w.bobID), "bob", user(w.bobID)}, {s(w.admID), "admin", user(w.admID)}}},
		// One request for what the Costs screen asked with a summary per source.
		{"Source", withGroup("source"), "source", nov, []point{source("chat"), source("execution"), source("scout"), source("live")}},
		{"SourceFiltered", taQuery("from", "2026-11-01", "to", "2026-11-03", "environment_id", s(w.envA), "group_by", "source"), "source",
			taAnd(nov, envOf(w.envA)), []point{source("chat"), source("execution")}},
		{"DayFiltered", taQuery("from", "2026-11-01", "to", "2026-11-03", "environment_id", s(w.envB)), "day",
			taAnd(nov, envOf(w.envB)), []point{{"2026-11-02", "", taAnd(day("2026-11-02"), envOf(w.envB))}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.get(t, w.admin, "/api/token-analytics/series", c.q)
			if r.Code != 200 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			d := r.Data()
			if d["group_by"] != c.groupBy || d["from"] != "2026-11-01T00:00:00.000Z" || d["to"] != "2026-11-04T00:00:00.000Z" {
				t.Errorf("group_by %v, range %v..%v", d["group_by"], d["from"], d["to"])
			}
			pts := d["points"].([]any)
			var keys, wantKeys []string
			for _, p := range pts {
				keys = append(keys, p.(map[string]any)["key"].(string))
			}
			for _, p := range c.points {
				wantKeys = append(wantKeys, p.key)
			}
			if fmt.Sprintf("%q", keys) != fmt.Sprintf("%q", wantKeys) {
				t.Fatalf("keys %q, want %q", keys, wantKeys)
			}
			var sum float64
			for i, p := range c.points {
				got := pts[i].(map[string]any)
				if got["label"] != p.label {
					t.Errorf("%s: label %q, want %q", p.key, got["label"], p.label)
				}
				evs := w.pick(taAnd(c.filter, p.match))
				taCheckTotals(t, "point "+p.key, got, evs)
				sum += got["calls"].(float64)
			}
			if want := len(w.pick(c.filter)); int(sum) != want {
				t.Errorf("the points hold %v calls, want %d", sum, want)
			}
		})
	}

	t.Run("DefaultWindowIs30Days", func(t *testing.T) {
		r := w.get(t, w.admin, "/api/token-analytics/series", nil)
		d := r.Data()
		// The clock is 2026-11-21: the window starts 29 days before that day.
		if r.Code != 200 || d["from"] != "2026-10-23T00:00:00.000Z" || d["to"] != nil || d["group_by"] != "day" {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		var keys []string
		for _, p := range d["points"].([]any) {
			keys = append(keys, p.(map[string]any)["key"].(string))
		}
		// The event of 2026-10-10 is outside.
		if fmt.Sprint(keys) != "[2026-11-01 2026-11-02 2026-11-03 2026-11-20]" {
			t.Fatalf("points %v", keys)
		}
		last := d["points"].([]any)[3].(map[string]any)
		taCheckTotals(t, "2026-11-20", last, w.pick(day("2026-11-20")))
	})
}

func TestTokenAnalyticsCosts(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	r := w.get(t, w.admin, "/api/token-analytics/costs", nil)
	if r.Code != 200 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	d := r.Data()
	// Default: the current month.
	if d["from"] != "2026-11-01T00:00:00.000Z" || d["to"] != nil {
		t.Fatalf("range %v..%v", d["from"], d["to"])
	}
	month := taFrom("2026-11-01T00:00:00Z")
	wantTotal := taTotals(w.pick(month))["cost_usd"]
	if got := d["total_cost_usd"].(float64); math.Abs(got-wantTotal) > 1e-9 || math.Abs(got-0.0286) > 1e-9 {
		t.Fatalf("total_cost_usd = %v, want %v", got, wantTotal)
	}
	byModel := map[string]float64{}
	for _, p := range d["by_model"].([]any) {
		pm := p.(map[string]any)
		byModel[pm["key"].(string)], _ = pm["cost_usd"].(float64) // null: a model without a price
	}
	wantModel := map[string]float64{}
	for _, ev := range w.pick(month) {
		c := 0.0
		if ev.Cost != nil {
			c = ev.Cost.USD()
		}
		wantModel[ev.Model] += c
	}
	if len(byModel) != len(wantModel) {
		t.Fatalf("by_model %v, want %v", byModel, wantModel)
	}
	for m, c := range wantModel {
		if math.Abs(byModel[m]-c) > 1e-9 {
			t.Errorf("by_model[%s] = %v, want %v", m, byModel[m], c)
		}
	}
	byEnv := map[string]string{}
	for _, p := range d["by_environment"].([]any) {
		pm := p.(map[string]any)
		byEnv[pm["key"].(string)] = fmt.Sprintf("%s %.4f", pm["label"], pm["cost_usd"])
	}
	want := map[string]string{fmt.Sprint(w.envA): "Alpha 0.0160", fmt.Sprint(w.envB): "Beta 0.0125", "": " 0.0001"}
	if fmt.Sprint(byEnv) != fmt.Sprint(want) {
		t.Fatalf("by_environment %v, want %v", byEnv, want)
	}

	// An explicit range includes October.
	r = w.get(t, w.admin, "/api/token-analytics/costs", taQuery("from", "2026-10-01", "to", "2026-11-30", "environment_id", fmt.Sprint(w.envA)))
	if got := r.Data()["total_cost_usd"].(float64); math.Abs(got-0.516) > 1e-9 {
		t.Fatalf("A since October: %v, want 0.516", got)
	}
}

func TestTokenAnalyticsExport(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	r := w.get(t, w.admin, "/api/token-analytics/export.csv", nil)
	if r.Code != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("%d %q", r.Code, r.Header.Get("Content-Type"))
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.Contains(cd, ".csv") {
		t.Errorf("Content-Disposition %q", cd)
	}
	rows, err := csv.NewReader(strings.NewReader(r.Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := "id created_at provider model input_tokens output_tokens cached_tokens cost_usd latency_ms status error source user_id environment_id agent_id credential_id estimated"
	if len(rows) == 0 || strings.Join(rows[0], " ") != header {
		t.Fatalf("header %v", rows)
	}
	if len(rows) != 1+len(w.events) {
		t.Fatalf("%d rows, want %d", len(rows)-1, len(w.events))
	}
	// Oldest first; one row per event.
	byID := map[string][]string{}
	var order []string
	for _, row := range rows[1:] {
		byID[row[0]] = row
		order = append(order, row[0])
	}
	oldest := taNewestFirst(w.events)
	var wantOrder []string
	for i := len(oldest) - 1; i >= 0; i-- {
		wantOrder = append(wantOrder, fmt.Sprint(oldest[i].ID))
	}
	if fmt.Sprint(order) != fmt.Sprint(wantOrder) {
		t.Fatalf("order %v, want %v", order, wantOrder)
	}
	first := byID[fmt.Sprint(w.events[0].ID)]
	if want := []string{fmt.Sprint(w.events[0].ID), "2026-11-01T09:00:00.000Z", "openai", "gpt-4o-mini", "1000", "500", "200", "0.001000", "100", "ok", "",
		"execution", fmt.Sprint(w.annID), fmt.Sprint(w.envA), fmt.Sprint(w.agentA), "", "false"}; fmt.Sprintf("%q", first) != fmt.Sprintf("%q", want) {
		t.Errorf("row %q\nwant %q", first, want)
	}
	// Formula-looking cells are defused; an unknown cost is empty, not 0.
	errRow := byID[fmt.Sprint(w.events[4].ID)]
	if errRow[10] != `'=HYPERLINK("http://evil.example","click")` || errRow[9] != "error" || errRow[7] != "" {
		t.Errorf("error row %q", errRow)
	}
	modelRow := byID[fmt.Sprint(w.events[6].ID)]
	if modelRow[3] != "'=cmd|' /C calc'!A0" || modelRow[7] != "" || modelRow[13] != "" {
		t.Errorf("model row %q", modelRow)
	}

	// Filters apply.
	r = w.get(t, w.admin, "/api/token-analytics/export.csv", taQuery("environment_id", fmt.Sprint(w.envB), "from", "2026-11-02"))
	rows, _ = csv.NewReader(strings.NewReader(r.Body)).ReadAll()
	if want := w.pick(taAnd(func(ev *store.UsageEvent) bool { return taIDIs(ev.EnvironmentID, w.envB) }, taFrom("2026-11-02T00:00:00Z"))); len(rows) != 1+len(want) {
		t.Fatalf("filtered: %d rows, want %d", len(rows)-1, len(want))
	}
	// Nothing matching: the header alone.
	r = w.get(t, w.admin, "/api/token-analytics/export.csv", taQuery("model", "none"))
	if rows, _ := csv.NewReader(strings.NewReader(r.Body)).ReadAll(); r.Code != 200 || len(rows) != 1 {
		t.Fatalf("empty export: %d %q", r.Code, r.Body)
	}
}

func TestTokenAnalyticsBadInput(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	endpoints := []string{"usage", "summary", "series", "costs", "export.csv"}
	cases := []struct {
		name      string
		q         url.Values
		detail    string
		endpoints []string // nil: all
	}{
		{"FromWord", taQuery("from", "yesterday"), "from: must be a date", nil},
		{"ToWord", taQuery("to", "tomorrow"), "to: must be a date", nil},
		{"FromBadDate", taQuery("from", "2026-13-01"), "from", nil},
		{"ToBeforeFrom", taQuery("from", "2026-11-03", "to", "2026-11-01"), "to: must be after from", nil},
		{"ToEqualsFrom", taQuery("from", "2026-11-03T00:00:00Z", "to", "2026-11-03T00:00:00Z"), "to: must be after from", nil},
		{"Source", taQuery("source", "x"), "source", nil},
		{"Status", taQuery("status", "failed"), "status", nil},
		{"UserZero", taQuery("user_id", "0"), "user_id", nil},
		{"EnvironmentWord", taQuery("environment_id", "alpha"), "environment_id", nil},
		{"AgentNegative", taQuery("agent_id", "-1"), "agent_id", nil},
		{"ModelTooLong", taQuery("model", strings.Repeat("m", 201)), "model", nil},
		{"GroupByWeek", taQuery("group_by", "week"), "group_by", []string{"series"}},
		{"PerPageZero", taQuery("per_page", "0"), "per_page", []string{"usage"}},
		{"PerPageHuge", taQuery("per_page", "201"), "per_page", []string{"usage"}},
		{"PageZero", taQuery("page", "0"), "page", []string{"usage"}},
	}
	for _, c := range cases {
		eps := c.endpoints
		if eps == nil {
			eps = endpoints
		}
		for _, ep := range eps {
			t.Run(c.name+"/"+ep, func(t *testing.T) {
				r := w.get(t, w.admin, "/api/token-analytics/"+ep, c.q)
				if r.Code != 422 || !strings.Contains(r.Detail(), c.detail) {
					t.Fatalf("got %d %s, want 422 with %q", r.Code, r.Body, c.detail)
				}
			})
		}
	}
	for _, ep := range endpoints {
		if r := w.get(t, "", "/api/token-analytics/"+ep, nil); r.Code != 401 {
			t.Fatalf("%s anonymous: %d", ep, r.Code)
		}
	}
}

func TestTokenAnalyticsTenancy(t *testing.T) {
	t.Parallel()
	w := newTAWorld(t)
	s := func(id int64) string { return strconv.FormatInt(id, 10) }
	users := []struct {
		name  string
		tok   string
		match func(*store.UsageEvent) bool
		own   int64 // a granted environment
		other int64 // one not granted
	}{
		{"ViewerGrantedA", w.ann, taVisibleTo(w.annID, w.envA), w.envA, w.envB},
		{"EditorGrantedB", w.bob, taVisibleTo(w.bobID, w.envB), w.envB, w.envA},
		{"Admin", w.admin, nil, w.envA, 0},
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			// The list.
			r := w.get(t, u.tok, "/api/token-analytics/usage", nil)
			want := taIDs(taNewestFirst(w.pick(u.match)))
			var got []int64
			for _, it := range r.Data()["items"].([]any) {
				got = append(got, int64(it.(map[string]any)["id"].(float64)))
			}
			if r.Code != 200 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("sees %v, want %v", got, want)
			}
			// The totals.
			taCheckTotals(t, "summary", w.get(t, u.tok, "/api/token-analytics/summary", nil).Data()["totals"].(map[string]any), w.pick(u.match))
			// The groupings.
			r = w.get(t, u.tok, "/api/token-analytics/series", taQuery("group_by", "environment", "from", "2026-01-01"))
			var keys []string
			for _, p := range r.Data()["points"].([]any) {
				keys = append(keys, p.(map[string]any)["key"].(string))
			}
			sort.Strings(keys)
			wantKeys := map[string]bool{}
			for _, ev := range w.pick(u.match) {
				k := ""
				if ev.EnvironmentID != nil {
					k = s(*ev.EnvironmentID)
				}
				wantKeys[k] = true
			}
			var wk []string
			for k := range wantKeys {
				wk = append(wk, k)
			}
			sort.Strings(wk)
			if fmt.Sprintf("%q", keys) != fmt.Sprintf("%q", wk) {
				t.Errorf("series by environment: %q, want %q", keys, wk)
			}
			cost := w.get(t, u.tok, "/api/token-analytics/costs", taQuery("from", "2026-01-01")).Data()["total_cost_usd"].(float64)
			if want := taTotals(w.pick(u.match))["cost_usd"]; math.Abs(cost-want) > 1e-9 {
				t.Errorf("costs: %v, want %v", cost, want)
			}
			rows, _ := csv.NewReader(strings.NewReader(w.get(t, u.tok, "/api/token-analytics/export.csv", nil).Body)).ReadAll()
			if len(rows) != 1+len(want) {
				t.Errorf("export: %d rows, want %d", len(rows)-1, len(want))
			}
			// Their own environment, filtered.
			r = w.get(t, u.tok, "/api/token-analytics/usage", taQuery("environment_id", s(u.own)))
			if n := len(w.pick(func(ev *store.UsageEvent) bool { return taIDIs(ev.EnvironmentID, u.own) })); r.Code != 200 || r.Data()["total"].(float64) != float64(n) {
				t.Errorf("own environment: %d %s, want %d events", r.Code, r.Body, n)
			}
			// Another user's events outside environments stay hidden even
			// when asked for by user.
			if u.tok != w.admin {
				other := w.bobID
				if u.tok == w.bob {
					other = w.annID
				}
				r = w.get(t, u.tok, "/api/token-analytics/usage", taQuery("user_id", s(other)))
				for _, it := range r.Data()["items"].([]any) {
					if it.(map[string]any)["environment_id"] == nil {
						t.Errorf("sees another user's event outside environments: %v", it)
					}
				}
			}
			if u.other == 0 {
				return
			}
			// Another environment: 404 on every endpoint.
			for _, ep := range []string{"usage", "summary", "series", "costs", "export.csv"} {
				if r := w.get(t, u.tok, "/api/token-analytics/"+ep, taQuery("environment_id", s(u.other))); r.Code != 404 {
					t.Errorf("%s of a foreign environment: %d %s", ep, r.Code, r.Body)
				}
			}
		})
	}
	t.Run("AdminSeesEverything", func(t *testing.T) {
		r := w.get(t, w.admin, "/api/token-analytics/usage", taQuery("environment_id", s(w.envB)))
		if r.Code != 200 || r.Data()["total"].(float64) != float64(len(w.pick(func(ev *store.UsageEvent) bool { return taIDIs(ev.EnvironmentID, w.envB) }))) {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if n := w.get(t, w.admin, "/api/token-analytics/usage", nil).Data()["total"].(float64); n != float64(len(w.events)) {
			t.Fatalf("admin sees %v of %d", n, len(w.events))
		}
	})
	t.Run("RevokedGrant", func(t *testing.T) {
		if _, err := w.e.app.DB.SetUserEnvironments(context.Background(), w.annID, nil); err != nil {
			t.Fatal(err)
		}
		r := w.get(t, w.ann, "/api/token-analytics/usage", nil)
		want := taIDs(taNewestFirst(w.pick(taVisibleTo(w.annID))))
		var got []int64
		for _, it := range r.Data()["items"].([]any) {
			got = append(got, int64(it.(map[string]any)["id"].(float64)))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after revoking A: %v, want %v", got, want)
		}
		if r := w.get(t, w.ann, "/api/token-analytics/summary", taQuery("environment_id", s(w.envA))); r.Code != 404 {
			t.Fatalf("revoked environment: %d", r.Code)
		}
	})
}

// Money has no float noise anywhere the API shows it: costs are summed in
// integer micro-dollars, so 0.1 + 0.2 is 0.3 (not 0.30000000000000004)
// in the list, the summary, the series, the costs and the CSV, and every
// cost has at most six decimals.
func TestTokenAnalyticsNoFloatNoise(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envID := cfgEnvironment(t, e, "Alpha")
	at := time.Now().UTC().Add(-time.Hour)
	for _, usd := range []float64{0.1, 0.2, 0.01635, 0.01635, 0.01635, 0.000001} {
		if _, err := e.app.DB.RecordUsage(context.Background(), store.UsageEvent{CreatedAt: at, Provider: "openai", Model: "gpt-4o",
			Cost: store.MicrosOfUSD(&usd), Status: "ok", Source: "chat", EnvironmentID: &envID}); err != nil {
			t.Fatal(err)
		}
	}
	const want = "0.349051" // exactly; a float64 sum of the six is 0.34905099999999995
	costField := regexp.MustCompile(`"(?:total_)?cost_usd":([^,}]+)`)
	for _, path := range []string{"/api/token-analytics/usage?per_page=200", "/api/token-analytics/summary",
		"/api/token-analytics/series?group_by=model", "/api/token-analytics/costs"} {
		r := e.do(t, "GET", path, admin, nil)
		if r.Code != 200 {
			t.Fatalf("%s: %d %s", path, r.Code, r.Body)
		}
		body := r.Body
		for _, m := range costField.FindAllStringSubmatch(body, -1) {
			if _, frac, ok := strings.Cut(m[1], "."); (ok && len(frac) > 6) || strings.ContainsAny(m[1], "eE") {
				t.Errorf("%s: a cost with float noise: %s", path, m[0])
			}
		}
		if path != "/api/token-analytics/usage?per_page=200" && !strings.Contains(body, "cost_usd\":"+strings.TrimRight(want, "0")) {
			t.Errorf("%s: the total is not %s: %s", path, want, body)
		}
	}
	r := e.do(t, "GET", "/api/token-analytics/export.csv", admin, nil)
	rows, err := csv.NewReader(strings.NewReader(r.Body)).ReadAll()
	if r.Code != 200 || err != nil || len(rows) != 7 {
		t.Fatalf("export: %d %v %q", r.Code, err, r.Body)
	}
	for i, row := range rows[1:] {
		if want := []string{"0.100000", "0.200000", "0.016350", "0.016350", "0.016350", "0.000001"}[i]; row[7] != want {
			t.Errorf("row %d cost %q, want %q", i+1, row[7], want)
		}
	}
}

// Calls of a model without a price have an unknown cost: null in the list,
// and in the totals when none of the calls had a price, never 0.
func TestTokenAnalyticsUnpricedIsNull(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	at := time.Now().UTC().Add(-time.Hour)
	for i := 0; i < 2; i++ {
		if _, err := e.app.DB.RecordUsage(context.Background(), store.UsageEvent{CreatedAt: at, Provider: "openai_compatible", Model: "llama3.1:8b",
			InputTokens: 100, OutputTokens: 50, Status: "ok", Source: "chat"}); err != nil {
			t.Fatal(err)
		}
	}
	costOf := func(path string, get func(map[string]any) map[string]any) (any, bool) {
		r := e.do(t, "GET", path, admin, nil)
		if r.Code != 200 {
			t.Fatalf("%s: %d %s", path, r.Code, r.Body)
		}
		v, ok := get(r.Data())["cost_usd"]
		return v, ok
	}
	for path, get := range map[string]func(map[string]any) map[string]any{
		"/api/token-analytics/usage":                 func(d map[string]any) map[string]any { return agItems(d)[0] },
		"/api/token-analytics/summary":               func(d map[string]any) map[string]any { return d["totals"].(map[string]any) },
		"/api/token-analytics/series?group_by=model": func(d map[string]any) map[string]any { return d["points"].([]any)[0].(map[string]any) },
		"/api/token-analytics/costs":                 func(d map[string]any) map[string]any { return d["by_model"].([]any)[0].(map[string]any) },
		"/api/token-analytics/costs?from=2026-01-01": func(d map[string]any) map[string]any { return map[string]any{"cost_usd": d["total_cost_usd"]} },
	} {
		if v, ok := costOf(path, get); !ok || v != nil {
			t.Errorf("%s: cost_usd = %#v (present %v), want null", path, v, ok)
		}
	}
	r := e.do(t, "GET", "/api/token-analytics/summary", admin, nil)
	if tot := r.Data()["totals"].(map[string]any); agNum(tot["unpriced_calls"]) != 2 || agNum(tot["input_tokens"]) != 200 {
		t.Fatalf("totals %v", tot)
	}
}

// The AI settings take a monthly budget in tokens beside the one in
// dollars: saved, inherited by the effective settings, kept when a PUT
// leaves it out, refused when negative.
func TestAISettingsTokenBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	r := e.do(t, "PUT", "/api/settings/ai-content", admin, map[string]any{"monthly_budget_tokens": 2000000, "monthly_budget_usd": 0.000016})
	if r.Code != 200 || agNum(r.Data()["global"].(map[string]any)["monthly_budget_tokens"]) != 2000000 ||
		agNum(r.Data()["effective"].(map[string]any)["monthly_budget_tokens"]) != 2000000 ||
		r.Data()["effective"].(map[string]any)["monthly_budget_usd"] != 0.000016 {
		t.Fatalf("put: %d %s", r.Code, r.Body)
	}
	r = e.do(t, "PUT", "/api/settings/ai-content", admin, map[string]any{"tone": "warm"})
	if r.Code != 200 || agNum(r.Data()["global"].(map[string]any)["monthly_budget_tokens"]) != 2000000 {
		t.Fatalf("a PUT without it: %d %s", r.Code, r.Body)
	}
	for _, body := range []map[string]any{{"monthly_budget_tokens": -1}, {"monthly_budget_usd": 0.0000001}} {
		if r := e.do(t, "PUT", "/api/settings/ai-content", admin, body); r.Code != 422 {
			t.Errorf("%v: %d %s", body, r.Code, r.Body)
		}
	}
}

// TestTokenAnalyticsSeriesTimeZone: with tz, a day series counts the days
// of that zone: a 25-hour day across the end of daylight saving time, the
// default range ending with the zone's today, and from/to as the zone's
// days; an unknown zone is a 422 naming the field.
func TestTokenAnalyticsSeriesTimeZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	for _, at := range []string{
		"2026-11-01T03:30:00.000Z", // New York: Oct 31, 23:30 EDT
		"2026-11-01T04:30:00.000Z", // Nov 1, 00:30 EDT
		"2026-11-02T04:30:00.000Z", // Nov 1, 23:30 EST: the day lasts 25 hours
		"2026-11-02T04:50:00.000Z", // Nov 1, 23:50 EST
		"2026-11-02T05:10:00.000Z", // Nov 2, 00:10 EST
		envT0.Format(time.RFC3339), // Nov 21, 12:00 UTC: Nov 22, 02:00 in Kiritimati (UTC+14)
	} {
		created, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.app.DB.RecordUsage(context.Background(), store.UsageEvent{CreatedAt: created, Provider: "openai", Model: "gpt-4o",
			Status: "ok", Source: "chat"}); err != nil {
			t.Fatal(err)
		}
	}
	type point struct {
		Key   string `json:"key"`
		Calls int64  `json:"calls"`
	}
	series := func(query string) (points []point, from, to string) {
		t.Helper()
		r := e.do(t, "GET", "/api/token-analytics/series?group_by=day&"+query, admin, nil)
		if r.Code != 200 {
			t.Fatalf("%s: %d %s", query, r.Code, r.Body)
		}
		var body struct {
			Data struct {
				From, To string
				Points   []point
			}
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatal(err)
		}
		return body.Data.Points, body.Data.From, body.Data.To
	}
	cases := []struct {
		query    string
		want     []point
		from, to string
	}{
		{"from=2026-10-31&to=2026-11-02&tz=America/New_York", []point{{"2026-10-31", 1}, {"2026-11-01", 3}, {"2026-11-02", 1}},
			"2026-10-31T04:00:00.000Z", "2026-11-03T05:00:00.000Z"},
		// Without tz, UTC days, as before.
		{"from=2026-10-31&to=2026-11-02", []point{{"2026-11-01", 2}, {"2026-11-02", 3}}, "2026-10-31T00:00:00.000Z", "2026-11-03T00:00:00.000Z"},
		{"from=2026-11-01&to=2026-11-01&tz=Asia/Kolkata", []point{{"2026-11-01", 2}}, "2026-10-31T18:30:00.000Z", "2026-11-01T18:30:00.000Z"},
		// The last 30 days of a zone already in tomorrow: today is Nov 22.
		{"tz=Pacific/Kiritimati", []point{{"2026-11-01", 2}, {"2026-11-02", 3}, {"2026-11-22", 1}}, "2026-10-23T10:00:00.000Z", "2026-11-22T10:00:00.000Z"},
	}
	for _, c := range cases {
		points, from, to := series(c.query)
		if !slices.Equal(points, c.want) || from != c.from || to != c.to {
			t.Errorf("%s: %v over [%s, %s), want %v over [%s, %s)", c.query, points, from, to, c.want, c.from, c.to)
		}
	}
	for _, tz := range []string{"Mars/Olympus", "Local", "../../etc/passwd"} {
		r := e.do(t, "GET", "/api/token-analytics/series?group_by=day&tz="+url.QueryEscape(tz), admin, nil)
		if r.Code != 422 || !strings.Contains(r.Detail(), "tz:") {
			t.Errorf("tz=%s: %d %s, want 422 naming tz", tz, r.Code, r.Body)
		}
	}
}

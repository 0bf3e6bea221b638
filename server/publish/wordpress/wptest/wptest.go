// Package wptest is a local stand-in for a WordPress 6.x site's REST API,
// for tests: it speaks the wire format of wp/v2 posts, categories, tags,
// media and users/me ({code, message, data: {status}} errors, X-WP-Total
// and X-WP-TotalPages), and behaves like WordPress where that is easy to get
// wrong: plain permalinks answer only at ?rest_route= (HTML at /wp-json/),
// application passwords can be unusable (public endpoints then answer
// anonymously), unknown term ids are dropped silently, a duplicate term is
// 400 term_exists with data.term_id, a publish with a future date becomes
// future, and terms cannot be trashed without force=true.
package wptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Site is a fake WordPress site.
type Site struct {
	*httptest.Server
	User, Password string

	mu sync.Mutex
	// Plain: the site uses plain permalinks; /wp-json/ is the HTML front page.
	Plain bool
	// NoAppPasswords: application passwords are unavailable (plain HTTP on
	// a site that is not local), so credentials are ignored.
	NoAppPasswords bool
	// CannotWrite: the user may read but not write (a subscriber).
	CannotWrite bool
	// Fail, when set, may answer a request with an error instead: status,
	// code and message.
	Fail func(r *http.Request) (status int, code, message string, fail bool)
	// Hang, when set, makes a request that it is true for do its work and
	// then give no answer until the client goes away (a timeout after the
	// site did it).
	Hang func(r *http.Request) bool

	Now    func() time.Time
	posts  map[int64]*post
	terms  map[string]map[int64]*term // taxonomy → id → term
	media  map[int64]string
	nextID int64
	// Requests counts the requests by "METHOD route".
	Requests map[string]int
}

type post struct {
	ID            int64
	Date          time.Time
	Modified      time.Time
	Slug, Status  string
	Title         string
	Content       string
	Excerpt       string
	Categories    []int64
	Tags          []int64
	FeaturedMedia int64
}

type term struct {
	ID                      int64
	Name, Slug, Description string
	Parent                  int64
}

// New starts a site with the user "editor" and an application password.
// It has the category "Uncategorized" (id 1), as every WordPress has.
func New() *Site {
	s := &Site{User: "editor", Password: "abcd efgh ijkl mnop qrst uvwx", Now: func() time.Time { return time.Now().UTC() },
		posts: map[int64]*post{}, terms: map[string]map[int64]*term{"categories": {}, "tags": {}}, media: map[int64]string{},
		nextID: 100, Requests: map[string]int{}}
	s.terms["categories"][1] = &term{ID: 1, Name: "Uncategorized", Slug: "uncategorized"}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Set changes the site's behaviour under its lock.
func (s *Site) Set(fn func(s *Site)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

// Requested is how many requests of a "METHOD route" the site got (see
// Requests), e.g. "POST /wp/v2/posts" for the creates.
func (s *Site) Requested(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Requests[key]
}

// PostCount is the number of posts that are not in the trash.
func (s *Site) PostCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.posts {
		if p.Status != "trash" {
			n++
		}
	}
	return n
}

// PostStatus is a post's status ("" when there is none).
func (s *Site) PostStatus(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.posts[id]; p != nil {
		return p.Status
	}
	return ""
}

// PostTerms are a post's category and tag ids.
func (s *Site) PostTerms(id int64) (cats, tags []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.posts[id]; p != nil {
		return append([]int64(nil), p.Categories...), append([]int64(nil), p.Tags...)
	}
	return nil, nil
}

// PostContent is a post's content as stored.
func (s *Site) PostContent(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.posts[id]; p != nil {
		return p.Content
	}
	return ""
}

// AddPost makes a post as if someone wrote it on the site; it returns the id.
func (s *Site) AddPost(title, slug, status, content string, cats, tags []int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	now := s.Now()
	s.posts[s.nextID] = &post{ID: s.nextID, Date: now, Modified: now, Slug: slug, Status: status, Title: title, Content: content,
		Categories: cats, Tags: tags}
	return s.nextID
}

// EditPost changes a post as someone on the site would, moving its
// modified time on by at least a second (WordPress keeps seconds).
func (s *Site) EditPost(id int64, title, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.posts[id]
	p.Title, p.Content = title, content
	p.Modified = later(p.Modified, s.Now())
}

// EditPostSameSecond changes a post as someone on the site would within
// the second its modified time already reads: WordPress keeps seconds, so
// modified does not move.
func (s *Site) EditPostSameSecond(id int64, title, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.posts[id]
	p.Title, p.Content = title, content
}

// AddTerm makes a term as if someone made it on the site; it returns the id.
func (s *Site) AddTerm(taxonomy, name, slug string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.terms[taxonomy][s.nextID] = &term{ID: s.nextID, Name: name, Slug: slug}
	return s.nextID
}

// DeleteTermNow removes a term as someone on the site would.
func (s *Site) DeleteTermNow(taxonomy string, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.terms[taxonomy], id)
}

// TermIDs lists the ids of a taxonomy's terms.
func (s *Site) TermIDs(taxonomy string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for id := range s.terms[taxonomy] {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// MediaCount is the number of uploaded files.
func (s *Site) MediaCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.media)
}

func later(prev, now time.Time) time.Time {
	now = now.Truncate(time.Second)
	if !now.After(prev) {
		return prev.Add(time.Second)
	}
	return now
}

func wpErr(w http.ResponseWriter, status int, code, message string, extra map[string]any) {
	data := map[string]any{"status": status}
	for k, v := range extra {
		data[k] = v
	}
	writeJSON(w, status, map[string]any{"code": code, "message": message, "data": data})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var route string
	switch {
	case r.URL.Query().Has("rest_route"):
		route = r.URL.Query().Get("rest_route")
	case strings.HasPrefix(r.URL.Path, "/wp-json"):
		if s.Plain { // no rewrite rules: the theme's 404 page
			w.Header().Set("Content-Type", "text/html; charset=UTF-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, "<!doctype html><title>Page not found</title>")
			return
		}
		route = strings.TrimPrefix(r.URL.Path, "/wp-json")
	default:
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		_, _ = io.WriteString(w, "<!doctype html><title>A WordPress site</title>")
		return
	}
	s.Requests[r.Method+" "+route]++
	if s.Fail != nil {
		if status, code, msg, fail := s.Fail(r); fail {
			wpErr(w, status, code, msg, nil)
			return
		}
	}
	user, pass, hasAuth := r.BasicAuth()
	authed := false
	if hasAuth && !s.NoAppPasswords {
		if user != s.User || pass != s.Password {
			wpErr(w, 401, "incorrect_password", "The provided password is an invalid application password.", nil)
			return
		}
		authed = true
	}
	status, body, header := s.route(r, route, authed)
	if s.Hang != nil && s.Hang(r) {
		s.mu.Unlock()
		<-r.Context().Done()
		s.mu.Lock()
		return
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	writeJSON(w, status, body)
}

func fail(status int, code, message string, extra map[string]any) (int, any, map[string]string) {
	data := map[string]any{"status": status}
	for k, v := range extra {
		data[k] = v
	}
	return status, map[string]any{"code": code, "message": message, "data": data}, nil
}

// route answers one REST call; the lock is held.
func (s *Site) route(r *http.Request, route string, authed bool) (int, any, map[string]string) {
	q := r.URL.Query()
	parts := strings.Split(strings.Trim(route, "/"), "/")
	if route == "/" || route == "" {
		return 200, map[string]any{"name": "A WordPress site", "namespaces": []string{"wp/v2"}}, nil
	}
	if len(parts) < 3 || parts[0] != "wp" || parts[1] != "v2" {
		return fail(404, "rest_no_route", "No route was found matching the URL and request method.", nil)
	}
	write := r.Method != http.MethodGet
	if write && !authed {
		return fail(401, "rest_cannot_create", "Sorry, you are not allowed to create posts as this user.", nil)
	}
	if write && s.CannotWrite {
		return fail(403, "rest_cannot_create", "Sorry, you are not allowed to create posts as this user.", nil)
	}
	switch parts[2] {
	case "users":
		if len(parts) == 4 && parts[3] == "me" {
			if !authed {
				return fail(401, "rest_not_logged_in", "You are not currently logged in.", nil)
			}
			return 200, map[string]any{"id": 1, "name": "Editor", "slug": s.User, "roles": []string{"editor"}}, nil
		}
	case "posts":
		return s.postsRoute(r, parts[3:], q, authed)
	case "categories", "tags":
		return s.termsRoute(r, parts[2], parts[3:], q)
	case "media":
		if r.Method == http.MethodPost && len(parts) == 3 {
			data, _ := io.ReadAll(r.Body)
			if len(data) == 0 || !strings.Contains(r.Header.Get("Content-Disposition"), "filename=") {
				return fail(400, "rest_upload_no_content_disposition", "No Content-Disposition supplied.", nil)
			}
			s.nextID++
			src := fmt.Sprintf("%s/wp-content/uploads/%d.bin", s.URL, s.nextID)
			s.media[s.nextID] = src
			return 201, map[string]any{"id": s.nextID, "source_url": src, "mime_type": r.Header.Get("Content-Type")}, nil
		}
	}
	return fail(404, "rest_no_route", "No route was found matching the URL and request method.", nil)
}

func (s *Site) postJSON(p *post, edit bool) map[string]any {
	var dateGMT any
	if p.Status != "draft" && p.Status != "pending" || !p.Date.IsZero() {
		dateGMT = p.Date.Format("2006-01-02T15:04:05")
	}
	link := fmt.Sprintf("%s/?p=%d", s.URL, p.ID)
	if p.Status == "publish" {
		link = fmt.Sprintf("%s/%s/", s.URL, p.Slug)
	}
	rendered := func(raw string) map[string]any {
		m := map[string]any{"rendered": raw}
		if edit {
			m["raw"] = raw
		}
		return m
	}
	cats, tags := p.Categories, p.Tags
	if cats == nil {
		cats = []int64{}
	}
	if tags == nil {
		tags = []int64{}
	}
	return map[string]any{"id": p.ID, "date": p.Date.Format("2006-01-02T15:04:05"), "date_gmt": dateGMT,
		"modified": p.Modified.Format("2006-01-02T15:04:05"), "modified_gmt": p.Modified.Format("2006-01-02T15:04:05"),
		"slug": p.Slug, "status": p.Status, "type": "post", "link": link, "title": rendered(p.Title),
		"content": rendered(p.Content), "excerpt": rendered(p.Excerpt), "author": 1, "featured_media": p.FeaturedMedia,
		"categories": cats, "tags": tags, "meta": map[string]any{"footnotes": ""}}
}

func (s *Site) postsRoute(r *http.Request, rest []string, q url.Values, authed bool) (int, any, map[string]string) {
	edit := q.Get("context") == "edit"
	if edit && !authed {
		return fail(401, "rest_forbidden_context", "Sorry, you are not allowed to edit posts in this post type.", nil)
	}
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			return s.listPosts(q, authed, edit)
		case http.MethodPost:
			var in map[string]any
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				return fail(400, "rest_invalid_json", "Invalid JSON body passed.", nil)
			}
			s.nextID++
			p := &post{ID: s.nextID, Status: "draft", Categories: []int64{1}}
			if st, code, msg := s.apply(p, in); st != 0 {
				s.nextID--
				return fail(st, code, msg, nil)
			}
			s.posts[p.ID] = p
			return 201, s.postJSON(p, true), nil
		}
		return fail(404, "rest_no_route", "No route was found matching the URL and request method.", nil)
	}
	id, _ := strconv.ParseInt(rest[0], 10, 64)
	p := s.posts[id]
	if p == nil || (!authed && p.Status != "publish") {
		return fail(404, "rest_post_invalid_id", "Invalid post ID.", nil)
	}
	switch r.Method {
	case http.MethodGet:
		return 200, s.postJSON(p, edit), nil
	case http.MethodPost, http.MethodPut:
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			return fail(400, "rest_invalid_json", "Invalid JSON body passed.", nil)
		}
		if st, code, msg := s.apply(p, in); st != 0 {
			return fail(st, code, msg, nil)
		}
		return 200, s.postJSON(p, true), nil
	case http.MethodDelete:
		if q.Get("force") == "true" {
			delete(s.posts, id)
			return 200, map[string]any{"deleted": true, "previous": s.postJSON(p, true)}, nil
		}
		if p.Status == "trash" {
			return fail(410, "rest_already_trashed", "The post has already been deleted.", nil)
		}
		p.Status = "trash"
		p.Modified = later(p.Modified, s.Now())
		return 200, s.postJSON(p, true), nil
	}
	return fail(404, "rest_no_route", "No route was found matching the URL and request method.", nil)
}

// apply writes a create's or update's fields into p as WordPress does.
func (s *Site) apply(p *post, in map[string]any) (int, string, string) {
	str := func(k string) (string, bool) { v, ok := in[k].(string); return v, ok }
	if v, ok := str("title"); ok {
		p.Title = v
	}
	if v, ok := str("content"); ok {
		p.Content = v
	}
	if v, ok := str("excerpt"); ok {
		p.Excerpt = v
	}
	if v, ok := str("slug"); ok && v != "" {
		p.Slug = v
	}
	if v, ok := str("date_gmt"); ok && v != "" {
		t, err := time.Parse("2006-01-02T15:04:05", strings.TrimSuffix(v, "Z"))
		if err != nil {
			return 400, "rest_invalid_param", "Invalid parameter(s): date_gmt"
		}
		p.Date = t
	}
	if v, ok := str("status"); ok {
		switch v {
		case "draft", "pending", "private", "future", "publish":
		default:
			return 400, "rest_invalid_param", "Invalid parameter(s): status"
		}
		p.Status = v
	}
	// A publish dated in the future is scheduled; a future one that is
	// due is published.
	if p.Status == "publish" && p.Date.After(s.Now()) {
		p.Status = "future"
	} else if p.Status == "future" && !p.Date.After(s.Now()) {
		p.Status = "publish"
	}
	if p.Date.IsZero() && p.Status != "draft" && p.Status != "pending" {
		p.Date = s.Now().Truncate(time.Second)
	}
	ids := func(k string, tax string) ([]int64, bool) {
		raw, ok := in[k].([]any)
		if !ok {
			return nil, false
		}
		out := []int64{}
		for _, v := range raw {
			f, _ := v.(float64)
			if s.terms[tax][int64(f)] != nil { // unknown ids are dropped silently
				out = append(out, int64(f))
			}
		}
		return out, true
	}
	if c, ok := ids("categories", "categories"); ok {
		if len(c) == 0 {
			c = []int64{1}
		}
		p.Categories = c
	}
	if t, ok := ids("tags", "tags"); ok {
		p.Tags = t
	}
	if v, ok := in["featured_media"].(float64); ok {
		if v != 0 && s.media[int64(v)] == "" {
			return 400, "rest_invalid_featured_media", "Invalid featured media ID."
		}
		p.FeaturedMedia = int64(v)
	}
	if p.Slug == "" && p.Status == "publish" {
		p.Slug = strings.ToLower(strings.ReplaceAll(p.Title, " ", "-"))
	}
	p.Modified = later(p.Modified, s.Now())
	return 0, "", ""
}

func (s *Site) listPosts(q url.Values, authed, edit bool) (int, any, map[string]string) {
	status := q.Get("status")
	if status == "" {
		status = "publish"
	}
	if status != "publish" && !authed {
		return fail(400, "rest_invalid_param", "Invalid parameter(s): status", nil)
	}
	var ids []int64
	for id, p := range s.posts {
		if (status == "any" && p.Status != "trash") || p.Status == status {
			if slug := q.Get("slug"); slug == "" || p.Slug == slug {
				ids = append(ids, id)
			}
		}
	}
	// By id (orderby=id; ids grow like the dates of new posts), ascending
	// unless order=desc.
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if q.Get("order") == "desc" {
		sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
	}
	perPage, page := 10, 1
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil {
		if v < 1 || v > 100 {
			return fail(400, "rest_invalid_param", "Invalid parameter(s): per_page", nil)
		}
		perPage = v
	}
	if v, err := strconv.Atoi(q.Get("page")); err == nil {
		page = v
	}
	total := len(ids)
	pages := (total + perPage - 1) / perPage
	if page > 1 && page > pages {
		return fail(400, "rest_post_invalid_page_number", "The page number requested is larger than the number of pages available.", nil)
	}
	out := []any{}
	for i := (page - 1) * perPage; i < total && i < page*perPage; i++ {
		out = append(out, s.postJSON(s.posts[ids[i]], edit))
	}
	return 200, out, map[string]string{"X-WP-Total": strconv.Itoa(total), "X-WP-TotalPages": strconv.Itoa(pages)}
}

func (s *Site) termsRoute(r *http.Request, tax string, rest []string, q url.Values) (int, any, map[string]string) {
	terms := s.terms[tax]
	taxonomy := map[string]string{"categories": "category", "tags": "post_tag"}[tax]
	termJSON := func(t *term) map[string]any {
		return map[string]any{"id": t.ID, "count": 0, "description": t.Description, "link": s.URL + "/" + taxonomy + "/" + t.Slug + "/",
			"name": t.Name, "slug": t.Slug, "taxonomy": taxonomy, "parent": t.Parent, "meta": []any{}}
	}
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			include := map[int64]bool{}
			for _, v := range strings.Split(q.Get("include"), ",") {
				if id, err := strconv.ParseInt(v, 10, 64); err == nil {
					include[id] = true
				}
			}
			out := []any{}
			for _, id := range sortedIDs(terms) {
				if len(include) == 0 || include[id] {
					out = append(out, termJSON(terms[id]))
				}
			}
			return 200, out, map[string]string{"X-WP-Total": strconv.Itoa(len(out)), "X-WP-TotalPages": "1"}
		case http.MethodPost:
			var in struct {
				Name, Slug, Description string
				Parent                  int64
			}
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" {
				return fail(400, "rest_missing_callback_param", "Missing parameter(s): name", nil)
			}
			for _, t := range terms {
				// WordPress refuses a second term with the same name (and,
				// for categories, the same parent) or the same slug.
				if strings.EqualFold(t.Name, in.Name) && t.Parent == in.Parent || in.Slug != "" && t.Slug == in.Slug {
					return fail(400, "term_exists", "A term with the name provided already exists with this parent.", map[string]any{"term_id": t.ID})
				}
			}
			if in.Parent != 0 && terms[in.Parent] == nil {
				return fail(400, "rest_term_invalid", "Parent term does not exist.", nil)
			}
			s.nextID++
			t := &term{ID: s.nextID, Name: in.Name, Slug: in.Slug, Description: in.Description, Parent: in.Parent}
			if t.Slug == "" {
				t.Slug = strings.ToLower(strings.ReplaceAll(in.Name, " ", "-"))
			}
			terms[t.ID] = t
			return 201, termJSON(t), nil
		}
	}
	id, _ := strconv.ParseInt(rest[0], 10, 64)
	t := terms[id]
	if t == nil {
		return fail(404, "rest_term_invalid", "Term does not exist.", nil)
	}
	switch r.Method {
	case http.MethodGet:
		return 200, termJSON(t), nil
	case http.MethodDelete:
		if q.Get("force") != "true" {
			return fail(501, "rest_trash_not_supported", "Terms do not support trashing. Set 'force=true' to delete.", nil)
		}
		delete(terms, id)
		for _, p := range s.posts {
			p.Categories, p.Tags = without(p.Categories, id), without(p.Tags, id)
		}
		return 200, map[string]any{"deleted": true, "previous": termJSON(t)}, nil
	}
	return fail(404, "rest_no_route", "No route was found matching the URL and request method.", nil)
}

func sortedIDs(m map[int64]*term) []int64 {
	out := make([]int64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func without(ids []int64, id int64) []int64 {
	out := ids[:0:0]
	for _, v := range ids {
		if v != id {
			out = append(out, v)
		}
	}
	return out
}

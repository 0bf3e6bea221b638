package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gin-gonic/gin/binding"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// envelope is the success body of every endpoint but login and refresh.
type envelope struct {
	Data    any    `json:"data"`
	Message string `json:"message"`
}

// errorBody is the body of every error.
type errorBody struct {
	Detail string   `json:"detail"`
	Fields []string `json:"fields,omitempty"`
}

// listData is the data of every list endpoint.
type listData[T any] struct {
	Items   []T `json:"items"`
	Total   int `json:"total"`
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
}

// respond writes the success envelope.
func respond(c *gin.Context, status int, data any, message string) {
	writeJSON(c, status, envelope{Data: data, Message: message})
}

// writeJSON encodes v before anything is written, so a value JSON cannot
// hold (a NaN or infinite float, a time past year 9999) is a logged 500
// with {"detail"}. c.JSON writes the status first and, when encoding then
// fails, leaves an empty 200 that nobody hears about.
func writeJSON(c *gin.Context, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		fail(c, fmt.Errorf("encoding the response: %w", err))
		return
	}
	c.Data(status, "application/json; charset=utf-8", body)
}

// encodeJSON is how every response body is encoded (stream.JSON).
var encodeJSON = stream.JSON

// Timestamp is how every time in a response is written: RFC 3339 in UTC
// with exactly three fractional digits, "2026-11-21T12:00:00.000Z", the
// form the store keeps (store.TimeFormat). time.Time writes as many
// digits as the value has (none, 1 to 9), so times read back from the
// database and times computed in memory looked different. Response types
// hold Timestamp (a conversion: Timestamp(t), (*Timestamp)(p)) instead of
// time.Time.
type Timestamp time.Time

// MarshalJSON writes the timestamp; a year JSON's RFC 3339 cannot hold is
// an error, as with time.Time.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	u := time.Time(t).UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("timestamp: year %d is outside 0 to 9999", y)
	}
	b := make([]byte, 0, len(store.TimeFormat)+2)
	b = append(b, '"')
	b = u.AppendFormat(b, store.TimeFormat)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a time a request sends: RFC 3339, or a date alone
// (2026-11-21, for a post's date: its midnight in UTC). Anything else is a
// type error, which decodeBody turns into a 422 naming the field, without
// Go's layout strings.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: timestampType}
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if v, err := time.Parse(layout, s); err == nil {
			*t = Timestamp(v.UTC())
			return nil
		}
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return &json.UnmarshalTypeError{Value: "string " + strconv.Quote(s), Type: timestampType}
}

var timestampType = reflect.TypeFor[Timestamp]()

// jsonValueKind names the kind of a JSON value, as encoding/json does in
// its type errors.
func jsonValueKind(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	}
	return "number"
}

// listChildren answers a page of what belongs to the resource the path
// parameter param names (a campaign's keywords, a webhook's deliveries):
// the handler of every such list, with the service's list and the item's
// rendering.
func listChildren[T, R any](c *gin.Context, param string, list func(context.Context, store.Scope, int64, store.Page) ([]T, int, error),
	toJSON func(T) R, message string) {
	id, err := pathID(c, param)
	if err != nil {
		fail(c, err)
		return
	}
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	items, total, err := list(c.Request.Context(), scope(c), id, q.page())
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, items, total, q.page(), toJSON, message)
}

// one answers, with status 200, a route that reads or acts on the one
// resource the path parameter param names, as the caller's scope sees it
// (a get, a cancel, a close): the handler of every such route, with the
// service's call, the resource's rendering and the answer's message.
func one[T, R any](c *gin.Context, param string, get func(context.Context, store.Scope, int64) (T, error), toJSON func(T) R, message string) {
	oneSaying(c, param, get, toJSON, func(T) string { return message })
}

// oneSaying is one with a message made from the resource (its status).
func oneSaying[T, R any](c *gin.Context, param string, get func(context.Context, store.Scope, int64) (T, error), toJSON func(T) R,
	message func(T) string) {
	id, err := pathID(c, param)
	if err != nil {
		fail(c, err)
		return
	}
	x, err := get(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, toJSON(x), message(x))
}

// byCaller is a service call that records who made it (cancelled by,
// closed by) as one of one's: the caller's username is its last argument.
func byCaller[T any](c *gin.Context, act func(context.Context, store.Scope, int64, string) (T, error)) func(context.Context, store.Scope, int64) (T, error) {
	return func(ctx context.Context, sc store.Scope, id int64) (T, error) {
		return act(ctx, sc, id, principal(c).User.Username)
	}
}

// respondList writes one page of a list with status 200: each item rendered
// with toJSON, beside the total and the page asked for.
func respondList[T, R any](c *gin.Context, items []T, total int, pg store.Page, toJSON func(T) R, message string) {
	out := make([]R, 0, len(items))
	for _, it := range items {
		out = append(out, toJSON(it))
	}
	respond(c, http.StatusOK, listData[R]{Items: out, Total: total, Page: pg.Page, PerPage: pg.PerPage}, message)
}

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[store.Kind]int{
	store.KindInvalid:      http.StatusUnprocessableEntity,
	store.KindMalformed:    http.StatusBadRequest,
	store.KindUnauthorized: http.StatusUnauthorized,
	store.KindForbidden:    http.StatusForbidden,
	store.KindNotFound:     http.StatusNotFound,
	store.KindConflict:     http.StatusConflict,
	store.KindTooLarge:     http.StatusRequestEntityTooLarge,
	store.KindRetryLater:   http.StatusTooManyRequests,
	store.KindRemote:       http.StatusBadGateway,
	store.KindUnavailable:  http.StatusServiceUnavailable,
	store.KindTimeout:      http.StatusGatewayTimeout,
}

// fail writes the error body for err. Errors without a kind are 500s: the
// client gets a generic detail and the log gets the cause.
func fail(c *gin.Context, err error) {
	var e *store.Error
	if errors.As(err, &e) && e.Kind != store.KindInternal {
		if (e.Kind == store.KindRetryLater || e.Kind == store.KindUnavailable) && e.RetryAfter > 0 {
			c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		if e.Kind == store.KindUnauthorized {
			c.Header("WWW-Authenticate", `Bearer realm="copydesk"`)
		}
		abortFields(c, statusOf[e.Kind], e.Message, e.Fields)
		return
	}
	logger(c).ErrorContext(c.Request.Context(), "request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
	abort(c, http.StatusInternalServerError, "internal server error: the problem was logged on the server")
}

const loggerKey = "copydesk.logger"

// logger is the server's logger, which logRequests puts on every request.
func logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(loggerKey); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}

// abort writes {"detail"} with a status and stops the handler chain.
func abort(c *gin.Context, status int, detail string) {
	abortFields(c, status, detail, nil)
}

// abortFields is abort with the fields the error names (left out when none).
func abortFields(c *gin.Context, status int, detail string, fields []string) {
	c.Abort()
	body, err := encodeJSON(errorBody{Detail: detail, Fields: fields})
	if err != nil { // a string always encodes
		panic(err)
	}
	c.Data(status, "application/json; charset=utf-8", body)
}

// decodeJSON reads the request body into dst (a pointer to a struct), then
// checks its `binding` rules. Unknown fields are refused rather than dropped,
// so a misspelt field never silently does nothing. Errors carry kinds:
// unreadable JSON is 400, a rule broken is 422 naming the field, a body over
// the limit is 413.
func decodeJSON(c *gin.Context, dst any) error {
	if err := decodeBody(c.Request.Body, dst); err != nil {
		return err
	}
	return validate(dst)
}

// decodeJSONFields is decodeJSON that also answers which top-level fields
// the body holds (a null included), for a PUT whose left-out fields keep
// their saved values.
func decodeJSONFields(c *gin.Context, dst any) (map[string]bool, error) {
	var raw bytes.Buffer
	if err := decodeBody(io.TeeReader(c.Request.Body, &raw), dst); err != nil {
		return nil, err
	}
	if err := validate(dst); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw.Bytes(), &fields); err != nil { // read once already: cannot fail
		return nil, fmt.Errorf("decode fields: %w", err)
	}
	given := make(map[string]bool, len(fields))
	for name := range fields {
		given[name] = true
	}
	return given, nil
}

func decodeBody(body io.Reader, dst any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if dec.More() {
			return store.E(store.KindMalformed, "the request body must hold a single JSON object")
		}
		if _, err := dec.Token(); err != io.EOF {
			if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
				return store.E(store.KindTooLarge, "the request body is larger than %d bytes", maxErr.Limit)
			}
			return store.E(store.KindMalformed, "the request body must hold a single JSON object")
		}
		return nil
	}
	var maxErr *http.MaxBytesError
	var synErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &maxErr):
		return store.E(store.KindTooLarge, "the request body is larger than %d bytes", maxErr.Limit)
	case errors.Is(err, io.EOF):
		return store.E(store.KindMalformed, "the request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return store.E(store.KindMalformed, "the request body is not valid JSON: it ends too early")
	case errors.As(err, &synErr):
		return store.E(store.KindMalformed, "the request body is not valid JSON at byte %d: %s", synErr.Offset, synErr.Error())
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return store.E(store.KindMalformed, "the request body must be a JSON object")
		}
		return store.Invalid("%s: must be %s, not %s", typeErr.Field, jsonTypeName(typeErr.Type), typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return store.Invalid("%s: is not a known field", field)
	}
	return store.E(store.KindMalformed, "the request body could not be read: %s", err.Error())
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timestampType {
		return "a time like 2026-11-21T09:30:00Z, or a date like 2026-11-21"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// validate applies the `binding` struct tags (rules.go) and turns the first
// broken rule into a 422 that names the JSON field and the rule.
func validate(v any) error {
	if re := checkRules(v); re != nil {
		return store.Invalid("%s: %s", re.path, re.text)
	}
	return nil
}

// pathID reads a positive integer path parameter; anything else is a 404,
// as no such resource can exist.
func pathID(c *gin.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, store.NotFound("not found: %s must be a positive integer", name)
	}
	return id, nil
}

// pageQuery holds the pagination parameters every list accepts.
type pageQuery struct {
	Page    *int `form:"page" json:"page" binding:"omitempty,gte=1,lte=1000000" doc:"page number, from 1"`
	PerPage *int `form:"per_page" json:"per_page" binding:"omitempty,gte=1,lte=200" doc:"items per page, 1 to 200 (default 50)"`
}

// page applies the defaults; out-of-range values were refused by bindQuery.
func (p pageQuery) page() store.Page {
	out := store.Page{Page: 1, PerPage: 50}
	if p.Page != nil {
		out.Page = *p.Page
	}
	if p.PerPage != nil {
		out.PerPage = *p.PerPage
	}
	return out
}

// The sort convention: a list that can be sorted has a Sort field tagged
// `form:"sort" binding:"omitempty,oneof=name -name …"`, naming each field it
// allows in both directions (so an unknown one is a 422 and the OpenAPI
// document lists them); sortOf turns it into the store's Sort, whose
// resource file maps each field to an indexed column.
func sortOf(s string) store.Sort { return store.ParseSort(s) }

// bulkIDs is the body of every POST …/bulk-delete, and the ids part of
// every POST …/bulk-update (which embeds it beside the fields it sets).
// Ids the caller cannot see, or that do not exist, are skipped, not an
// error: the answer says how many were changed.
type bulkIDs struct {
	IDs []int64 `json:"ids" binding:"required,min=1,max=1000,dive,gt=0" doc:"1 to 1000 ids"`
}

// bulkResponse answers a bulk action: how many of the ids were changed.
type bulkResponse struct {
	Changed int `json:"changed"`
}

// bindQuery reads query parameters into dst and checks its rules. A value
// of the wrong type is a 422 naming the parameter.
func bindQuery(c *gin.Context, dst any) error {
	// Gin's form mapping alone: c.ShouldBindQuery would also run Gin's
	// validator, which copydesk does not link (rules.go).
	if err := binding.MapFormWithTag(dst, c.Request.URL.Query(), "form"); err != nil {
		return queryTypeError(c, dst, err)
	}
	if re := checkRules(dst); re != nil {
		return store.Invalid("%s: %s", re.form, re.text)
	}
	return nil
}

// queryTypeError names the query parameter whose value did not parse; Gin's
// binding error does not say which one it was.
func queryTypeError(c *gin.Context, dst any, err error) error {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var walk func(t reflect.Type) error
	walk = func(t reflect.Type) error {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				if e := walk(f.Type); e != nil {
					return e
				}
				continue
			}
			name := strings.Split(f.Tag.Get("form"), ",")[0]
			v, ok := c.GetQuery(name)
			if name == "" || !ok {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Bool:
				if _, e := strconv.ParseBool(v); e != nil {
					return store.Invalid("%s: must be true or false", name)
				}
			case reflect.Int, reflect.Int64, reflect.Int32:
				if _, e := strconv.ParseInt(v, 10, 64); e != nil {
					return store.Invalid("%s: must be an integer", name)
				}
			}
		}
		return nil
	}
	if e := walk(t); e != nil {
		return e
	}
	return store.Invalid("query: %s", queryError(err))
}

func queryError(err error) string {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Sprintf("%q is not a valid number", ne.Num)
	}
	msg := err.Error()
	if strings.Contains(msg, "ParseBool") {
		return "must be true or false"
	}
	return msg
}

// formFile reads the multipart file field of a request, at most max bytes;
// tooLarge is the detail of the 413 for a bigger one.
func formFile(c *gin.Context, field string, max int64, tooLarge string) ([]byte, error) {
	fh, err := c.FormFile(field)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, store.E(store.KindTooLarge, "%s", tooLarge)
		}
		return nil, store.Invalid("%s: send it as multipart/form-data in a field named %s", field, field)
	}
	if fh.Size > max {
		return nil, store.E(store.KindTooLarge, "%s", tooLarge)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, store.E(store.KindTooLarge, "%s", tooLarge)
	}
	return data, nil
}

// readUpload reads a multipart body that the handler reads itself (a
// route with MaxBody < 0, after letGo), each read within its deadline: the
// file in field, at most max bytes (413 beyond), and the other fields into
// form, a struct with `form` tags whose rules are checked as a query's
// are. Parts it does not know are skipped.
func readUpload(c *gin.Context, field string, max int64, form any) ([]byte, error) {
	body, done := readDeadlines(c, c.Request.Body)
	defer done()
	setBody(c, http.MaxBytesReader(c.Writer, body, max+1<<20))
	missing := store.Invalid("%s: send the file as multipart/form-data in a field named %s", field, field)
	mr, err := c.Request.MultipartReader()
	if err != nil {
		return nil, missing
	}
	known := queryNames(form)
	values := map[string][]string{}
	var data []byte
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, uploadError(err)
		}
		name := part.FormName()
		switch {
		case name == field:
			data, err = io.ReadAll(io.LimitReader(part, max+1))
			if err == nil && int64(len(data)) > max {
				err = store.E(store.KindTooLarge, "%s: is larger than the limit of %s", field, humanBytes(max))
			}
		case known[name]:
			var v []byte
			if v, err = io.ReadAll(io.LimitReader(part, 1<<10)); err == nil {
				values[name] = append(values[name], strings.TrimSpace(string(v)))
			}
		}
		_ = part.Close() // read, or skipped: what it says is in NextPart's error
		if err != nil {
			return nil, uploadError(err)
		}
	}
	if data == nil {
		return nil, missing
	}
	for name, v := range values { // one at a time, to name the one of a wrong type
		if err := binding.MapFormWithTag(form, map[string][]string{name: v}, "form"); err != nil {
			return nil, store.Invalid("%s: %q is not a value of its type", name, v[0])
		}
	}
	if re := checkRules(form); re != nil {
		return nil, store.Invalid("%s: %s", re.form, re.text)
	}
	return data, nil
}

package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

func (s *Server) limitBody(n int64) gin.HandlerFunc {
	if n <= 0 {
		n = s.opts.MaxBodyBytes
	}
	return func(c *gin.Context) {
		if c.Request.ContentLength > n {
			c.Header("Connection", "close") // the body stays unread: see admit
			abort(c, http.StatusRequestEntityTooLarge, "the request body is larger than the limit of "+humanBytes(n))
			return
		}
		setBody(c, http.MaxBytesReader(c.Writer, c.Request.Body, n))
		c.Next()
	}
}

// setBody gives the request another body, on a copy of the request. After
// the handler, net/http looks at the body of the request it made to decide
// what to do with an unread rest: a large one ends the connection, but a
// body it does not recognise it reads on (up to 256 KiB), waiting for a
// client that never sends it, before the answer goes out.
func setBody(c *gin.Context, body io.ReadCloser) {
	r := c.Request.WithContext(c.Request.Context())
	r.Body = body
	c.Request = r
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// recoverPanics turns a panic into a 500 with the standard body; the stack
// goes to the log, never to the client.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic in handler", "method", c.Request.Method, "path", c.Request.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				abort(c, http.StatusInternalServerError, "internal server error: the problem was logged on the server")
			}
		}
	}()
	c.Next()
}

func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Set(loggerKey, s.log)
	c.Next()
	status := c.Writer.Status()
	lvl := slog.LevelDebug
	if status >= 500 {
		lvl = slog.LevelError
	}
	if !s.log.Enabled(c.Request.Context(), lvl) {
		return
	}
	s.log.Log(c.Request.Context(), lvl, "request", "method", c.Request.Method, "path", c.Request.URL.Path,
		"status", status, "duration", time.Since(start), "ip", c.ClientIP())
}

func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	c.Next()
}

// Limits on how long a client may take, chosen in docs/DECISIONS.md.
const (
	// bodyReadTimeout bounds reading a request body the middleware buffers
	// (at most the route's MaxBody), and each read of a body a handler
	// reads itself (an upload).
	bodyReadTimeout = time.Minute
	// writeTimeout bounds each write of a response to the client. A JSON
	// answer is one write, so it is the time the client has to take the
	// whole answer; a download's is per chunk. Event streams set their own.
	writeTimeout = time.Minute
)

// admit decides whether the request may run, reads its body, and holds
// the database for the handler, in that order:
//
//  1. Who is asking is decided on the headers alone, under a short hold
//     (the session lookup reads the database): no token, a bad one or too
//     low a role is answered 401 or 403 before any body byte is read, so
//     nobody without a token gets a body buffered, and a flood of large
//     anonymous bodies costs no memory. Such a refusal closes the
//     connection: to keep it, net/http would read and skip a body under
//     256 KiB before the answer goes out, with no deadline, so a client
//     that announces a body and never sends it would get no answer.
//  2. The body (already capped by limitBody) is read within
//     bodyReadTimeout, holding nothing: a client sending it slowly delays
//     no restore.
//  3. The request's hold is taken for the handler and everything it calls.
//     The database may have changed while the body came in (a restore, a
//     revoked session, a new role), so the caller is checked again under
//     this hold; that is a cache hit when nothing changed.
//
// Without a body the one hold serves both the check and the handler. A
// route that reads a large body itself (an upload, readBody false) lets go
// before it does (see letGo). The hold ends at the latest when the
// answer's first byte is written (boundWriter): an answer is rendered
// under the hold and sent after it.
func (s *Server) admit(a Access, readBody bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if readBody && c.Request.Body != nil && c.Request.Body != http.NoBody {
			if !a.Public {
				c.Header("Connection", "close") // kept if refused: see 1. above
				ctx, release := s.db.Hold(c.Request.Context())
				ok := s.authorize(ctx, c, a)
				release()
				if !ok {
					return
				}
				c.Writer.Header().Del("Connection")
			}
			if !bufferBody(c) {
				return
			}
		}
		ctx, release := s.db.Hold(c.Request.Context())
		defer release()
		c.Set(releaseKey, release)
		if !a.Public && !s.authorize(ctx, c, a) {
			return
		}
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// bufferBody reads the request body within bodyReadTimeout and puts it
// back as a buffer; on failure it answers (413 or 400) and reports false.
func bufferBody(c *gin.Context) bool {
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) // ErrNotSupported (a test recorder) is fine
	body, err := io.ReadAll(c.Request.Body)
	// A deadline left in place would end the request's context once the
	// handler runs longer (net/http's background read fails with it).
	_ = rc.SetReadDeadline(time.Time{})
	_ = c.Request.Body.Close() // read to the end or failed: ReadAll said which
	if err != nil {
		c.Header("Connection", "close") // the rest stays unread: see admit
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			abort(c, http.StatusRequestEntityTooLarge, "the request body is larger than the limit of "+humanBytes(maxErr.Limit))
			return false
		}
		abort(c, http.StatusBadRequest, "the request body could not be read in time")
		return false
	}
	setBody(c, io.NopCloser(bytes.NewReader(body)))
	return true
}

// readDeadlines gives each read of a body a handler reads itself (an
// upload, too large for one deadline) bodyReadTimeout to make progress.
// The deadline is lifted at the body's end, and by done for a handler that
// stops reading before it (see bufferBody for why).
func readDeadlines(c *gin.Context, body io.ReadCloser) (_ io.ReadCloser, done func()) {
	rc := http.NewResponseController(c.Writer)
	return &deadlineReader{ReadCloser: body, rc: rc}, func() { _ = rc.SetReadDeadline(time.Time{}) }
}

type deadlineReader struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	_ = r.rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		_ = r.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// boundWrites puts boundWriter in front of every response: the first byte
// written ends the request's hold on the database, and each write gets
// writeTimeout. A client that never reads then holds a connection until
// the deadline, and never the database.
func boundWrites(c *gin.Context) {
	rc := http.NewResponseController(c.Writer)
	// A kept-alive connection may carry the deadline of its previous
	// request (App.Run also lifts it when a connection idles).
	_ = rc.SetWriteDeadline(time.Time{})
	c.Writer = &boundWriter{ResponseWriter: c.Writer, c: c, rc: rc}
	c.Next()
}

// boundWriter is the response writer of every request (boundWrites).
type boundWriter struct {
	gin.ResponseWriter
	c      *gin.Context
	rc     *http.ResponseController
	stream bool // an event stream: it sets its own write deadlines
}

// sending lets go of the database and starts the write's deadline.
func (w *boundWriter) sending() {
	letGo(w.c)
	if !w.stream {
		_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // ErrNotSupported (a test recorder) is fine
	}
}

func (w *boundWriter) Write(b []byte) (int, error) {
	w.sending()
	return w.ResponseWriter.Write(b)
}

func (w *boundWriter) WriteString(s string) (int, error) {
	w.sending()
	return w.ResponseWriter.WriteString(s)
}

func (w *boundWriter) Flush() {
	w.sending()
	w.ResponseWriter.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *boundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

const releaseKey = "copydesk.release"

// letGo releases the request's hold on the database before a handler
// streams or waits for something else than the database: an event stream,
// a download or upload, the restore (which takes the gate exclusively and
// would otherwise wait for its own request). boundWriter calls it when an
// answer's first byte is written. After it the request's context holds
// nothing; the handler uses the database again only through held.
func letGo(c *gin.Context) {
	if release, ok := c.Get(releaseKey); ok {
		release.(func())()
	}
}

// held runs fn with the database held, for a handler that let go (letGo):
// an event stream's session re-checks and catch-up pages, a streamed run's
// ending.
func (s *Server) held(ctx context.Context, fn func(context.Context) error) error {
	ctx, release := s.db.Hold(ctx)
	defer release()
	return fn(ctx)
}

// heldAgain is held for a handler that let go to read a large body (an
// import): the caller is checked again under the new hold, since a
// restore, a revoked session or a lower role may have come while the body
// did, and fn gets the scope the caller has now.
func (s *Server) heldAgain(c *gin.Context, min store.Role, fn func(ctx context.Context, sc store.Scope) error) error {
	return s.held(c.Request.Context(), func(ctx context.Context) error {
		p, err := s.auth.Authenticate(ctx, bearerToken(c))
		if err != nil {
			return err
		}
		if !p.User.Role.AtLeast(min) {
			return store.Forbidden("this needs the %s role or higher; you are %s", min, p.User.Role)
		}
		return fn(ctx, p.Scope)
	})
}

// serve streams a topic to the caller (server/stream), letting go of the
// database first: a stream holds it only in the re-checks and catch-up of
// its options (streamOptions), so a restore never waits for an open
// stream.
func (s *Server) serve(c *gin.Context, topic string, o stream.ServeOptions) {
	letGo(c)
	markStream(c)
	defer s.metrics.StreamOpened(c.FullPath())()
	s.events.Serve(c.Writer, c.Request, topic, o)
}

// serveFinished is serve for a generation that ended and whose topic is
// no longer kept: its stored outcome as a short stream (server/stream's
// ServeFinished).
func (s *Server) serveFinished(c *gin.Context, o stream.ServeOptions, events ...stream.Event) {
	letGo(c)
	markStream(c)
	defer s.metrics.StreamOpened(c.FullPath())()
	s.events.ServeFinished(c.Writer, c.Request, o, events...)
}

// markStream tells the request's boundWriter, under any writer that wraps
// it (checkEvents'), that it carries an event stream.
func markStream(c *gin.Context) {
	if b := boundOf(c.Writer); b != nil {
		b.stream = true
	}
}

// boundOf is the boundWriter under w and the writers that wrap it, or nil.
func boundOf(w http.ResponseWriter) *boundWriter {
	for w != nil {
		if b, ok := w.(*boundWriter); ok {
			return b
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

const principalKey = "copydesk.principal"

// authorize checks the bearer token, the session (or API token) and the
// user under the hold ctx, then the role and, for an API token, what it
// may do on this route: it puts the principal on the context, or answers
// 401 (any failure of the token) or 403 (role not reached, or not with
// this API token) and reports false.
func (s *Server) authorize(ctx context.Context, c *gin.Context, a Access) bool {
	p, err := s.authFromHeader(ctx, c)
	if err != nil {
		fail(c, err)
		return false
	}
	if !p.User.Role.AtLeast(a.MinRole) {
		abort(c, http.StatusForbidden, "this needs the "+string(a.MinRole)+" role or higher; you are "+string(p.User.Role))
		return false
	}
	read := c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead
	if err := p.Allows(auth.Use{Write: !read, Account: a.Account, MinRole: a.MinRole}); err != nil {
		fail(c, err)
		return false
	}
	c.Set(principalKey, p)
	return true
}

func (s *Server) authFromHeader(ctx context.Context, c *gin.Context) (*auth.Principal, error) {
	h := c.GetHeader("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return nil, store.Unauthorized("authentication required: send the header Authorization: Bearer <token> (a token from /api/auth/login, or an API token cdk_...)")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, store.Unauthorized("the Authorization header must be: Bearer <token>")
	}
	return s.auth.Authenticate(ctx, strings.TrimSpace(token))
}

// streamOptions are what every event stream of a signed-in caller shares:
// at each heartbeat it re-checks the session (revoked, user disabled, token
// expired: the stream ends), holding the database only for that check.
//
// A check, when given, runs after the session's with the caller as they
// are now: for a stream that needs more than a valid session (a live
// session's, which needs its environment still granted).
func (s *Server) streamOptions(c *gin.Context, checks ...func(context.Context, *auth.Principal) error) stream.ServeOptions {
	token := bearerToken(c)
	return stream.ServeOptions{Hold: s.held, Recheck: func(ctx context.Context) error {
		p, err := s.auth.Authenticate(ctx, token)
		for _, check := range checks {
			if err == nil {
				err = check(ctx, p)
			}
		}
		if err == nil {
			return nil
		}
		if store.KindOf(err) == store.KindInternal {
			s.log.Error("stream: session re-check failed", "err", err)
		}
		return errors.New(store.Message(err))
	}}
}

func bearerToken(c *gin.Context) string {
	_, tok, _ := strings.Cut(c.GetHeader("Authorization"), " ")
	return strings.TrimSpace(tok)
}

// principal is the authenticated caller; only call it on a route that is
// not public (admit authorized it).
func principal(c *gin.Context) *auth.Principal {
	return c.MustGet(principalKey).(*auth.Principal)
}

// scope is what the caller may see, computed once with the principal; every
// environment-scoped service takes it.
func scope(c *gin.Context) store.Scope { return principal(c).Scope }

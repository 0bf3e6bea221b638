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
			abort(c, http.StatusRequestEntityTooLarge, "the request body is larger than the limit of "+humanBytes(n))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
		c.Next()
	}
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

// holdDB keeps a restore from swapping the database during the request;
// a request that arrives during a restore waits for it to finish. It is
// the gate's one holder for requests (the job runner is the other): the
// handler and everything it calls run under its hold. With readBody the
// body (already capped by limitBody) is read first, within a deadline, so
// that a client sending it slowly holds nothing while it does; a route
// that reads a large body itself (an upload) lets go before it does (see
// letGo).
func (s *Server) holdDB(readBody bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if readBody && c.Request.Body != nil && c.Request.Body != http.NoBody {
			rc := http.NewResponseController(c.Writer)
			_ = rc.SetReadDeadline(time.Now().Add(time.Minute))
			body, err := io.ReadAll(c.Request.Body)
			_ = rc.SetReadDeadline(time.Time{})
			_ = c.Request.Body.Close() // read to the end or failed: ReadAll said which
			if err != nil {
				var maxErr *http.MaxBytesError
				if errors.As(err, &maxErr) {
					abort(c, http.StatusRequestEntityTooLarge, "the request body is larger than the limit of "+humanBytes(maxErr.Limit))
					return
				}
				abort(c, http.StatusBadRequest, "the request body could not be read in time")
				return
			}
			c.Request.Body = io.NopCloser(bytes.NewReader(body))
		}
		ctx, release := s.db.Hold(c.Request.Context())
		defer release()
		c.Set(releaseKey, release)
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

const releaseKey = "copydesk.release"

// letGo releases the request's hold on the database before a handler
// streams or waits for something else than the database: an event stream,
// a download or upload, the restore (which takes the gate exclusively and
// would otherwise wait for its own request). After it the request's
// context holds nothing; the handler uses the database again only through
// held.
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

// serve streams a topic to the caller (server/stream), letting go of the
// database first: a stream holds it only in the re-checks and catch-up of
// its options (streamOptions), so a restore never waits for an open
// stream.
func (s *Server) serve(c *gin.Context, topic string, o stream.ServeOptions) {
	letGo(c)
	s.events.Serve(c.Writer, c.Request, topic, o)
}

const principalKey = "copydesk.principal"

// authenticate checks the bearer token, the session and the user, and puts
// the principal on the context. Every failure is a 401.
func (s *Server) authenticate(c *gin.Context) {
	p, err := s.authFromHeader(c.Request.Context(), c)
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(principalKey, p)
	c.Next()
}

func (s *Server) authFromHeader(ctx context.Context, c *gin.Context) (*auth.Principal, error) {
	h := c.GetHeader("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if h == "" {
		return nil, store.Unauthorized("authentication required: send the header Authorization: Bearer <token>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, store.Unauthorized("the Authorization header must be: Bearer <token>")
	}
	return s.auth.Authenticate(ctx, strings.TrimSpace(token))
}

// streamOptions are what every event stream of a signed-in caller shares:
// at each heartbeat it re-checks the session (revoked, user disabled, token
// expired: the stream ends), holding the database only for that check.
func (s *Server) streamOptions(c *gin.Context) stream.ServeOptions {
	token := bearerToken(c)
	return stream.ServeOptions{Hold: s.held, Recheck: func(ctx context.Context) error {
		_, err := s.auth.Authenticate(ctx, token)
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

// requireRole refuses callers below min with a 403.
func requireRole(min store.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		if p := principal(c); !p.User.Role.AtLeast(min) {
			abort(c, http.StatusForbidden, "this needs the "+string(min)+" role or higher; you are "+string(p.User.Role))
			return
		}
		c.Next()
	}
}

// principal is the authenticated caller; only call it behind authenticate.
func principal(c *gin.Context) *auth.Principal {
	return c.MustGet(principalKey).(*auth.Principal)
}

// scope is what the caller may see, computed once with the principal; every
// environment-scoped service takes it.
func scope(c *gin.Context) store.Scope { return principal(c).Scope }

// Package authbench holds copydesk's yardsticks: bare Gin handlers that do
// the least an endpoint must (verify the same kind of JWT; for agents, the
// same SQL in SQLite), to compare the real routes with. For GET
// /api/auth/me, BareHandler; for GET and POST /api/agents, BareAgents. The
// benchmarks (server/bench_test.go) and the wrk comparison (./cmd, `make
// perf-me` and `make perf-lists`) use them.
package authbench

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"github.com/copydesk/copydesk/server/auth"
)

// BareHandler is a Gin router whose one route, GET /me, verifies an HS256
// JWT signed with key and answers its subject in the same envelope shape;
// token is a valid token for it.
func BareHandler(key []byte) (h http.Handler, token string) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired())
	r.GET("/me", func(c *gin.Context) {
		tok := strings.TrimPrefix(c.GetHeader("Authorization"), "Bearer ")
		var claims jwt.RegisteredClaims
		if _, err := parser.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
			c.AbortWithStatusJSON(401, gin.H{"detail": "bad token"})
			return
		}
		c.JSON(200, gin.H{"data": gin.H{"id": claims.Subject}, "message": "ok"})
	})
	token, _ = auth.NewTokens(key, time.Now).Issue(1, 1, "", time.Now().Add(time.Hour))
	return r, token
}

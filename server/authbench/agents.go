package authbench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/copydesk/copydesk/server/auth"
)

// The yardstick for GET /api/agents and POST /api/agents: a Gin handler
// that verifies the same kind of JWT and then does the least SQL such an
// endpoint can, on a table shaped like copydesk's agents, in SQLite opened
// the way copydesk opens it (WAL, one writer connection, a pool of
// readers): a COUNT(*) and one page in name order through an index, or one
// INSERT ... RETURNING. It answers in the same envelope with the same
// fields, but knows nothing of sessions, roles, tenancy or validation.

// AgentsSchema is the bare agents table: copydesk's columns, and the index
// its list order needs.
const AgentsSchema = `CREATE TABLE IF NOT EXISTS agents (
    id             INTEGER PRIMARY KEY,
    environment_id INTEGER,
    name           TEXT    NOT NULL,
    description    TEXT    NOT NULL DEFAULT '',
    kind           TEXT    NOT NULL,
    credential_id  INTEGER,
    model          TEXT    NOT NULL DEFAULT '',
    system_prompt  TEXT    NOT NULL DEFAULT '',
    temperature    REAL,
    max_tokens     INTEGER,
    is_active      INTEGER NOT NULL DEFAULT 1,
    created_by     INTEGER,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS agents_name ON agents (name COLLATE NOCASE, id);`

// BareAgents is the bare server's database.
type BareAgents struct {
	r, w *sql.DB
}

// OpenBareAgents opens (creating) the bare database at path.
func OpenBareAgents(ctx context.Context, path string) (*BareAgents, error) {
	const pragmas = "?_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", "file:"+path+pragmas+"&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, AgentsSchema); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", "file:"+path+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	return &BareAgents{r: r, w: w}, nil
}

// Fill writes n agents (FillAgents).
func (b *BareAgents) Fill(ctx context.Context, n int) error { return FillAgents(ctx, b.w, n, false) }

// Close closes the database.
func (b *BareAgents) Close() error {
	b.r.Close()
	return b.w.Close()
}

// FillAgents writes n agents into the agents table of db (the bare one,
// or copydesk's: they share these columns), all global and active, with
// names in no particular order and a realistic system prompt. postgres
// says db is PostgreSQL ($1 placeholders).
func FillAgents(ctx context.Context, db *sql.DB, n int, postgres bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	insert := `INSERT INTO agents (name, description, kind, model, system_prompt, temperature, max_tokens,
		is_active, created_at, updated_at) VALUES (?, ?, ?, 'gpt-4o-mini', ?, 0.7, 2000, 1, ?, ?)`
	if postgres {
		for i := 1; strings.Contains(insert, "?"); i++ {
			insert = strings.Replace(insert, "?", "$"+strconv.Itoa(i), 1)
		}
	}
	st, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return err
	}
	defer st.Close()
	kinds := []string{"writer", "editor", "researcher", "seo"}
	rnd := rand.New(rand.NewPCG(1, 1))
	prompt := strings.Repeat("You write clear, friendly articles for small businesses. ", 4)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%c%c agent %d", 'A'+rune(rnd.IntN(26)), 'a'+rune(rnd.IntN(26)), i)
		if _, err := st.ExecContext(ctx, name, "Drafts posts for the blog", kinds[i%len(kinds)], prompt, at, at); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// bareAgent is one agent as the API shows it.
type bareAgent struct {
	ID            int64    `json:"id"`
	EnvironmentID *int64   `json:"environment_id"`
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	Kind          string   `json:"kind"`
	CredentialID  *int64   `json:"credential_id"`
	Model         string   `json:"model"`
	SystemPrompt  string   `json:"system_prompt"`
	Temperature   *float64 `json:"temperature"`
	MaxTokens     *int64   `json:"max_tokens"`
	IsActive      bool     `json:"is_active"`
	Assignments   []int64  `json:"assignments"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
}

const bareColumns = `id, environment_id, name, description, kind, credential_id, model, system_prompt, temperature, max_tokens,
	is_active, created_at, updated_at`

func scanBareAgent(row interface{ Scan(...any) error }) (bareAgent, error) {
	a := bareAgent{Assignments: []int64{}}
	err := row.Scan(&a.ID, &a.EnvironmentID, &a.Name, &a.Description, &a.Kind, &a.CredentialID, &a.Model, &a.SystemPrompt,
		&a.Temperature, &a.MaxTokens, &a.IsActive, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// Handler is a Gin router with GET /agents?page=&per_page= and POST
// /agents, each behind an HS256 JWT signed with key; token is a valid
// token for it.
func (b *BareAgents) Handler(key []byte) (h http.Handler, token string) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired())
	r.Use(func(c *gin.Context) {
		var claims jwt.RegisteredClaims
		tok := strings.TrimPrefix(c.GetHeader("Authorization"), "Bearer ")
		if _, err := parser.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
			c.AbortWithStatusJSON(401, gin.H{"detail": "bad token"})
		}
	})
	r.GET("/agents", func(c *gin.Context) {
		page, _ := strconv.Atoi(c.DefaultQuery("page", "1"))
		perPage, _ := strconv.Atoi(c.DefaultQuery("per_page", "20"))
		page, perPage = max(page, 1), min(max(perPage, 1), 100)
		ctx := c.Request.Context()
		var total int
		if err := b.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM agents`).Scan(&total); err != nil {
			c.AbortWithStatusJSON(500, gin.H{"detail": err.Error()})
			return
		}
		rows, err := b.r.QueryContext(ctx, `SELECT `+bareColumns+` FROM agents ORDER BY name COLLATE NOCASE, id LIMIT ? OFFSET ?`,
			perPage, (page-1)*perPage)
		if err != nil {
			c.AbortWithStatusJSON(500, gin.H{"detail": err.Error()})
			return
		}
		defer rows.Close()
		items := make([]bareAgent, 0, perPage)
		for rows.Next() {
			a, err := scanBareAgent(rows)
			if err != nil {
				c.AbortWithStatusJSON(500, gin.H{"detail": err.Error()})
				return
			}
			items = append(items, a)
		}
		c.JSON(200, gin.H{"data": gin.H{"items": items, "total": total, "page": page, "per_page": perPage}, "message": "agents"})
	})
	r.POST("/agents", func(c *gin.Context) {
		var in struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		}
		if err := c.ShouldBindJSON(&in); err != nil {
			c.AbortWithStatusJSON(400, gin.H{"detail": err.Error()})
			return
		}
		now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		a, err := scanBareAgent(b.w.QueryRowContext(c.Request.Context(), `INSERT INTO agents (name, kind, created_at, updated_at)
			VALUES (?, ?, ?, ?) RETURNING `+bareColumns, in.Name, in.Kind, now, now))
		if err != nil {
			c.AbortWithStatusJSON(500, gin.H{"detail": err.Error()})
			return
		}
		c.JSON(201, gin.H{"data": a, "message": "agent created"})
	})
	token, _ = auth.NewTokens(key, time.Now).Issue(1, 1, "", time.Now().Add(time.Hour))
	return r, token
}

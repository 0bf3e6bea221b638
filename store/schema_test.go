package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// tampered writes a migrated database file and runs stmts on it, as
// someone who edits a backup with the sqlite3 shell would.
func tampered(t *testing.T, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tampered.db")
	storetest.WriteDB(t, path)
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range stmts {
		if _, err := conn.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

// A backup's schema must be exactly what the migrations it records create:
// anything more, less or different is refused, naming the objects.
func TestCheckFileComparesTheSchema(t *testing.T) {
	tests := []struct {
		name  string
		stmts []string
		want  []string // in the message; none: accepted
	}{
		{"Pristine", nil, nil},
		{"TriggerAndView", []string{
			`CREATE TRIGGER promote AFTER INSERT ON sessions BEGIN UPDATE users SET role = 'super_admin' WHERE id = NEW.user_id; END`,
			`CREATE VIEW everyone AS SELECT id, email FROM users`,
		}, []string{`unexpected trigger "promote" on sessions`, `unexpected view "everyone"`}},
		{"DroppedTables", []string{`DROP TABLE messages`, `DROP TABLE notifications`},
			[]string{`missing table "messages"; missing table "notifications"`}},
		{"AlteredTable", []string{`ALTER TABLE users ADD COLUMN note TEXT`}, []string{`table "users" differs`}},
		{"AddedTable", []string{`CREATE TABLE extra (id INTEGER PRIMARY KEY)`}, []string{`unexpected table "extra"`}},
		{"AddedIndex", []string{`CREATE INDEX users_email_extra ON users (email)`}, []string{`unexpected index "users_email_extra" on users`}},
		{"ChangedIndex", []string{`DROP INDEX users_role`, `CREATE INDEX users_role ON users (role)`}, []string{`index "users_role" on users differs`}},
		{"UnknownVersion", []string{`INSERT INTO schema_migrations (version, name, applied_at) VALUES (0, '0000_x.sql', 'x')`},
			[]string{"schema version 0, which this copydesk does not know"}},
		// ANALYZE's statistics tables are SQLite's own and run nothing.
		{"Analysed", []string{`ANALYZE`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tampered(t, tt.stmts...)
			_, err := store.CheckFile(context.Background(), path)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if store.KindOf(err) != store.KindInvalid {
				t.Fatalf("got %v, want KindInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(store.Message(err), w) {
					t.Errorf("the message does not say %q: %s", w, store.Message(err))
				}
			}
		})
	}
}

// Replace checks the schema once the file is open and migrated, and keeps
// the previous database when it is wrong, whatever the caller checked
// before.
func TestReplaceRefusesAnAlteredSchema(t *testing.T) {
	restoresOnSQLite(t)
	db, _ := openDB(t)
	mustUser(t, db, "kept", store.RoleViewer)
	path := tampered(t, `CREATE VIEW everyone AS SELECT id, email FROM users`)
	err := db.Replace(context.Background(), path, filepath.Join(t.TempDir(), "safety.db"))
	if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), `unexpected view "everyone"`) {
		t.Fatalf("got %v", err)
	}
	if _, err := db.UserByEmail(context.Background(), "kept@example.com"); err != nil {
		t.Fatalf("the previous database did not stay: %v", err)
	}
}

package backup_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/store"
)

// edit runs stmts on the database file at path, as someone with the
// sqlite3 shell would.
func edit(t *testing.T, path string, stmts ...string) {
	t.Helper()
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
}

// reseal makes a snapshot's sidecar agree with its edited file, as an
// upload that an older copydesk accepted would.
func reseal(t *testing.T, path string) {
	t.Helper()
	meta, err := backup.ReadSidecar(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	meta.SHA256, meta.Size = hex.EncodeToString(sum[:]), int64(len(b))
	j, _ := json.Marshal(meta)
	if err := os.WriteFile(path+".json", j, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A backup whose schema is not copydesk's is refused by every way in:
// upload, verify, restore and restore of a file, naming what is wrong.
func TestTamperedSchemaIsRefused(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		stmts []string
		want  []string
	}{
		{"TriggerAndView", []string{
			`CREATE TRIGGER promote AFTER INSERT ON sessions BEGIN UPDATE users SET role = 'super_admin' WHERE id = NEW.user_id; END`,
			`CREATE VIEW everyone AS SELECT id, email, role FROM users`,
		}, []string{`trigger "promote" on sessions`, `view "everyone"`}},
		{"DroppedTables", []string{`DROP TABLE messages`, `DROP TABLE notifications`},
			[]string{`missing table "messages"`, `missing table "notifications"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.env(t, "kept")
			snap, err := f.m.Create(ctx, backup.KindManual)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.m.Dir(), snap.Name)
			edit(t, path, tt.stmts...)
			reseal(t, path)
			says := func(what string, err error) {
				t.Helper()
				if store.KindOf(err) != store.KindInvalid {
					t.Fatalf("%s: got %v, want KindInvalid", what, err)
				}
				for _, w := range tt.want {
					if !strings.Contains(store.Message(err), w) {
						t.Errorf("%s does not name %s: %s", what, w, store.Message(err))
					}
				}
			}

			v, err := f.m.Verify(ctx, snap.Name)
			if err != nil || v.OK || !v.SHA256Matches {
				t.Fatalf("verify: %+v %v", v, err)
			}
			says("verify", store.Invalid("%s", v.Problem))
			_, err = f.m.Restore(ctx, snap.Name)
			says("restore", err)
			_, err = f.m.RestoreFile(ctx, path)
			says("restore of a file", err)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.m.Import(ctx, strings.NewReader(string(b)), 1<<30)
			says("upload", err)
			if list, _ := f.m.List(); len(list) != 1 {
				t.Fatalf("the refused upload was kept: %d backups", len(list))
			}
			if !slugsIn(t, f.db.Path())["kept"] {
				t.Fatal("the live database changed")
			}
		})
	}
}

// pastHeader fails a read that goes past what an upload's header check needs.
type pastHeader struct{ read atomic.Bool }

func (p *pastHeader) Read([]byte) (int, error) {
	p.read.Store(true)
	return 0, errors.New("read past the header")
}

// An upload that is not a copydesk database is refused from its first 100
// bytes: the rest is never read, and nothing is written.
func TestImportRefusesFromTheHeader(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(f.m.Dir(), good.Name))
	foreign := append([]byte{}, b[:store.HeaderSize]...)
	copy(foreign[68:72], []byte{0, 0, 0, 0}) // application id 0: any SQLite file
	tests := []struct {
		name string
		head []byte
		want string
	}{
		{"NotSQLite", []byte(strings.Repeat("not a database ", 7)[:store.HeaderSize]), "not a SQLite database"},
		{"OtherApplication", foreign, "not a copydesk one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest := &pastHeader{}
			_, err := f.m.Import(ctx, io.MultiReader(strings.NewReader(string(tt.head)), rest), 1<<30)
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if rest.read.Load() {
				t.Fatal("the upload was read past its header")
			}
			entries, _ := os.ReadDir(f.m.Dir())
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".tmp") {
					t.Fatalf("wrote %s", e.Name())
				}
			}
		})
	}
}

// An upload whose bytes trickle in does not keep snapshots waiting: the
// backup lock is taken only to move the checked file in.
func TestImportDoesNotHoldTheLockWhileReceiving(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(f.m.Dir(), good.Name))
	body, sender := io.Pipe()
	uploaded := make(chan error, 1)
	go func() { _, err := f.m.Import(ctx, body, 1<<30); uploaded <- err }()
	// A pipe's write returns once it was read: the upload is under way.
	if _, err := sender.Write(b[:4096]); err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() { _, err := f.m.Create(ctx, backup.KindManual); created <- err }()
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a snapshot waited for an upload in progress")
	}
	if _, err := sender.Write(b[4096:]); err != nil {
		t.Fatal(err)
	}
	sender.Close()
	if err := <-uploaded; err != nil {
		t.Fatalf("the upload: %v", err)
	}
	if list, _ := f.m.List(); len(list) != 3 {
		t.Fatalf("want 3 backups, got %d", len(list))
	}
}

// The partial uploads and old half-written sidecars a killed server left
// are removed at the next start, and nothing else is.
func TestRemoveLeftovers(t *testing.T) {
	f := newFixture(t)
	good, err := f.m.Create(context.Background(), backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	oldSidecar, newSidecar := "."+good.Name+".json-1.tmp", "."+good.Name+".json-2.tmp"
	for _, name := range []string{".tmp-upload-123.db", ".tmp-upload-456.db", ".tmp-safety-789.db", oldSidecar, newSidecar} {
		if err := os.WriteFile(filepath.Join(f.m.Dir(), name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A sidecar being written stays (another instance sharing the folder
	// may be writing it); one left for more than ten minutes goes.
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(f.m.Dir(), oldSidecar), long, long); err != nil {
		t.Fatal(err)
	}
	removed, err := f.m.RemoveLeftovers()
	if err != nil || strings.Join(removed, " ") != ".tmp-upload-123.db .tmp-upload-456.db "+oldSidecar {
		t.Fatalf("removed %v, %v", removed, err)
	}
	entries, _ := os.ReadDir(f.m.Dir())
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, " ") != newSidecar+" .tmp-safety-789.db "+good.Name+" "+good.Name+".json" {
		t.Fatalf("left: %v", left)
	}
}

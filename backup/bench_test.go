package backup_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/store"
)

// BenchmarkSnapshot200MB snapshots a database of about 200 MB while a writer
// keeps writing, and reports the snapshot speed, the worst latency of a
// write during the snapshot, and the speed of cp on the same file for
// comparison. Run: go test -run '^$' -bench Snapshot200MB -benchtime 3x ./backup/
func BenchmarkSnapshot200MB(b *testing.B) {
	f := newFixture(b)
	f.db.Now = func() time.Time { return time.Now().UTC() }
	fill(b, f.db.Path(), 200<<20)
	ctx := context.Background()
	st, _ := os.Stat(f.db.Path())
	size := st.Size()

	b.SetBytes(size)
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		writes := 0
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if _, err := f.db.CreateEnvironment(ctx, store.NewEnvironment{Name: "w", Slug: fmt.Sprintf("w-%d-%d", i, n)}); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(t0)
				mu.Lock()
				writes++
				if d > worst {
					worst = d
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
		meta, err := f.m.Create(ctx, backup.KindManual)
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if writes == 0 {
			b.Fatal("no write completed during the snapshot")
		}
		b.StopTimer()
		f.m.Delete(meta.Name)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-write-ms")
	b.ReportMetric(float64(size)/(1<<20), "db-MiB")

	// cp of the same file on the same disk, for comparison.
	dst := filepath.Join(b.TempDir(), "copy.db")
	t0 := time.Now()
	if out, err := exec.Command("cp", f.db.Path(), dst).CombinedOutput(); err != nil {
		b.Logf("cp: %v %s", err, out)
		return
	}
	if err := exec.Command("sync", dst).Run(); err != nil {
		exec.Command("sync").Run()
	}
	b.ReportMetric(float64(size)/(1<<20)/time.Since(t0).Seconds(), "cp-MB/s")
}

// fill grows the database at path to at least size bytes with a table of
// random blobs (incompressible, like real content).
func fill(b *testing.B, path string, size int64) {
	b.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`CREATE TABLE IF NOT EXISTS bench_filler (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	blob := make([]byte, 4000)
	for written := int64(0); written < size; {
		tx, err := conn.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 2000; i++ {
			rand.Read(blob)
			if _, err := tx.Exec(`INSERT INTO bench_filler (data) VALUES (?)`, blob); err != nil {
				b.Fatal(err)
			}
			written += int64(len(blob))
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := conn.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
}

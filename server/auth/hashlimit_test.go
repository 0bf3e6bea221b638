package auth

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func TestHashLimit(t *testing.T) {
	ctx := context.Background()
	l := NewHashLimit(2, time.Millisecond)
	if l.Size() != 2 {
		t.Fatalf("Size = %d, want 2", l.Size())
	}
	r1, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx)
	if e := wantErr(t, err, store.KindUnavailable); e.RetryAfter < 1 || e.Message == "" {
		t.Errorf("a refused hash: Retry-After %d, message %q", e.RetryAfter, e.Message)
	}
	r1()
	r3, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("a released slot is not free again: %v", err)
	}
	r2()
	r3()

	t.Run("WaitsForASlot", func(t *testing.T) {
		l := NewHashLimit(1, time.Minute)
		release, _ := l.Acquire(ctx)
		got := make(chan error, 1)
		go func() {
			r, err := l.Acquire(ctx)
			if err == nil {
				r()
			}
			got <- err
		}()
		release()
		if err := <-got; err != nil {
			t.Fatalf("a waiting hash did not get the slot given back: %v", err)
		}
	})
	t.Run("ClientGone", func(t *testing.T) {
		l := NewHashLimit(1, time.Minute)
		release, _ := l.Acquire(ctx)
		defer release()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := l.Acquire(cctx)
		wantErr(t, err, store.KindUnavailable)
	})
	t.Run("AtLeastOne", func(t *testing.T) {
		if n := NewHashLimit(0, time.Second).Size(); n != 1 {
			t.Errorf("NewHashLimit(0).Size() = %d, want 1", n)
		}
	})
}

func TestHashSlots(t *testing.T) {
	const mib = int64(1 << 20)
	perHash := int64(DefaultHasher.MemoryKiB) << 10
	tests := []struct {
		name   string
		cpus   int
		memory int64
		want   int
	}{
		{"CPUsBound", 2, 24 << 30, 2},
		{"MemoryBound", 16, 1024 * mib, 6}, // a quarter of 1 GiB at 2×19 MiB a hash
		{"SmallVPS", 1, 512 * mib, 1},
		{"TinyContainer", 8, 128 * mib, 1},
		{"MemoryUnknown", 4, 0, 4},
		{"NothingKnown", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HashSlots(tt.cpus, tt.memory, perHash); got != tt.want {
				t.Errorf("HashSlots(%d, %d MiB) = %d, want %d", tt.cpus, tt.memory/mib, got, tt.want)
			}
		})
	}
}

func TestMemoryFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if n := readBytes(write("memory.max", "536870912\n")); n != 512<<20 {
		t.Errorf("memory.max: %d", n)
	}
	if n := readBytes(write("unlimited", "max\n")); n != 0 {
		t.Errorf("memory.max of max: %d, want 0 (no limit)", n)
	}
	if n := readBytes(filepath.Join(dir, "missing")); n != 0 {
		t.Errorf("a missing file: %d", n)
	}
	meminfo := write("meminfo", "MemTotal:       24684220 kB\nMemFree:        16216000 kB\n")
	if n := memTotal(meminfo); n != 24684220<<10 {
		t.Errorf("MemTotal: %d", n)
	}
	if n := MemoryLimit(); n < 0 {
		t.Errorf("MemoryLimit = %d", n)
	}
}

// TestLoginBusy: a sign-in refused because every hash slot is taken is a
// 503-kind error and does not count as a failed attempt.
func TestLoginBusy(t *testing.T) {
	ctx := context.Background()
	limit := NewHashLimit(1, time.Millisecond)
	f := newFixture(t, func(c *Config) { c.Hashes, c.Throttle = limit, DefaultThrottle })
	f.user(t, "ann", store.RoleViewer)
	release, err := limit.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 12 { // more than the lock takes
		_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: "wrong-password"})
		wantErr(t, err, store.KindUnavailable)
	}
	_, err = f.svc.Register(ctx, NewAccount{Email: "new@example.com", Username: "newbie", Password: "long-enough"})
	wantErr(t, err, store.KindUnavailable)
	release()
	if lf, _ := f.db.LoginFailuresFor(ctx, "ann@example.com"); lf.Failures != 0 {
		t.Errorf("%d failures counted for refused sign-ins, want 0", lf.Failures)
	}
	f.login(t, "ann")
}

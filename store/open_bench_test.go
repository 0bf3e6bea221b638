package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// BenchmarkOpenFresh is the store's share of a first start: create the file
// and apply every migration (docs/performance.md, Footprint: start to first answer).
func BenchmarkOpenFresh(b *testing.B) {
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		db, err := store.Open(ctx, filepath.Join(b.TempDir(), "copydesk.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkOpenExisting is the store's share of every later start.
func BenchmarkOpenExisting(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "copydesk.db")
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

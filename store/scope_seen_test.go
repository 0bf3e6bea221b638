package store_test

import (
	"context"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// Seen answers the row a scope sees, and not found — the same error as a
// missing row — for one it does not.
func TestSeen(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	a, b := mustEnv(t, db, "a"), mustEnv(t, db, "b")
	tag, err := db.CreateTag(ctx, store.NewTag{EnvironmentID: a.ID, Name: "go", Slug: "go"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(sc store.Scope, id int64) (*store.Tag, error) {
		return store.Seen(ctx, id, db.TagByID, func(t *store.Tag) bool { return sc.Sees(t.EnvironmentID) }, "tag")
	}
	if got, err := get(store.NewScope(1, false, []int64{a.ID}), tag.ID); err != nil || got.ID != tag.ID {
		t.Fatalf("granted: %v, %v", got, err)
	}
	_, err = get(store.NewScope(1, false, []int64{b.ID}), tag.ID)
	if !store.IsNotFound(err) || err.Error() != "tag not found" {
		t.Fatalf("not granted: %v", err)
	}
	if _, err := get(store.Everything, tag.ID+100); !store.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
}

package store_test

import (
	"context"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// A row with neither a slug nor a way to make one is refused at once, and
// the store goes on (it used to call a nil SlugTries under the writer's
// transaction and never return).
func TestSluggedNeedsASlugOrTries(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	env, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site", Slug: "site"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.CreateTag(ctx, store.NewTag{EnvironmentID: env.ID, Name: "Coffee"})
	wantKind(t, err, store.KindInvalid)
	if _, err := db.CreateTag(ctx, store.NewTag{EnvironmentID: env.ID, Name: "Coffee", Slug: "coffee"}); err != nil {
		t.Fatalf("a tag with its slug after the refusal: %v", err)
	}
}

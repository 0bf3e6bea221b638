package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// A database records the check value of the first secret key it is opened
// with, and refuses another, naming the problem.
func TestCheckSecretKey(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	if err := db.CheckSecretKey(ctx, "aaaa"); err != nil {
		t.Fatalf("first key: %v", err)
	}
	if err := db.CheckSecretKey(ctx, "aaaa"); err != nil {
		t.Fatalf("the same key again: %v", err)
	}
	err := db.CheckSecretKey(ctx, "bbbb")
	wantKind(t, err, store.KindConflict)
	if !strings.Contains(store.Message(err), "sealed with another secret key") || !strings.Contains(store.Message(err), "COPYDESK_SECRET_KEY") {
		t.Errorf("message %q does not say what is wrong and what to do", store.Message(err))
	}
}

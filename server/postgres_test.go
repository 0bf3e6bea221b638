package server_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store/storetest"
)

// Instances of one installation on PostgreSQL share its secret key: a
// start with another key is refused, naming the problem, before anything
// is served; the right key opens it again.
func TestPostgresRefusesAnotherSecretKey(t *testing.T) {
	url := storetest.NewPostgres(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(key string) (*server.App, error) {
		return server.OpenData(context.Background(), server.Config{DataDir: t.TempDir(), Database: url, SecretKey: key, Version: "test"}, log)
	}
	app, err := open(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open(strings.Repeat("x", 32)); err == nil || !strings.Contains(err.Error(), "sealed with another secret key") {
		t.Fatalf("another key: %v, want a refusal naming the key", err)
	}
	app, err = open(testSecret)
	if err != nil {
		t.Fatalf("the installation's key again: %v", err)
	}
	app.Close()
}

// --database takes a PostgreSQL address only.
func TestDatabaseMustBePostgres(t *testing.T) {
	_, err := server.OpenData(context.Background(), server.Config{DataDir: t.TempDir(), Database: "/var/lib/copydesk.db",
		SecretKey: testSecret, Version: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Fatalf("got %v, want a refusal naming the form of the address", err)
	}
}

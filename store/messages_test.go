package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// fillInbox gives recipient n messages from sender, written straight into
// the file for speed (the benchmark is about reading them).
func fillInbox(t testing.TB, db *store.DB, sender, recipient int64, n int) {
	t.Helper()
	conn, err := store.RawConn(db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.Begin()
	if err != nil {
		t.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO messages (sender_id, recipient_id, pair_lo, pair_hi, subject, body, read_at, created_at)
		VALUES (?, ?, ?, ?, '', ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := min(sender, recipient), max(sender, recipient)
	for i := 0; i < n; i++ {
		var readAt any
		if i%3 == 0 {
			readAt = "2025-06-01T12:00:00.000Z"
		}
		if _, err := st.Exec(sender, recipient, lo, hi, fmt.Sprintf("message %d: %s", i, strings.Repeat("words ", 20)), readAt,
			fmt.Sprintf("2025-06-01T12:%02d:%02d.000Z", (i/60)%60, i%60)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The inbox query walks its index in id order: no table scan, no sort.
func TestInboxUsesIndex(t *testing.T) {
	db, _ := openDB(t)
	a := mustUser(t, db, "alice", store.RoleViewer)
	b := mustUser(t, db, "bob", store.RoleViewer)
	fillInbox(t, db, a.ID, b.ID, 500)
	conn, err := store.PlanConn(t, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Exec(`ANALYZE`)
	for name, q := range map[string]string{
		"inbox":  store.InboxQuery,
		"unread": strings.Replace(store.InboxQuery, "m.recipient_deleted_at IS NULL", "m.recipient_deleted_at IS NULL AND m.read_at IS NULL", 1),
	} {
		rows, err := conn.Query(`EXPLAIN QUERY PLAN `+q, b.ID, 50, 0)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, " | ")
		t.Logf("%s plan: %s", name, joined)
		if !strings.Contains(joined, "SEARCH m USING INDEX messages_inbox") || strings.Contains(joined, "TEMP B-TREE") || strings.Contains(joined, "SCAN m") {
			t.Errorf("%s does not walk messages_inbox*: %s", name, joined)
		}
	}
	list, total, err := db.Inbox(context.Background(), store.MessageFilter{UserID: b.ID, Page: store.Page{Page: 2, PerPage: 50}})
	if err != nil || total != 500 || len(list) != 50 || list[0].ID != 450 {
		t.Fatalf("inbox page 2: total %d, %d items, first %v, %v", total, len(list), list[0].ID, err)
	}
}

// BenchmarkInbox100k lists the first and a deep page of an inbox of
// 100,000 messages.
func BenchmarkInbox100k(b *testing.B) {
	db, _ := openDB(b)
	from := mustUser(b, db, "sender", store.RoleViewer)
	to := mustUser(b, db, "reader", store.RoleViewer)
	fillInbox(b, db, from.ID, to.ID, 100000)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    store.MessageFilter
	}{
		{"FirstPage", store.MessageFilter{UserID: to.ID, Page: store.Page{Page: 1, PerPage: 50}}},
		{"Page1000", store.MessageFilter{UserID: to.ID, Page: store.Page{Page: 1000, PerPage: 50}}},
		{"UnreadFirstPage", store.MessageFilter{UserID: to.ID, UnreadOnly: true, Page: store.Page{Page: 1, PerPage: 50}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				list, total, err := db.Inbox(ctx, c.f)
				if err != nil || len(list) != 50 || total < 60000 {
					b.Fatalf("%d items of %d: %v", len(list), total, err)
				}
			}
		})
	}
}

// Only the recipient's kept copy can be marked read, and only once: a
// second mark keeps the first time.
func TestMarkMessageRead(t *testing.T) {
	db, clk := openDB(t)
	ctx := context.Background()
	a := mustUser(t, db, "alice", store.RoleViewer)
	b := mustUser(t, db, "bob", store.RoleViewer)
	m, err := db.CreateMessage(ctx, store.NewMessage{SenderID: a.ID, RecipientID: b.ID, Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.MarkMessageRead(ctx, a.ID, m.ID); !store.IsNotFound(err) {
		t.Fatalf("sender: %v, want not found", err)
	}
	first, err := db.MarkMessageRead(ctx, b.ID, m.ID)
	if err != nil || first.ReadAt == nil {
		t.Fatalf("recipient: %v %+v", err, first)
	}
	clk.Advance(time.Minute)
	again, err := db.MarkMessageRead(ctx, b.ID, m.ID)
	if err != nil || !again.ReadAt.Equal(*first.ReadAt) {
		t.Fatalf("second mark: %v, read at %v, want %v", err, again.ReadAt, first.ReadAt)
	}
	if err := db.DeleteMessageFor(ctx, b.ID, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.MarkMessageRead(ctx, b.ID, m.ID); !store.IsNotFound(err) {
		t.Fatalf("after delete: %v, want not found", err)
	}
}

// A message to a user that does not exist breaks a reference (422), not
// the server.
func TestCreateMessageUnknownRecipient(t *testing.T) {
	db, _ := openDB(t)
	a := mustUser(t, db, "alice", store.RoleViewer)
	_, err := db.CreateMessage(context.Background(), store.NewMessage{SenderID: a.ID, RecipientID: 9999, Body: "hi"})
	if store.KindOf(err) != store.KindInvalid {
		t.Fatalf("got %v, want invalid", err)
	}
}

// The conversation list the triggers keep always equals what the messages
// say, through writes, reads, deletes for one side or both, and a user's
// removal (whose messages go with them).
func TestConversationsFollowMessages(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	var users []int64
	for _, name := range []string{"ann", "ben", "cat", "dan"} {
		users = append(users, mustUser(t, db, name, store.RoleViewer).ID)
	}
	raw := rawOf(t, db)
	rnd := rand.New(rand.NewPCG(7, 8))
	var ids []int64
	check := func(step string) {
		t.Helper()
		for _, u := range users {
			got, total, err := db.Conversations(ctx, u, store.Page{Page: 1, PerPage: 100})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := raw.Query(`SELECT other, MAX(id), COUNT(*), SUM(unread) FROM (
				SELECT recipient_id AS other, id, 0 AS unread FROM messages WHERE sender_id = ?1 AND sender_deleted_at IS NULL
				UNION ALL
				SELECT sender_id, id, CASE WHEN read_at IS NULL THEN 1 ELSE 0 END FROM messages WHERE recipient_id = ?1 AND recipient_deleted_at IS NULL
			) AS kept GROUP BY other ORDER BY 2 DESC`, u)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for rows.Next() {
				var other, last, n, unread int64
				if err := rows.Scan(&other, &last, &n, &unread); err != nil {
					t.Fatal(err)
				}
				want = append(want, fmt.Sprintf("with %d: last %d, %d messages, %d unread", other, last, n, unread))
			}
			rows.Close()
			var have []string
			for _, c := range got {
				have = append(have, fmt.Sprintf("with %d: last %d, %d messages, %d unread", c.With.ID, c.Last.ID, c.Total, c.Unread))
			}
			if strings.Join(have, "\n") != strings.Join(want, "\n") || total != len(want) {
				t.Fatalf("after %s, user %d's conversations (total %d):\n%s\nwant:\n%s", step, u, total,
					strings.Join(have, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	for i := 0; i < 300; i++ {
		from, to := users[rnd.IntN(len(users))], users[rnd.IntN(len(users))]
		switch op := rnd.IntN(4); {
		case op < 2 || len(ids) == 0:
			if from == to {
				continue
			}
			m, err := db.CreateMessage(ctx, store.NewMessage{SenderID: from, RecipientID: to, Body: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		case op == 2:
			// Either side, or a user it does not concern (not found).
			if _, err := db.MarkMessageRead(ctx, from, ids[rnd.IntN(len(ids))]); err != nil && !store.IsNotFound(err) {
				t.Fatal(err)
			}
		default:
			if err := db.DeleteMessageFor(ctx, from, ids[rnd.IntN(len(ids))]); err != nil && !store.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		check(fmt.Sprintf("step %d", i))
	}
	if _, err := raw.Exec(`PRAGMA foreign_keys = ON; DELETE FROM users WHERE id = ?`, users[0]); err != nil {
		t.Fatal(err)
	}
	users = users[1:]
	check("removing a user")
}

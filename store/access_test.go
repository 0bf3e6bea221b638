package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// A note about an environment reaches only those who may see it when it is
// stored: grants are read by the insert itself, so recipients chosen
// before a user lost the environment (or their account) skip them.
func TestNotificationsGoOnlyToWhoSeesTheEnvironment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	a, b := mustEnv(t, db, "a"), mustEnv(t, db, "b")
	member, removed := mustUser(t, db, "member", store.RoleEditor), mustUser(t, db, "removed", store.RoleEditor)
	disabled, admin := mustUser(t, db, "disabled", store.RoleEditor), mustUser(t, db, "admin", store.RoleAdmin)
	outsider := mustUser(t, db, "outsider", store.RoleViewer)
	for _, u := range []*store.User{member, removed, disabled} {
		if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{a.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SetUserEnvironments(ctx, outsider.ID, []int64{b.ID}); err != nil {
		t.Fatal(err)
	}
	everyone := []int64{member.ID, removed.ID, disabled.ID, admin.ID, outsider.ID}
	chosen, err := db.EnvironmentMemberIDs(ctx, a.ID, store.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	// A viewer granted the environment is a member, but not an editor.
	viewer := mustUser(t, db, "viewer", store.RoleViewer)
	if _, err := db.SetUserEnvironments(ctx, viewer.ID, []int64{a.ID}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		min  store.Role
		want []int64
	}{
		{store.RoleViewer, []int64{member.ID, removed.ID, disabled.ID, admin.ID, viewer.ID}},
		{store.RoleEditor, []int64{member.ID, removed.ID, disabled.ID, admin.ID}},
		{store.RoleAdmin, []int64{admin.ID}},
	} {
		got, err := db.EnvironmentMemberIDs(ctx, a.ID, c.min)
		slices.Sort(got)
		slices.Sort(c.want)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("members at least %s: %v, %v; want %v", c.min, got, err, c.want)
		}
	}
	// Access changes between choosing the recipients and delivering.
	if _, err := db.SetUserEnvironments(ctx, removed.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetUserActive(ctx, disabled.ID, false); err != nil {
		t.Fatal(err)
	}
	recipients := func(created []*store.Notification) []int64 {
		out := []int64{}
		for _, n := range created {
			out = append(out, n.UserID)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		name string
		ids  []int64
		env  *int64
		want []int64
	}{
		{"MembersChosenBefore", chosen, &a.ID, []int64{member.ID, admin.ID}},
		{"Everyone", everyone, &a.ID, []int64{member.ID, admin.ID}},
		{"OneRemovedUser", []int64{removed.ID}, &a.ID, []int64{}},
		{"NoEnvironment", []int64{removed.ID, outsider.ID}, nil, []int64{removed.ID, outsider.ID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			created, err := db.CreateNotifications(ctx, c.ids, store.NewNotification{Kind: "run.succeeded", Title: "t", Body: "secret output",
				EnvironmentID: c.env})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.want)
			slices.Sort(want)
			if got := recipients(created); !slices.Equal(got, want) {
				t.Fatalf("delivered to %v, want %v", got, want)
			}
		})
	}
	for _, u := range []*store.User{removed, disabled} {
		list, _, err := db.ListNotifications(ctx, store.NotificationFilter{UserID: u.ID, Page: store.Page{Page: 1, PerPage: 50}})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range list {
			if n.EnvironmentID != nil {
				t.Errorf("%d holds a note about environment %d it lost", u.ID, *n.EnvironmentID)
			}
		}
	}
}

// SetAgentAssignments changes the part of the assignments the scope sees
// and keeps the rest; SeenBy shows a scope only its part.
func TestAgentAssignmentsOutsideTheScopeAreKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	ed := mustUser(t, db, "ed", store.RoleEditor)
	a, b, c := mustEnv(t, db, "a"), mustEnv(t, db, "b"), mustEnv(t, db, "c")
	ag, err := db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &a.ID, Name: "w", Kind: "writer", IsActive: true}, ed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetAgentAssignments(ctx, ag.ID, store.Everything, []int64{b.ID, c.ID}); err != nil {
		t.Fatal(err)
	}
	scopeAC := store.NewScope(ed.ID, false, []int64{a.ID, c.ID})
	got, err := db.SetAgentAssignments(ctx, ag.ID, scopeAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{b.ID}) {
		t.Fatalf("after clearing the visible part: %v, want [%d] (B kept)", got, b.ID)
	}
	if _, err := db.SetAgentAssignments(ctx, ag.ID, scopeAC, []int64{b.ID}); err == nil {
		t.Errorf("a scope assigns to an environment it does not see")
	} else {
		wantKind(t, err, store.KindInvalid)
	}
	if got, err = db.SetAgentAssignments(ctx, ag.ID, scopeAC, []int64{c.ID}); err != nil || !slices.Equal(got, []int64{b.ID, c.ID}) {
		t.Fatalf("assign C: %v %v", got, err)
	}
	full, err := db.AgentByID(ctx, ag.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		sc   store.Scope
		want []int64
	}{{store.Everything, []int64{b.ID, c.ID}}, {scopeAC, []int64{c.ID}}, {store.NewScope(ed.ID, false, []int64{a.ID}), []int64{}}} {
		if got := full.SeenBy(s.sc).Assignments; fmt.Sprint(got) != fmt.Sprint(s.want) || got == nil {
			t.Errorf("SeenBy(%+v) = %v, want %v", s.sc, got, s.want)
		}
	}
	if !slices.Equal(full.Assignments, []int64{b.ID, c.ID}) {
		t.Errorf("SeenBy changed the agent it was given: %v", full.Assignments)
	}
}

package migrations

import "testing"

// TestList: the files are numbered 1, 2, 3, … with no gap or repeat,
// each has SQL, and Latest is the last of them.
func TestList(t *testing.T) {
	ms, err := List()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("migration %d is %s: numbers must run 1, 2, 3, … without a gap or a repeat", i+1, m.Name)
		}
		if sql, err := SQL(m.Name); err != nil || len(sql) == 0 {
			t.Errorf("SQL(%q) = %d bytes, %v", m.Name, len(sql), err)
		}
	}
	if got, want := Latest(), ms[len(ms)-1].Version; got != want {
		t.Errorf("Latest() = %d, want %d", got, want)
	}
}

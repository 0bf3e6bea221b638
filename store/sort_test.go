package store

import "testing"

func TestSortOrderBy(t *testing.T) {
	t.Parallel()
	cols := map[string]string{"name": "k.name COLLATE NOCASE", "volume": "k.volume"}
	cases := []struct {
		in, want string
		invalid  bool
	}{
		{"", "k.id DESC", false},
		{"name", "k.name COLLATE NOCASE ASC, k.id ASC", false},
		{"-volume", "k.volume DESC, k.id DESC", false},
		{"cpc", "", true},
		{"-", "", true},
	}
	for _, c := range cases {
		s := ParseSort(c.in)
		if s.String() != c.in {
			t.Errorf("ParseSort(%q).String() = %q", c.in, s.String())
		}
		got, err := s.orderBy(cols, "k.id DESC", "k.id")
		if c.invalid {
			if KindOf(err) != KindInvalid {
				t.Errorf("%q: err = %v, want invalid", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

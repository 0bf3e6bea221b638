package lexical_test

import (
	"slices"
	"testing"

	"github.com/copydesk/copydesk/server/lexical"
)

func TestStem(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"shoe", "shoes"},
		{"box", "boxes"},
		{"dish", "dishes"},
		{"glass", "glasses"},
		{"recipe", "recipes"},
		{"family", "families"},
		{"run", "running"},
		{"stop", "stopped", "stopping", "stops"},
		{"bake", "baked", "baking", "bakes"},
		{"brew", "brewing", "brewed", "brews"},
	}
	for _, forms := range same {
		want := lexical.Stem(forms[0])
		for _, f := range forms[1:] {
			if got := lexical.Stem(f); got != want {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want one term", forms[0], want, f, got)
			}
		}
	}
	// Short words, words in -ss, -us, -is, and words of other scripts stay.
	for _, w := range []string{"gas", "bus", "class", "analysis", "king", "bed", "café", "кофе"} {
		if got := lexical.Stem(w); got != w {
			t.Errorf("Stem(%q) = %q; want it unchanged", w, got)
		}
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
	}{
		{"Best Running Shoes for Women", []string{"best", "run", "sho", "women"}},
		{"  running   shoes  ", []string{"run", "sho"}},
		{"shoes, running!", []string{"run", "sho"}},
		{"how to make cold brew?", []string{"brew", "cold", "mak"}},
		{"the and of", []string{}},
		{"Café  Latte", []string{"café", "latt"}},
	}
	for _, c := range cases {
		if got := lexical.Terms(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Terms(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestSimilarity(t *testing.T) {
	t.Parallel()
	a, b := []string{"best", "run", "sho"}, []string{"run", "sho"}
	if got := lexical.Jaccard(a, b); got != 2.0/3 {
		t.Errorf("Jaccard = %v; want 2/3", got)
	}
	if got := lexical.Jaccard(nil, nil); got != 0 {
		t.Errorf("Jaccard of nothing = %v", got)
	}
	if got := lexical.Containment(a, b); got != 1 {
		t.Errorf("Containment = %v; want 1 (a has all of b)", got)
	}
	if got := lexical.Containment(b, a); got != 2.0/3 {
		t.Errorf("Containment = %v; want 2/3", got)
	}
	if got := lexical.Containment(a, nil); got != 0 {
		t.Errorf("Containment of nothing = %v", got)
	}
}

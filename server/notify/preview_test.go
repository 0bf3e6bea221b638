package notify

import (
	"strings"
	"testing"
)

func TestPreview(t *testing.T) {
	cases := []struct {
		name, text string
		n          int
		want       string
	}{
		{"Short", "Hi Ben", 140, "Hi Ben"},
		{"WhitespaceCollapsed", "  Hi\n\n\tBen  ", 140, "Hi Ben"},
		{"CutOnWord", "the draft is ready for review", 15, "the draft is…"},
		{"NoSpaceToCut", strings.Repeat("é", 20), 10, strings.Repeat("é", 10) + "…"},
		{"SpaceTooEarly", "a " + strings.Repeat("b", 20), 10, "a " + strings.Repeat("b", 8) + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Preview(c.text, c.n); got != c.want {
				t.Fatalf("Preview(%q, %d) = %q, want %q", c.text, c.n, got, c.want)
			}
		})
	}
}

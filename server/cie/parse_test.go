package cie_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/cie"
)

func TestParseArticle(t *testing.T) {
	cases := []struct {
		name, raw string
		want      cie.Article
		err       string
	}{
		{"OK", "TITLE: T\nDESCRIPTION: D\n---\nBody\n\nmore", cie.Article{Title: "T", Description: "D", Body: "Body\n\nmore"}, ""},
		{"BlankLinesAndCase", "\n\ntitle:  T \n\nDescription: D\n\n---\n\n# Body\n", cie.Article{Title: "T", Description: "D", Body: "# Body"}, ""},
		{"Fenced", "```markdown\nTITLE: T\nDESCRIPTION: D\n---\nBody\n```", cie.Article{Title: "T", Description: "D", Body: "Body"}, ""},
		{"CRLF", "TITLE: T\r\nDESCRIPTION: D\r\n---\r\nBody", cie.Article{Title: "T", Description: "D", Body: "Body"}, ""},
		{"Chatter", "Sure! Here it is.\nTITLE: T", cie.Article{}, `expected a line starting with "TITLE:", found "Sure! Here it is."`},
		{"Empty", "", cie.Article{}, "ends before its TITLE: line"},
		{"EmptyTitle", "TITLE:\nDESCRIPTION: D\n---\nB", cie.Article{}, "the TITLE: line is empty"},
		{"NoDescription", "TITLE: T\n---\nB", cie.Article{}, `starting with "DESCRIPTION:"`},
		{"NoSeparator", "TITLE: T\nDESCRIPTION: D\nBody", cie.Article{}, `expected a line "---"`},
		{"NoBody", "TITLE: T\nDESCRIPTION: D\n---\n  \n", cie.Article{}, "body after the \"---\" line is empty"},
		{"LongTitle", "TITLE: " + strings.Repeat("x", 301) + "\nDESCRIPTION: D\n---\nB", cie.Article{}, "longer than 300"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := cie.ParseArticle(c.raw)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseArticle = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

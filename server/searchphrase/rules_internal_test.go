package searchphrase

import (
	"slices"
	"testing"

	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/store"
)

func TestKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Cold Brew":                 "cold brew",
		"  cold\tbrew \n at  home ": "cold brew at home",
		"Cafe\u0301 CRÈME":          "café crème", // NFD in, NFC out, lower case
		"ÉTÉ":                       "été",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
	if Key("Cafe\u0301") != Key("caf\u00e9") {
		t.Error("the two spellings of é differ after normalisation")
	}
}

func TestCheckPhrase(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, phrase, key string
		invalid         bool
	}{
		{in: "  Best   Running Shoes ", phrase: "Best Running Shoes", key: "best running shoes"},
		{in: "   ", invalid: true},
		{in: "two\nlines", invalid: true},
		{in: string(make([]rune, 201)), invalid: true},
	}
	for _, c := range cases {
		phrase, key, err := checkPhrase(c.in)
		if c.invalid {
			if store.KindOf(err) != store.KindInvalid {
				t.Errorf("%q: err %v, want invalid", c.in, err)
			}
			continue
		}
		if err != nil || phrase != c.phrase || key != c.key {
			t.Errorf("%q: %q %q %v", c.in, phrase, key, err)
		}
	}
}

func TestParseIdeas(t *testing.T) {
	t.Parallel()
	answer := "Here are related queries:\n" +
		"1. cold brew ratio\n" +
		"2) \"cold brew vs iced coffee\"\n" +
		"- how long does cold brew last?\n" +
		"* • cold brew concentrate\n" +
		"\n" +
		"   cold brew at home   \n" +
		"10. best beans for cold brew\n" +
		"2024 cold brew trends\n"
	want := []string{"cold brew ratio", "cold brew vs iced coffee", "how long does cold brew last?", "cold brew concentrate",
		"cold brew at home", "best beans for cold brew", "2024 cold brew trends"}
	if got := ParseIdeas(answer); !slices.Equal(got, want) {
		t.Errorf("ParseIdeas:\n got %q\nwant %q", got, want)
	}
	many := ""
	for range 100 {
		many += "idea\n"
	}
	if n := len(ParseIdeas(many)); n != maxAIIdeas {
		t.Errorf("%d ideas taken of 100 lines, want %d", n, maxAIIdeas)
	}
}

func TestSerpQuery(t *testing.T) {
	t.Parallel()
	for locale, want := range map[string]serp.Query{
		"en":         {Q: "x", Language: "en"},
		"en-US":      {Q: "x", Language: "en", Country: "us"},
		"pt-BR":      {Q: "x", Language: "pt", Country: "br"},
		"zh-Hant-TW": {Q: "x", Language: "zh", Country: "tw"},
		"es-419":     {Q: "x", Language: "es"},
	} {
		if got := serp.QueryIn("x", locale); got != want {
			t.Errorf("serp.QueryIn(%q) = %+v, want %+v", locale, got, want)
		}
	}
}

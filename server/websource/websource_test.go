package websource_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/websource"
	"github.com/copydesk/copydesk/store"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
		detail   string // of the 422, when refused
	}{
		{in: " https://blog.example/feed.xml ", want: "https://blog.example/feed.xml"},
		{in: "http://blog.example/?feed=rss2#top", want: "http://blog.example/?feed=rss2"},
		{in: "http://10.0.0.5:8080/feed", want: "http://10.0.0.5:8080/feed"}, // judged when fetched
		{in: "ftp://blog.example/feed", detail: "url: must be an http or https address"},
		{in: "blog.example/feed", detail: "url: must be an http or https address"},
		{in: "https://ann:pw@blog.example/feed", detail: "url: must be an http or https address"},
		{in: "http://169.254.169.254/latest/meta-data/", detail: "url: address 169.254.169.254 is not allowed"},
		{in: "http://[fe80::1]/feed", detail: "url: address fe80::1 is not allowed"},
		{in: "https://blog.example/\nfeed", detail: "url: must not contain control characters"},
		{in: "https://blog.example/" + strings.Repeat("a", 2048), detail: "url: must be at most 2048 characters"},
	}
	for _, c := range cases {
		got, err := websource.CheckURL(c.in)
		if c.detail != "" {
			if store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), c.detail) {
				t.Errorf("%q: %q, %v; want a 422 starting %q", c.in, got, err, c.detail)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

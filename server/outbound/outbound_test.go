package outbound_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/outbound"
)

func TestCheck(t *testing.T) {
	const (
		ok      = iota // allowed whatever the setting
		private        // refused only with RefusePrivate
		never          // refused always
	)
	cases := []struct {
		addr string
		want int
	}{
		{"169.254.169.254", never},
		{"169.254.0.1", never},
		{"169.254.255.255", never},
		{"::ffff:169.254.169.254", never},
		{"64:ff9b::169.254.169.254", never},
		{"fd00:ec2::254", never},
		{"fe80::1", never},
		{"fe80::1%eth0", never},
		{"100.100.100.200", never},
		{"::ffff:100.100.100.200", never},

		{"127.0.0.1", private},
		{"127.1.2.3", private},
		{"::1", private},
		{"::ffff:127.0.0.1", private},
		{"0.0.0.0", private},
		{"::", private},
		{"10.0.0.1", private},
		{"172.16.0.1", private},
		{"172.31.255.255", private},
		{"192.168.1.10", private},
		{"::ffff:192.168.1.10", private},
		{"fc00::1", private},
		{"fd12:3456::1", private},
		{"fd00:ec2::253", private},
		{"100.64.0.1", private},
		{"100.100.100.201", private},
		{"192.0.2.1", private},
		{"198.18.0.1", private},
		{"224.0.0.1", private},
		{"255.255.255.255", private},
		{"ff02::1", private},
		{"2001:db8::1", private},
		{"64:ff9b::10.0.0.1", private},

		{"8.8.8.8", ok},
		{"1.1.1.1", ok},
		{"172.32.0.1", ok},
		{"169.253.255.255", ok},
		{"169.255.0.1", ok},
		{"100.128.0.1", ok},
		{"2606:4700:4700::1111", ok},
		{"::ffff:8.8.8.8", ok},
		{"64:ff9b::8.8.8.8", ok},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(c.addr)
			for _, refusePrivate := range []bool{false, true} {
				err := outbound.Check(ip, refusePrivate)
				wantRefused := c.want == never || (c.want == private && refusePrivate)
				if (err != nil) != wantRefused {
					t.Fatalf("Check(%s, refusePrivate=%v) = %v, want refused=%v", c.addr, refusePrivate, err, wantRefused)
				}
				if err == nil {
					continue
				}
				var ae *outbound.AddressError
				if !errors.As(err, &ae) || ae.Always != (c.want == never) {
					t.Fatalf("Check(%s) = %#v", c.addr, err)
				}
				if !strings.HasPrefix(err.Error(), "address "+ip.String()+" is not allowed") {
					t.Errorf("message %q", err)
				}
			}
		})
	}
}

func TestClient(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	cases := []struct {
		name    string
		opt     outbound.Options
		refused bool
	}{
		{"loopback allowed by default", outbound.Options{}, false},
		{"loopback refused", outbound.Options{RefusePrivate: true}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := hits.Load()
			res, err := outbound.NewClient(c.opt).Get(srv.URL)
			if !c.refused {
				if err != nil {
					t.Fatal(err)
				}
				_ = res.Body.Close()
				return
			}
			var ae *outbound.AddressError
			if !errors.As(err, &ae) || ae.Addr != netip.MustParseAddr("127.0.0.1") {
				t.Fatalf("error = %v, want an *AddressError for 127.0.0.1", err)
			}
			if !strings.Contains(err.Error(), "address 127.0.0.1 is not allowed") {
				t.Errorf("message %q", err)
			}
			if hits.Load() != before {
				t.Error("the refused server was reached")
			}
		})
	}
}

func TestRedirect(t *testing.T) {
	t.Parallel()
	// The guard judges every hop: a public-looking first hop may send the
	// client anywhere, so where it is sent is checked again.
	var hops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		switch r.URL.Path {
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/metadata-v6":
			http.Redirect(w, r, "http://[fd00:ec2::254]/latest/meta-data/", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)

	for _, path := range []string{"/metadata", "/metadata-v6"} {
		t.Run("to metadata"+path, func(t *testing.T) {
			_, err := outbound.NewClient(outbound.Options{}).Get(srv.URL + path)
			var ae *outbound.AddressError
			if !errors.As(err, &ae) || !ae.Always {
				t.Fatalf("error = %v, want the metadata address refused", err)
			}
		})
	}
	t.Run("limit", func(t *testing.T) {
		before := hops.Load()
		_, err := outbound.NewClient(outbound.Options{MaxRedirects: 3}).Get(srv.URL + "/loop")
		if !errors.Is(err, outbound.ErrTooManyRedirects) {
			t.Fatalf("error = %v, want too many redirects", err)
		}
		if n := hops.Load() - before; n != 4 {
			t.Errorf("%d requests, want 4 (the first and 3 redirects)", n)
		}
	})
	t.Run("none", func(t *testing.T) {
		_, err := outbound.NewClient(outbound.Options{MaxRedirects: -1}).Get(srv.URL + "/loop")
		if !errors.Is(err, outbound.ErrTooManyRedirects) {
			t.Fatalf("error = %v, want too many redirects", err)
		}
	})
}

func TestResolvedName(t *testing.T) {
	t.Parallel()
	// A name is judged by the address it resolves to: "localhost" is
	// loopback however it is spelled.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://localhost:"+port+"/", nil)
	_, err := outbound.NewClient(outbound.Options{RefusePrivate: true}).Do(req)
	var ae *outbound.AddressError
	if !errors.As(err, &ae) || !ae.Addr.IsLoopback() {
		t.Fatalf("error = %v, want localhost refused", err)
	}
	if !strings.Contains(err.Error(), "(--outbound-private=false)") {
		t.Errorf("error = %v, want the setting that refused it named", err)
	}
	// A client whose refusal comes from another setting names that one.
	_, err = outbound.NewClient(outbound.Options{RefusePrivate: true, RefusedBy: "--other-setting"}).Do(req)
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "(--other-setting)") {
		t.Errorf("error = %v, want --other-setting named", err)
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 300)
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"  short  ", 200, "short"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{long, 200, strings.Repeat("é", 199) + "…"},
		{"bad \xff byte", 200, "bad \uFFFD byte"},
		{"", 200, ""},
	}
	for _, c := range cases {
		got := outbound.Excerpt(c.in, c.limit)
		if got != c.want {
			t.Errorf("Excerpt(%.20q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
		if n := utf8.RuneCountInString(got); n > c.limit {
			t.Errorf("Excerpt(%.20q, %d) has %d characters", c.in, c.limit, n)
		}
	}
}

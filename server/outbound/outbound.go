// Package outbound is the one way copydesk's server calls out over HTTP:
// LLM providers, WordPress sites, the SERP API and the credential tests
// that call them. Its clients refuse, at connect time, the addresses a
// caller-supplied URL must never reach: link-local and cloud metadata
// addresses always, and private, loopback and other non-public ranges
// when the server is told so (`serve --outbound-private=false`).
//
// The check runs in the dialer's Control function, which sees the IP
// address after DNS resolution, for every connection, including each hop
// of a redirect: a name that resolves (or re-resolves) to a refused
// address is refused like the address itself.
package outbound

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultMaxRedirects is how many redirects a client follows when
// Options.MaxRedirects is 0. A provider API or WordPress site that
// redirects more than this is misconfigured, not slow.
const DefaultMaxRedirects = 5

// Options builds a client.
type Options struct {
	// RefusePrivate refuses private (RFC 1918, fc00::/7), loopback,
	// unspecified, shared (100.64.0.0/10) and the other non-public
	// ranges. The zero value allows them: local models (Ollama) are
	// common.
	RefusePrivate bool
	// RefusedBy names the setting that refuses private addresses, for the
	// error a refused call gets; "--outbound-private=false" when empty.
	RefusedBy string
	// Timeout bounds a whole request, redirects and body included; 0 for
	// none (callers bound their calls with a context).
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed: 0 means
	// DefaultMaxRedirects, a negative number none.
	MaxRedirects int
}

// AddressError is a connection the guard refused.
type AddressError struct {
	Addr netip.Addr
	// Always is true for the addresses no setting allows (link-local,
	// cloud metadata).
	Always bool
	// By is the setting that refused it (Options.RefusedBy).
	By string
}

func (e *AddressError) Error() string {
	if e.Always {
		return fmt.Sprintf("address %s is not allowed: link-local and cloud metadata addresses are never called", e.Addr)
	}
	by := e.By
	if by == "" {
		by = "--outbound-private=false"
	}
	return fmt.Sprintf("address %s is not allowed: private and loopback addresses are refused (%s)", e.Addr, by)
}

// Check says whether a connection to ip may be made: nil, or an
// *AddressError. An IPv4 address in IPv6 clothing (::ffff:a.b.c.d, and
// NAT64's 64:ff9b::a.b.c.d) is judged as the IPv4 address it carries.
func Check(ip netip.Addr, refusePrivate bool) error {
	orig := ip
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	} else if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	if !ip.IsValid() {
		return &AddressError{Addr: orig, Always: true}
	}
	for _, p := range alwaysRefused {
		if p.Contains(ip) {
			return &AddressError{Addr: orig, Always: true}
		}
	}
	if !refusePrivate {
		return nil
	}
	if ip.IsPrivate() || ip.IsLoopback() || ip.IsUnspecified() || ip.IsMulticast() {
		return &AddressError{Addr: orig}
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return &AddressError{Addr: orig}
		}
	}
	return nil
}

var (
	// alwaysRefused: no copydesk call has business there, and a cloud
	// server's metadata service (its credentials) lives there.
	alwaysRefused = prefixes(
		"169.254.0.0/16",     // IPv4 link-local: AWS, GCP, Azure, Oracle metadata at 169.254.169.254
		"fe80::/10",          // IPv6 link-local
		"fd00:ec2::254/128",  // AWS metadata over IPv6
		"100.100.100.200/32", // Alibaba Cloud metadata (the rest of 100.64/10 is Tailscale and CGNAT)
	)
	// nonPublic: reachable only inside some network, refused with
	// RefusePrivate (besides private, loopback, unspecified, multicast).
	nonPublic = prefixes(
		"0.0.0.0/8",       // "this network"; 0.0.0.0 reaches the local host
		"100.64.0.0/10",   // shared address space (CGNAT, Tailscale)
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved, and 255.255.255.255
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
		"fec0::/10",       // site-local (deprecated)
	)
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// control is the dialer's Control: it runs after resolution, before the
// connection is made, for every address tried.
func control(opt Options) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("outbound: cannot check address %q: %w", address, err)
		}
		err = Check(ap.Addr(), opt.RefusePrivate)
		if ae, ok := err.(*AddressError); ok && !ae.Always {
			ae.By = opt.RefusedBy
		}
		return err
	}
}

// NewTransport returns a transport whose connections pass the guard. It
// uses no proxy, not even one from HTTP_PROXY/HTTPS_PROXY: through a proxy
// the guard would see the proxy's address and not the target's.
func NewTransport(opt Options) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: control(opt)}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// ErrTooManyRedirects is wrapped by the error of a call that was
// redirected more often than the client follows.
var ErrTooManyRedirects = errors.New("too many redirects")

// NewClient returns a client whose connections pass the guard and that
// follows at most Options.MaxRedirects redirects.
func NewClient(opt Options) *http.Client {
	limit := opt.MaxRedirects
	switch {
	case limit == 0:
		limit = DefaultMaxRedirects
	case limit < 0:
		limit = 0
	}
	return &http.Client{
		Transport: NewTransport(opt),
		Timeout:   opt.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > limit {
				return fmt.Errorf("%w (more than %d)", ErrTooManyRedirects, limit)
			}
			return nil
		},
	}
}

// Default is the client of callers that were given none (library use and
// tests): private addresses allowed, metadata refused. The server passes
// its own, built from its configuration.
var Default = sync.OnceValue(func() *http.Client { return NewClient(Options{}) })

// Excerpt is at most limit characters of a remote text, for an error
// message: trimmed, cut at a character boundary with "…" when longer, and
// with invalid UTF-8 replaced.
func Excerpt(s string, limit int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if limit <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit-1 {
			return strings.TrimSpace(s[:i]) + "…"
		}
		n++
	}
	return s
}

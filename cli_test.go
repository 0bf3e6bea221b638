package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

func TestInvocation(t *testing.T) {
	for _, tc := range []struct{ arg0, want string }{
		{"./copydesk", "./copydesk"},
		{"/usr/local/bin/copydesk", "/usr/local/bin/copydesk"},
		{"copydesk", "copydesk"},
		{"/home/me/my tools/copydesk", `'/home/me/my tools/copydesk'`},
		{"/tmp/go-build1234567/b001/exe/copydesk", "go run ."},
		{`C:\Users\me\AppData\Local\Temp\go-build99\b001\exe\copydesk.exe`, "go run ."},
		{"", "copydesk"},
	} {
		if got := invocation(tc.arg0); got != tc.want {
			t.Errorf("invocation(%q) = %q, want %q", tc.arg0, got, tc.want)
		}
	}
}

func TestConsoleURL(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 80}, "http://127.0.0.1:80/"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9000}, "http://[::1]:9000/"},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8080}, "http://192.0.2.7:8080/"},
	} {
		if got := consoleURL(tc.addr); got != tc.want {
			t.Errorf("consoleURL(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// fakeTerminal answers readHidden with its lines, one per call.
type fakeTerminal struct {
	lines []string
	err   error
}

func (f *fakeTerminal) isTerminal(io.Reader) bool { return true }

func (f *fakeTerminal) readHidden(io.Reader) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	if len(f.lines) == 0 {
		return "", io.EOF
	}
	l := f.lines[0]
	f.lines = f.lines[1:]
	return l, nil
}

// Not parallel: it replaces the package's terminal.
func TestReadPasswordOnATerminal(t *testing.T) {
	saved := tty
	t.Cleanup(func() { tty = saved })
	for _, tc := range []struct {
		name    string
		term    *fakeTerminal
		want    string
		wantErr string
		prompts int
	}{
		{"same twice", &fakeTerminal{lines: []string{"correct horse", "correct horse"}}, "correct horse", "", 2},
		{"differ", &fakeTerminal{lines: []string{"correct horse", "correct horsE"}}, "", "the two passwords differ", 2},
		{"too short is refused before asking again", &fakeTerminal{lines: []string{"short"}}, "", "at least 8 characters", 1},
		{"read error", &fakeTerminal{err: errors.New("boom")}, "", "reading the password: boom", 1},
	} {
		tty = tc.term
		var prompt bytes.Buffer
		got, err := readPassword(strings.NewReader("never read\n"), &prompt)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
		if n := strings.Count(prompt.String(), ": "); n != tc.prompts {
			t.Errorf("%s: %d prompts (%q), want %d", tc.name, n, prompt.String(), tc.prompts)
		}
		if strings.Contains(prompt.String(), "horse") {
			t.Errorf("%s: the password was echoed: %q", tc.name, prompt.String())
		}
	}
}

// Piped input (scripts) is one line, read as it is, without prompts.
func TestReadPasswordPiped(t *testing.T) {
	var prompt bytes.Buffer
	got, err := readPassword(strings.NewReader("correct horse\r\nnext line\n"), &prompt)
	if err != nil || got != "correct horse" || prompt.Len() != 0 {
		t.Errorf("got %q, %v, prompt %q", got, err, prompt.String())
	}
}

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080":   "http://127.0.0.1:8080/api/health",
		"0.0.0.0:8080":     "http://127.0.0.1:8080/api/health",
		":9000":            "http://127.0.0.1:9000/api/health",
		"[::]:8080":        "http://[::1]:8080/api/health",
		"example.com:80":   "http://example.com:80/api/health",
		"[2001:db8::1]:80": "http://[2001:db8::1]:80/api/health",
	} {
		if got := healthURL(addr); got != want {
			t.Errorf("healthURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestVersionUnstamped is `copydesk version` from a build `make` did not
// stamp (go run, go install): the command line parser answers, with what
// the toolchain recorded.
func TestVersionUnstamped(t *testing.T) {
	var out bytes.Buffer
	cmd := newRootCmd(strings.NewReader(""), &out, io.Discard)
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "copydesk ") || len(lines[0]) == len("copydesk ") ||
		!strings.HasPrefix(lines[1], "commit ") || lines[3] != fmt.Sprintf("schema %d", store.SchemaVersion()) {
		t.Errorf("copydesk version printed:\n%s", out.String())
	}
}

// serve's metrics flags make a whole or are refused, naming the fix.
func TestCheckMetrics(t *testing.T) {
	const token = "0123456789abcdef"
	for _, c := range []struct {
		name    string
		cfg     server.Config
		http    string
		refusal string // "" when accepted
	}{
		{"off", server.Config{}, "", ""},
		{"token without --metrics", server.Config{MetricsToken: token}, "", "need --metrics"},
		{"address without --metrics", server.Config{}, "127.0.0.1:9464", "need --metrics"},
		{"on with no way in", server.Config{Metrics: true}, "", "--metrics-token TOKEN"},
		{"short token", server.Config{Metrics: true, MetricsToken: "abc"}, "", "at least 16"},
		{"token", server.Config{Metrics: true, MetricsToken: token}, "", ""},
		{"private address", server.Config{Metrics: true}, "127.0.0.1:9464", ""},
		{"both", server.Config{Metrics: true, MetricsToken: token}, "127.0.0.1:9464", ""},
		{"a port alone", server.Config{Metrics: true}, "9464", "--metrics-http 9464 is not an address"},
	} {
		err := checkMetrics(c.cfg, c.http)
		switch {
		case c.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)):
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.refusal)
		}
	}
}

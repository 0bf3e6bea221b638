package main

// What the commands share about the shell they run in: how copydesk was
// invoked (to print commands that run as printed), reading a password, and
// which data directories a command may use or create.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
)

// defaultDataDir is --data-dir's default.
const defaultDataDir = "./copydesk_data"

// invocation is how to run copydesk again from the shell the user is in:
// "go run ." when it was started by `go run` (its binary lives in a
// temporary build directory that is gone by the time the user pastes),
// otherwise the path it was started by ("./copydesk", "/usr/local/bin/copydesk"),
// or the bare name when it was found on $PATH.
func invocation(arg0 string) string {
	if isGoRun(arg0) {
		return "go run ."
	}
	if arg0 == "" {
		return "copydesk"
	}
	return shellQuote(arg0)
}

// isGoRun reports whether arg0 is a binary `go run` built: it lives in
// $GOTMPDIR or the temporary directory, under go-build*/.../exe/.
func isGoRun(arg0 string) bool {
	slashed := strings.ReplaceAll(arg0, `\`, "/") // also a Windows path, on any OS
	return strings.Contains(slashed, "/go-build") && strings.Contains(slashed, "/exe/")
}

// shellQuote quotes s for a POSIX shell unless it is plainly safe.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// terminal is what newPassword needs of a terminal; tests replace it.
type terminal interface {
	// isTerminal reports whether r is an interactive terminal.
	isTerminal(r io.Reader) bool
	// readHidden reads one line from the terminal r without echoing it.
	readHidden(r io.Reader) (string, error)
}

type osTerminal struct{}

func (osTerminal) isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (osTerminal) readHidden(r io.Reader) (string, error) {
	b, err := term.ReadPassword(int(r.(*os.File).Fd()))
	return string(b), err
}

// tty is the terminal of the running process.
var tty terminal = osTerminal{}

// readPassword reads a new password as --password-stdin promises. Piped
// input (scripts) is one line, read as it is. On a terminal it prompts on
// stderr, reads without echo, and asks twice, because a typo in a password
// nobody saw would lock the account out.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if tty.isTerminal(in) {
		fmt.Fprint(prompt, "New password: ")
		first, err := tty.readHidden(in)
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		if err := auth.CheckPassword("password", first); err != nil {
			return "", errors.New(store.Message(err))
		}
		fmt.Fprint(prompt, "Again: ")
		second, err := tty.readHidden(in)
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		if first != second {
			return "", errors.New("the two passwords differ; nothing was changed")
		}
		return first, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", errors.New("no password on standard input")
	}
	pw := strings.TrimRight(line, "\r\n")
	if err := auth.CheckPassword("password", pw); err != nil {
		return "", errors.New(store.Message(err))
	}
	return pw, nil
}

// requireData refuses a data directory that holds no copydesk database, so
// that a mistyped --data-dir is an error naming the path instead of a new,
// empty instance.
func requireData(dir string) error {
	db := filepath.Join(dir, server.DBFile)
	if _, err := os.Stat(db); err != nil {
		if _, derr := os.Stat(dir); derr != nil {
			return fmt.Errorf("data directory %s does not exist: check --data-dir (or COPYDESK_DATA_DIR)", dir)
		}
		return fmt.Errorf("%s holds no copydesk database (%s): check --data-dir (or COPYDESK_DATA_DIR)", dir, server.DBFile)
	}
	return nil
}

// requireRestoreTarget is restore's check: the directory must exist, and
// unless it holds an instance already, the secret key the snapshot was
// made under must be there (or in COPYDESK_SECRET_KEY). A restore into a
// fresh directory would otherwise create a new key that opens none of the
// snapshot's stored secrets.
func requireRestoreTarget(dir string) error {
	if requireData(dir) == nil {
		return nil
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("data directory %s does not exist: check --data-dir; to restore onto a new machine, create it and copy the old instance's %s into it first", dir, keyring.FileName)
	}
	if _, err := os.Stat(filepath.Join(dir, keyring.FileName)); err != nil && os.Getenv("COPYDESK_SECRET_KEY") == "" {
		return fmt.Errorf("%s holds no copydesk database and no %s: copy the %s of the instance the backup came from into it first "+
			"(or set COPYDESK_SECRET_KEY), or its stored secrets cannot be read", dir, keyring.FileName, keyring.FileName)
	}
	return nil
}

// prepareData is `users create`'s check: it may prepare a fresh install,
// but only where it was asked to (--init) or at the default path, and it
// says so loudly, since a new instance where the user expected an old one
// is the mistake this guards against.
func prepareData(dir string, init bool, stderr io.Writer) error {
	if requireData(dir) == nil {
		return nil
	}
	if !init && filepath.Clean(dir) != filepath.Clean(defaultDataDir) {
		return fmt.Errorf("%w\nto start a new instance there, add --init", requireData(dir))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	fmt.Fprintf(stderr, "creating a new copydesk instance in %s\n", abs)
	return nil
}

// consoleURL is the address a browser on this machine opens the console
// at: a listener on every interface (0.0.0.0, ::) is reached on loopback.
func consoleURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String() + "/"
	}
	host := tcp.IP
	if host == nil || host.IsUnspecified() {
		host = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(host.String(), strconv.Itoa(tcp.Port)) + "/"
}

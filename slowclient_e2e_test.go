package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClientThatNeverReads: a viewer asks for a page of megabytes and never
// reads it. The answer was rendered under the request's hold on the
// database and is written after it, so a restore (which needs the database
// to itself) and /api/health go through meanwhile, and SIGTERM ends the
// process within --shutdown-timeout with exit status 0, the stuck
// connection closed; the log ends with "stopped".
func TestClientThatNeverReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	createUser(t, dir, "vic@example.com", "vic", "viewer", "password-vic")
	base, p := startServer(t, dir, []string{"--shutdown-timeout", "3s"})
	admin, body := login(t, base, adminEmail, adminPass)
	adminID := body["user"].(map[string]any)["id"]
	vic, _ := login(t, base, "vic@example.com", "password-vic")

	// 200 messages of 40 kB each: the page is 8 MB, far more than the
	// kernel buffers of a loopback connection take in.
	text := strings.Repeat("😀", 10000)
	for i := 0; i < 200; i++ {
		status, body := httpJSON(t, "POST", base+"/api/messages", vic, map[string]any{"recipient_id": adminID, "subject": fmt.Sprint("n", i), "body": text})
		wantData(t, "send", status, body, 201)
	}
	status, body := httpJSON(t, "POST", base+"/api/backup", admin, nil)
	name := wantData(t, "backup", status, body, 201)["name"].(string)

	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small receive buffer, so that the kernel takes in little of the
	// answer on the client's side whatever its defaults.
	_ = conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	_ = conn.SetDeadline(time.Now().Add(cmdTimeout))
	fmt.Fprintf(conn, "GET /api/messages/sent?per_page=200 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, vic)
	// The status line and the first bytes say the answer is being
	// written; the rest is never read.
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the big page: %v %v", resp, err)
	}

	status, body = httpJSON(t, "POST", base+"/api/backup/"+name+"/restore", admin, nil)
	wantData(t, "restore while a client does not read", status, body, 200)
	status, body = httpJSON(t, "GET", base+"/api/health", "", nil)
	wantData(t, "health while a client does not read", status, body, 200)

	if code := p.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "msg=stopped") {
		t.Errorf("the log does not end with stopped: %q", last)
	}
	// The connection was closed under the client, before its answer ended.
	_ = conn.SetDeadline(time.Now().Add(stopTimeout))
	if n, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Errorf("the stuck answer ended normally after %d bytes", n)
	}
}

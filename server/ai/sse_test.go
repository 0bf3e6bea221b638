package ai

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every event of body, and the error that ended it.
func readAll(r io.Reader) ([]sseEvent, error) {
	s := newSSEReader(r)
	var out []sseEvent
	for {
		ev, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	type ev = sseEvent
	cases := []struct {
		name string
		body string
		want []sseEvent
	}{
		{"LF", "data: a\n\ndata: b\n\n", []ev{{data: "a"}, {data: "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{data: "a"}, {data: "b"}}},
		{"CR", "data: a\r\rdata: b\r\r", []ev{{data: "a"}, {data: "b"}}},
		{"mixed endings", "data: a\r\n\ndata: b\r\r\ndata: c\n\r", []ev{{data: "a"}, {data: "b"}, {data: "c"}}},
		{"event names", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n",
			[]ev{{name: "message_start", data: "{}"}, {name: "ping", data: `{"type":"ping"}`}}},
		{"name does not carry over", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{name: "a", data: "1"}, {data: "2"}}},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", []ev{{data: "{\"a\":\n1}"}}},
		{"comments", ": OPENROUTER PROCESSING\n\ndata: a\n: keep-alive\ndata: b\n\n", []ev{{data: "a\nb"}}},
		{"one space is dropped", "data:x\n\ndata:  y\n\ndata:\n\n", []ev{{data: "x"}, {data: " y"}, {data: ""}}},
		{"field without colon", "data\ndata\n\n", []ev{{data: "\n"}}},
		{"no data, no event", "event: ping\n\nid: 3\nretry: 10\n\ndata: a\n\n", []ev{{data: "a"}}},
		{"other fields ignored", "id: 1\ndata: a\nretry: 5\nfoo: bar\n\n", []ev{{data: "a"}}},
		{"DONE", "data: {}\n\ndata: [DONE]\n\n", []ev{{data: "{}"}, {data: "[DONE]"}}},
		{"byte order mark", "\xef\xbb\xbfdata: a\n\n", []ev{{data: "a"}}},
		{"lines complete, blank line missing", "data: a\n\ndata: [DONE]\n", []ev{{data: "a"}, {data: "[DONE]"}}},
		{"last line cut", "data: a\n\ndata: [DO", []ev{{data: "a"}}},
		{"last line without end", "data: a\n\ndata: [DONE]", []ev{{data: "a"}}},
		{"empty", "", nil},
	}
	readers := map[string]func(string) io.Reader{
		"whole":     func(s string) io.Reader { return strings.NewReader(s) },
		"byte-wise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halves": func(s string) io.Reader {
			return io.MultiReader(strings.NewReader(s[:len(s)/2]), strings.NewReader(s[len(s)/2:]))
		},
	}
	for _, c := range cases {
		for rname, reader := range readers {
			t.Run(c.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(reader(c.body))
				if err != io.EOF {
					t.Errorf("ended with %v, want io.EOF", err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("events %q, want %q", got, c.want)
				}
			})
		}
	}
}

func TestSSEReaderErrors(t *testing.T) {
	t.Run("body error", func(t *testing.T) {
		body := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(io.ErrUnexpectedEOF))
		got, err := readAll(body)
		if !errors.Is(err, io.ErrUnexpectedEOF) || !reflect.DeepEqual(got, []sseEvent{{data: "a"}}) {
			t.Errorf("events %q, error %v", got, err)
		}
	})
	t.Run("event too large", func(t *testing.T) {
		line := "data: " + strings.Repeat("x", 1<<20) + "\n"
		_, err := readAll(strings.NewReader(strings.Repeat(line, 5) + "\n"))
		if !errors.Is(err, errEventTooLarge) {
			t.Errorf("error %v, want errEventTooLarge", err)
		}
	})
	t.Run("line without end too large", func(t *testing.T) {
		_, err := readAll(io.MultiReader(strings.NewReader("data: "), zeros{}))
		if !errors.Is(err, errEventTooLarge) {
			t.Errorf("error %v, want errEventTooLarge", err)
		}
	})
}

// zeros is an endless body of "0".
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// chunked returns b in reads of at most n bytes.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// FuzzSSE checks that how the body is cut into reads, and which line
// ending it uses, changes nothing of the events read.
func FuzzSSE(f *testing.F) {
	for _, seed := range []string{
		"data: a\n\n",
		"event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
		"data: a\ndata: b\n\n: comment\n\ndata: [DONE]\n\n",
		"data:x\ndata\n\nid: 1\nretry: 2\n\n",
		"\xef\xbb\xbfdata: bom\n\n",
		"data: a\r\n\r\ndata: b\r\rdata: c\n",
		"data: cut",
	} {
		f.Add([]byte(seed), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, size uint8) {
		want, wantErr := readAll(bytes.NewReader(body))
		if wantErr != io.EOF {
			t.Fatalf("whole body: %v", wantErr)
		}
		got, err := readAll(&chunked{b: body, n: int(size%16) + 1})
		if err != io.EOF || !reflect.DeepEqual(got, want) {
			t.Fatalf("reads of %d bytes: %q, %v; whole: %q", size%16+1, got, err, want)
		}
		for _, ev := range want {
			if strings.ContainsRune(ev.data, '\r') || strings.ContainsAny(ev.name, "\r\n") {
				t.Fatalf("line ending inside an event: %q", ev)
			}
		}
		if bytes.ContainsRune(body, '\r') {
			return
		}
		// The same body with CRLF or CR line endings.
		for _, nl := range []string{"\r\n", "\r"} {
			other := bytes.ReplaceAll(body, []byte("\n"), []byte(nl))
			got, err := readAll(&chunked{b: other, n: int(size%16) + 1})
			if err != io.EOF || !reflect.DeepEqual(got, want) {
				t.Fatalf("with %q: %q, %v; with LF: %q", nl, got, err, want)
			}
		}
	})
}

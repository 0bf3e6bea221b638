package ai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxEvent bounds one server-sent event (its data lines together): a
// provider's events are a few hundred bytes, and a server that sends a
// line without end must not take the memory with it.
const maxEvent = 4 << 20

// errEventTooLarge is what an event larger than maxEvent fails with.
var errEventTooLarge = errors.New("malformed stream: an event is larger than 4 MiB")

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	name string // the "event:" field; "" when the event had none
	data string // the "data:" lines, joined with "\n"
}

// sseReader reads the events of a text/event-stream body as the HTML
// standard defines them: lines end with CRLF, LF or CR; a line that starts
// with ":" is a comment; "field: value" loses one space after the colon;
// the data lines of an event are joined with "\n"; a blank line ends the
// event, and an event without data is no event. Reads may split a line
// anywhere, a CRLF included. The "id" and "retry" fields mean nothing to
// a single request and are ignored.
type sseReader struct {
	r       *bufio.Reader
	line    []byte
	name    []byte
	data    []byte
	hasData bool
	// skipLF: the last line ended with CR, so an LF that comes next (in
	// this read or the next) belongs to it.
	skipLF  bool
	started bool // past the first line, which may open with a byte order mark
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4096)}
}

// Next returns the next event. At the end of the body it returns io.EOF;
// an event whose lines were complete but whose blank line did not come is
// still returned first, while a last line cut off before its end is
// dropped (it may be half of what was sent). Any other error is the
// body's.
func (s *sseReader) Next() (sseEvent, error) {
	for {
		line, complete, err := s.readLine()
		if !s.started {
			// A byte order mark may open the stream, and means nothing.
			s.started = true
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if complete {
			if len(line) == 0 {
				if ev, ok := s.dispatch(); ok {
					return ev, nil
				}
				continue
			}
			if err := s.field(line); err != nil {
				return sseEvent{}, err
			}
			continue
		}
		if err == io.EOF {
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
		}
		return sseEvent{}, err
	}
}

// readLine reads one line without its ending. complete is false when the
// body ended or failed first; line then holds what came.
func (s *sseReader) readLine() (line []byte, complete bool, err error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return s.line, false, err
		}
		if s.skipLF {
			s.skipLF = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return s.line, true, nil
		case '\r':
			s.skipLF = true
			return s.line, true, nil
		}
		if len(s.line)+len(s.data) >= maxEvent {
			return nil, false, errEventTooLarge
		}
		s.line = append(s.line, b)
	}
}

// field applies one non-blank line to the event being read.
func (s *sseReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // a comment: a keep-alive, or the provider's note
	}
	name, value := line, []byte(nil)
	for i, b := range line {
		if b == ':' {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
			break
		}
	}
	switch string(name) {
	case "event":
		s.name = append(s.name[:0], value...)
	case "data":
		if len(s.data)+len(value)+1 > maxEvent {
			return errEventTooLarge
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	}
	return nil
}

// dispatch ends the event being read; ok is false when it had no data.
func (s *sseReader) dispatch() (sseEvent, bool) {
	ev := sseEvent{name: string(s.name), data: string(s.data)}
	ok := s.hasData
	s.name, s.data, s.hasData = s.name[:0], s.data[:0], false
	return ev, ok
}

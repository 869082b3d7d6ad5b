package realsync

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// maxLineBytes bounds one line of an event stream (a snapshot of a full
// room is well under 1 MiB): a longer one ends the connection.
const maxLineBytes = 8 << 20

// errLineTooLong ends a connection whose server sent a line over
// maxLineBytes.
var errLineTooLong = errors.New("realsync: event stream line over 8 MiB")

// frame is what the parser hands on: a dispatched event, or a comment
// (its text in data, valid until the next read).
type frame struct {
	comment bool
	// id is the event's id ("" when it carried none); event its type
	// ("message" when none was given); data its data lines joined by \n.
	id    string
	hasID bool
	event string
	data  []byte
}

// sseParser reads the text/event-stream format (WHATWG HTML, "Server-sent
// events"): lines end with CRLF, LF or CR; "field: value" or "field"
// alone; a leading ':' is a comment; a blank line dispatches the event.
// Lines of any length up to maxLineBytes are read (bufio.Scanner's
// 64 KiB token limit would cut a large snapshot).
type sseParser struct {
	r *bufio.Reader
	// skipLF: the last line ended with CR, so a LF right after it belongs
	// to that line ending.
	skipLF bool
	// retry is the last retry field's value, 0 before one.
	retry time.Duration
	// line is the buffer of the line being read.
	line []byte
}

func newSSEParser(r io.Reader) *sseParser {
	return &sseParser{r: bufio.NewReaderSize(r, 32<<10)}
}

// readLine returns the next line without its ending; valid until the next
// call. A last line cut by the end of the input is returned with io.EOF
// only (an event that was not terminated by a blank line is discarded, as
// the format says).
func (p *sseParser) readLine() ([]byte, error) {
	p.line = p.line[:0]
	if p.skipLF {
		p.skipLF = false
		b, err := p.r.Peek(1)
		if err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			p.r.Discard(1)
		}
	}
	for {
		if _, err := p.r.Peek(1); err != nil {
			return nil, err
		}
		buf, _ := p.r.Peek(p.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := i // the bytes of buf that belong to the line
		if i < 0 {
			n = len(buf)
		}
		if len(p.line)+n > maxLineBytes {
			return nil, errLineTooLong
		}
		if i >= 0 {
			p.line = append(p.line, buf[:i]...)
			p.skipLF = buf[i] == '\r'
			p.r.Discard(i + 1)
			return p.line, nil
		}
		p.line = append(p.line, buf...)
		p.r.Discard(len(buf))
	}
}

// next returns the next event or comment. The error is the reader's
// (io.EOF when the server ended the stream).
func (p *sseParser) next() (frame, error) {
	var f frame
	var data []byte
	hasData := false
	for {
		line, err := p.readLine()
		if err != nil {
			return frame{}, err
		}
		if len(line) == 0 {
			if !hasData {
				// an event without data is not dispatched; its id
				// counts as the format says, but RealSync sends none
				f = frame{}
				continue
			}
			f.data = data
			if f.event == "" {
				f.event = "message"
			}
			return f, nil
		}
		if line[0] == ':' {
			if !hasData && f.event == "" && !f.hasID {
				return frame{comment: true, data: bytes.TrimSpace(line[1:])}, nil
			}
			continue // a comment inside an event: ignored
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "event":
			f.event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				f.id, f.hasID = string(value), true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				p.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

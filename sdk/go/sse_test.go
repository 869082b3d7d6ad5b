package realsync

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// The parser follows the event-stream format: every line ending, long
// lines, multi-line data, comments, ids, retry, and what is not dispatched.
func TestSSEParser(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // far over the reader's 32 KiB buffer
	for _, tc := range []struct {
		name  string
		in    string
		want  []frame // comments included, as frame{comment: true}
		retry time.Duration
	}{
		{name: "LF", in: "id: 1-a\nevent: state\ndata: {\"a\":1}\n\n",
			want: []frame{{id: "1-a", hasID: true, event: "state", data: []byte(`{"a":1}`)}}},
		{name: "CRLF", in: "id: 1-a\r\nevent: state\r\ndata: {}\r\n\r\n",
			want: []frame{{id: "1-a", hasID: true, event: "state", data: []byte(`{}`)}}},
		{name: "CR", in: "event: state\rdata: {}\r\r",
			want: []frame{{event: "state", data: []byte(`{}`)}}},
		{name: "long data line", in: "data: " + long + "\n\n",
			want: []frame{{event: "message", data: []byte(long)}}},
		{name: "data lines joined", in: "data: a\ndata:b\ndata\n\n",
			want: []frame{{event: "message", data: []byte("a\nb\n")}}},
		{name: "only one leading space stripped", in: "data:  two\n\n",
			want: []frame{{event: "message", data: []byte(" two")}}},
		{name: "heartbeats", in: ": ping\n\ndata: 1\n\n: ping\n\n",
			want: []frame{{comment: true, data: []byte("ping")}, {event: "message", data: []byte("1")}, {comment: true, data: []byte("ping")}}},
		{name: "comment inside an event", in: "event: x\n: note\ndata: 1\n\n",
			want: []frame{{event: "x", data: []byte("1")}}},
		{name: "retry and no data", in: "retry: 2500\n\nid: 7\n\ndata: 1\n\n", retry: 2500 * time.Millisecond,
			want: []frame{{event: "message", data: []byte("1")}}},
		{name: "bad retry ignored", in: "retry: soon\n\ndata: 1\n\n",
			want: []frame{{event: "message", data: []byte("1")}}},
		{name: "id with NUL ignored", in: "id: a\x00b\ndata: 1\n\n",
			want: []frame{{event: "message", data: []byte("1")}}},
		{name: "unknown field ignored", in: "foo: bar\ndata: 1\n\n",
			want: []frame{{event: "message", data: []byte("1")}}},
		{name: "unterminated event discarded", in: "data: 1\n\ndata: 2\n",
			want: []frame{{event: "message", data: []byte("1")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// one byte per read: every line crosses reads
			p := newSSEParser(iotest.OneByteReader(strings.NewReader(tc.in)))
			if len(tc.in) > 1<<16 {
				p = newSSEParser(strings.NewReader(tc.in))
			}
			var got []frame
			for {
				f, err := p.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, f)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d frames, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.comment != w.comment || g.id != w.id || g.hasID != w.hasID || g.event != w.event || string(g.data) != string(w.data) {
					t.Fatalf("frame %d: got %+v, want %+v", i, g, w)
				}
			}
			if p.retry != tc.retry {
				t.Fatalf("retry %v, want %v", p.retry, tc.retry)
			}
		})
	}
}

// A line over maxLineBytes ends the connection instead of growing memory
// without bound.
func TestSSEParserLineTooLong(t *testing.T) {
	p := newSSEParser(strings.NewReader("data: " + strings.Repeat("x", maxLineBytes) + "\n\n"))
	if _, err := p.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("got %v", err)
	}
}

// Backoff: full jitter below a ceiling that doubles from Base to Max.
func TestBackoffDelay(t *testing.T) {
	if DefaultBackoff.Max != 10*time.Second { // well below the server's disconnect grace, 30 s
		t.Errorf("DefaultBackoff.Max %v, want 10s", DefaultBackoff.Max)
	}
	b := Backoff{Base: 500 * time.Millisecond, Max: 30 * time.Second}
	for _, tc := range []struct {
		attempt int
		ceil    time.Duration
	}{{1, 500 * time.Millisecond}, {2, time.Second}, {3, 2 * time.Second}, {7, 30 * time.Second}, {60, 30 * time.Second}} {
		var hi time.Duration
		for range 200 {
			d := b.delay(tc.attempt)
			if d < 0 || d >= tc.ceil {
				t.Fatalf("attempt %d: %v outside [0, %v)", tc.attempt, d, tc.ceil)
			}
			hi = max(hi, d)
		}
		if hi < tc.ceil/2 { // 200 draws all in the lower half: not jitter over the range
			t.Fatalf("attempt %d: highest of 200 delays %v", tc.attempt, hi)
		}
	}
}

// Any text framed as data lines comes back whole, its line endings made
// \n; and no input makes the parser fail but by its end or a line over
// the cap.
func FuzzSSEParser(f *testing.F) {
	f.Add("hello", "id: 1\r\ndata: x\r\r: c\n\n")
	f.Add("a\r\nb\rc\nd", "data\ndata:\n\n")
	f.Add("", "retry: 10\n\nevent: e\r\n\r\n")
	f.Fuzz(func(t *testing.T, text, raw string) {
		body := strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
		var in strings.Builder
		for _, l := range strings.Split(body, "\n") {
			in.WriteString("data: " + l + "\n")
		}
		in.WriteString("\n")
		p := newSSEParser(strings.NewReader(in.String()))
		fr, err := p.next()
		if err != nil || string(fr.data) != body || fr.event != "message" {
			t.Fatalf("%q: got %q %v", text, fr.data, err)
		}
		p = newSSEParser(strings.NewReader(raw))
		for {
			if _, err := p.next(); err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, errLineTooLong) {
					t.Fatal(err)
				}
				return
			}
		}
	})
}

package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/realsync/realsync/internal/redistest"
)

// A connection must send its first request's headers within
// REALSYNC_READ_HEADER_TIMEOUT, over HTTP/2 as over HTTP/1.1: one that
// sends the HTTP/2 preface and then nothing, or a HEADERS frame whose
// block it never ends (a slowloris), is closed at about the timeout (1 s
// here), not held until the idle timeout (120 s) as before. A connection
// whose first request came is not cut by it.
func TestFirstHeadersDeadline(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cert, key, pool := redistest.SelfSigned(t)
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"tls", []string{"REALSYNC_TLS_CERT=" + cert, "REALSYNC_TLS_KEY=" + key}},
		{"h2c", []string{"REALSYNC_H2C=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := start(t, bin, append(append(backendEnv(t, "standalone"), "REALSYNC_READ_HEADER_TIMEOUT=1s"), tc.env...)...)
			addr := strings.TrimPrefix(strings.TrimPrefix(in.url, "https://"), "http://")
			dial := func(t *testing.T, protocol string) net.Conn {
				t.Helper()
				var c net.Conn
				var err error
				if tc.name == "tls" {
					c, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{protocol}})
				} else {
					c, err = net.Dial("tcp", addr)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			// h2 opens an HTTP/2 connection: the preface and SETTINGS, then
			// the header block of a GET of path on stream 1, ended when
			// end, else with a 4 KB header field and no END_HEADERS.
			h2 := func(t *testing.T, path string, end bool) net.Conn {
				t.Helper()
				c := dial(t, "h2")
				if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
					t.Fatal(err)
				}
				fr := http2.NewFramer(c, nil)
				if err := fr.WriteSettings(); err != nil {
					t.Fatal(err)
				}
				if path == "" {
					return c
				}
				var block bytes.Buffer
				enc := hpack.NewEncoder(&block)
				for _, f := range [][2]string{{":method", "GET"}, {":scheme", map[string]string{"tls": "https", "h2c": "http"}[tc.name]}, {":authority", addr}, {":path", path}} {
					enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
				}
				if !end {
					enc.WriteField(hpack.HeaderField{Name: "x-pad", Value: strings.Repeat("a", 4000)})
				}
				if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: end}); err != nil {
					t.Fatal(err)
				}
				return c
			}
			// stillOpen reads c for d: false when the server closed it
			// (err: how), true when it was still open at d.
			stillOpen := func(c net.Conn, d time.Duration) (bool, error) {
				c.SetReadDeadline(time.Now().Add(d))
				buf := make([]byte, 4096)
				for {
					_, err := c.Read(buf)
					if errors.Is(err, os.ErrDeadlineExceeded) {
						return true, nil
					}
					if err != nil {
						return false, err
					}
				}
			}
			// closedWithin checks the server closes c within d.
			closedWithin := func(t *testing.T, c net.Conn, d time.Duration) {
				t.Helper()
				if open, _ := stillOpen(c, d); open {
					t.Fatalf("still open after %s (REALSYNC_READ_HEADER_TIMEOUT=1s, the idle timeout 120 s)", d)
				}
			}
			// openAfter checks c is still open after d.
			openAfter := func(t *testing.T, c net.Conn, d time.Duration) {
				t.Helper()
				if open, err := stillOpen(c, d); !open {
					t.Fatalf("closed within %s: %v", d, err)
				}
			}

			t.Run("unfinished header block", func(t *testing.T) {
				t.Parallel()
				closedWithin(t, h2(t, "/v1/rooms", false), 10*time.Second)
			})
			t.Run("nothing after the preface", func(t *testing.T) {
				t.Parallel()
				closedWithin(t, h2(t, "", false), 10*time.Second)
			})
			t.Run("unfinished HTTP/1.1 headers", func(t *testing.T) {
				t.Parallel()
				c := dial(t, "http/1.1")
				c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: aaaa"))
				closedWithin(t, c, 10*time.Second)
			})
			// A connection that sent a whole request stays (until the idle
			// timeout), the same over HTTP/1.1: a GET /healthz, then quiet.
			t.Run("first request came", func(t *testing.T) {
				t.Parallel()
				openAfter(t, h2(t, "/healthz", true), 3*time.Second)
				c := dial(t, "http/1.1")
				c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
				openAfter(t, c, 3*time.Second)
			})
		})
	}
}

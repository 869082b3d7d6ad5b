package realsync

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
)

// sendHTMLAsIs is the generated client's request editor that undoes
// encoding/json's HTML escaping in JSON request bodies: `<`, `>` and `&`
// go as themselves, not as the six bytes `\u003c`, `\u003e`, `\u0026`.
// The server keeps values as sent, so escaped text was stored and served
// back at up to six times its size (clients of other languages send these
// characters as they are). The JSON means the same either way.
func sendHTMLAsIs(_ context.Context, req *http.Request) error {
	if req.Body == nil || !strings.Contains(req.Header.Get("Content-Type"), "json") {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return err
	}
	body = unescapeHTML(body)
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// unescapeHTML turns the escapes \u003c, \u003e and \u0026 of JSON text
// b back into `<`, `>` and `&`, leaving every other escape (`\\` among
// them, so the text `\\u003c` stays) as it is. A backslash is only ever
// the start of an escape in valid JSON, so no string tracking is needed.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			switch strings.ToLower(string(b[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}

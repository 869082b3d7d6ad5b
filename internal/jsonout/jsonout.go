// Package jsonout writes JSON as RealSync's answers, events and logs carry
// it: encoding/json's, but with <, > and & as they are. encoding/json
// writes each as the six bytes of \u003c, \u003e or \u0026, a guard for
// JSON pasted into HTML that no answer, stream or webhook of the API
// needs (each has a JSON or event-stream content type), and which made
// what users send up to six times larger on every read: a room state of
// 64 KiB of '<' went out as 384 KiB in each GET and snapshot (an abuse
// tester's find), a logged message of 4 KiB of '<' as 24.7 KB.
package jsonout

import (
	"bytes"
	"encoding/json"
	"io"
)

// NewEncoder is json.NewEncoder without the HTML escaping.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// Marshal is json.Marshal without the HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/realsync/realsync/rooms"
)

// MaxBodyBytes is the largest request body accepted (413 past it).
const MaxBodyBytes = 128 << 10

// limitBody answers 413 to a body over MaxBodyBytes before any other check
// (authentication included), and buffers smaller bodies for the handlers.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			s.tooLarge(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.tooLarge(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	s.writeError(w, r, fmt.Errorf("request body over %d bytes: %w", MaxBodyBytes, rooms.ErrTooLarge))
}

const (
	jsonType       = "application/json"
	mergePatchType = "application/merge-patch+json"
)

// decodeBody decodes a JSON object body into dst. Content-Type must be one
// of types (415); the body must be one JSON object of the right types
// (400); an unknown field is a validation failure naming it (422). With
// optional, an empty body leaves dst as it is.
func decodeBody(r *http.Request, dst any, optional bool, types ...string) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("reading body: %w", errMalformed)
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkContentType(r, types); err != nil {
		return err
	}
	return decodeJSONObject(body, dst)
}

func checkContentType(r *http.Request, types []string) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	for _, t := range types {
		if err == nil && mt == t {
			return nil
		}
	}
	return fmt.Errorf("content-Type must be %s: %w", strings.Join(types, " or "), errUnsupportedMedia)
}

// decodeJSONObject is decodeBody's JSON part, exposed for fuzzing.
func decodeJSONObject(body []byte, dst any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("body must be a JSON object: %w", errMalformed)
	}
	d := json.NewDecoder(bytes.NewReader(trimmed))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("body has data after the JSON object: %w", errMalformed)
	}
	return nil
}

func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return fmt.Errorf("%s must be %s, not %s: %w", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value, errMalformed)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return rooms.Invalid(strings.Trim(f, `"`), "is not a known field")
	}
	return fmt.Errorf("body is not valid JSON: %w", errMalformed)
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "int", "int64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return "of another type"
}

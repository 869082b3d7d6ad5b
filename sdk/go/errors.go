package realsync

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is an error answer of the server: its RFC 9457 problem+json body
// (Code is the stable, machine-readable part, "" when the answer was not
// problem+json, say from a proxy) with the HTTP status. Every method of
// Client and every stream returns it, wrapped or not, for an answer that
// is not a success: match it with errors.As or IsCode.
type Error struct {
	// Status is the HTTP status (404).
	Status int
	// Code is the problem code ("ROOM_NOT_FOUND"); "" when the body was
	// not a problem.
	Code string
	// Title is the problem's short summary; Detail says what went wrong
	// with this request (or holds the start of a body that was no
	// problem).
	Title, Detail string
	// Type is the problem's type URI.
	Type string
	// Errors names each field that broke a constraint (VALIDATION_FAILED).
	Errors []FieldError
	// RetryAfter is the Retry-After header of a refused request (429,
	// 503), 0 when absent.
	RetryAfter time.Duration
}

// Error reads "realsync: 404 ROOM_NOT_FOUND: Room not found: <detail>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("realsync: ")
	b.WriteString(strconv.Itoa(e.Status))
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Title != "" {
		b.WriteString(": " + e.Title)
	}
	if e.Detail != "" && strings.TrimSuffix(e.Detail, ".") != e.Title { // a detail that only repeats the title
		b.WriteString(": " + e.Detail)
	}
	for _, f := range e.Errors {
		fmt.Fprintf(&b, "; %s %s", f.Field, f.Message)
	}
	return b.String()
}

// IsCode reports whether err is, or wraps, an *Error with the problem code
// code ("ROOM_NOT_FOUND").
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// StatusOf returns the HTTP status of the *Error in err's chain, 0 when
// there is none (a network error, say).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// maxErrorDetail bounds the part of a non-problem body kept in Detail.
const maxErrorDetail = 512

// newError builds the *Error of an answer with status res.StatusCode and
// body body.
func newError(res *http.Response, body []byte) *Error {
	e := &Error{Status: res.StatusCode, RetryAfter: retryAfter(res.Header)}
	var p Problem
	if strings.Contains(res.Header.Get("Content-Type"), "json") && json.Unmarshal(body, &p) == nil && p.Code != "" {
		e.Code, e.Title, e.Detail, e.Type = string(p.Code), p.Title, p.Detail, p.Type
		if p.Errors != nil {
			e.Errors = *p.Errors
		}
		return e
	}
	e.Title = http.StatusText(res.StatusCode)
	d := strings.TrimSpace(string(body))
	if len(d) > maxErrorDetail {
		d = d[:maxErrorDetail]
	}
	e.Detail = d
	return e
}

// retryAfter reads a Retry-After header in seconds (the server's form); 0
// when absent or not in that form.
func retryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// expect returns nil when res has one of the statuses want, else the
// answer's *Error.
func expect(res *http.Response, body []byte, want ...int) error {
	for _, w := range want {
		if res.StatusCode == w {
			return nil
		}
	}
	return newError(res, body)
}

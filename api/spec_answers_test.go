package api_test

import (
	"bytes"
	"context"
	encjson "encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/realsync/realsync"
)

// specRouter finds the operation of openapi.yaml a request is for.
var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(realsync.OpenAPI)
	if err != nil {
		return nil, err
	}
	doc.Servers = nil // the paths alone: the tests' servers listen anywhere
	// a merge patch's example deletes a key with null, which the State
	// schema (any JSON value, as Go's interface{}) does not say nullable
	return legacy.NewRouter(doc, openapi3.DisableExamplesValidation())
})

// specMismatch says how an answer of an operation of openapi.yaml differs
// from what the spec lists for it ("" when it does not, or the request is
// for no operation of it: a route the tests try on purpose): a status the
// operation does not list, a body or a header its response does not
// allow, or a problem's code its response's description does not name.
// Every answer of env.do is checked, so that each test of the package
// checks the contract the SDKs are generated from (a tester found 422
// IDEMPOTENCY_KEY_REUSED and 409 IDEMPOTENCY_KEY_IN_USE answered by
// operations whose responses did not list them).
func specMismatch(req *http.Request, status int, header http.Header, body []byte) string {
	switch req.Method {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions:
	default:
		return "" // a method tried on purpose (the router panics on it)
	}
	if status == http.StatusInternalServerError {
		return "" // listed by no operation: the conventions name it, a fault
	}
	router, err := specRouter()
	if err != nil {
		return "openapi.yaml: " + err.Error()
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return ""
	}
	ct := header.Get("Content-Type")
	json := strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "application/problem+json")
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{ExcludeRequestBody: true, ExcludeRequestQueryParams: true,
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
		// a body of JSON only (the spec's YAML is no string, an event
		// stream is read apart)
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: !json}})
	if err != nil {
		return err.Error()
	}
	r := route.Operation.Responses.Status(status)
	if r == nil {
		r = route.Operation.Responses.Default()
	}
	if media, _, _ := strings.Cut(ct, ";"); !json && r != nil && r.Value != nil && len(r.Value.Content) > 0 &&
		r.Value.Content.Get(strings.TrimSpace(media)) == nil && req.Method != http.MethodHead {
		// the body unchecked above: its type at least is one listed (a
		// reviewer's find: a text/plain 404 passed)
		return fmt.Sprintf("Content-Type %q is not one its response %d lists", ct, status)
	}
	if !strings.HasPrefix(ct, "application/problem+json") || req.Method == http.MethodHead {
		return "" // a HEAD's problem has its headers alone
	}
	var p struct {
		Code string `json:"code"`
	}
	if encjson.Unmarshal(body, &p) != nil || p.Code == "" {
		return "a problem without a code"
	}
	if r == nil || r.Value == nil || r.Value.Description == nil || !strings.Contains(*r.Value.Description, "`"+p.Code+"`") {
		return fmt.Sprintf("code %s is not named by the description of its response %s", p.Code, strconv.Itoa(status))
	}
	return ""
}

// TestSpecMismatchSeesWhatItShould: the check of every answer fails an
// answer the spec does not list, so the api tests passing says something.
func TestSpecMismatchSeesWhatItShould(t *testing.T) {
	problem := func(status int, code string) (http.Header, []byte) {
		h := http.Header{"Content-Type": {"application/problem+json"}}
		return h, []byte(fmt.Sprintf(`{"type":"https://realsync.dev/problems/x","title":"x","status":%d,"detail":"x","code":%q}`, status, code))
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body               []byte
		want               string // in the mismatch, "" for none
	}{
		{name: "Listed", method: "GET", path: "/v1/rooms/r1", status: 404, want: ""},
		{name: "CodeNotNamed", method: "GET", path: "/v1/rooms/r1", status: 404, want: "code TICKET_NOT_FOUND is not named"},
		{name: "StatusNotListed", method: "GET", path: "/v1/rooms/r1", status: 418, want: "status is not supported"},
		{name: "PlainText", method: "GET", path: "/v1/rooms/r1", status: 404, header: http.Header{"Content-Type": {"text/plain"}},
			body: []byte("404 page not found"), want: `Content-Type "text/plain" is not one`},
		{name: "UnknownRoute", method: "GET", path: "/v1/nope", status: 404, header: http.Header{"Content-Type": {"text/plain"}}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, body := tc.header, tc.body
			if h == nil {
				code := "ROOM_NOT_FOUND"
				if tc.name == "CodeNotNamed" {
					code = "TICKET_NOT_FOUND"
				}
				h, body = problem(tc.status, code)
			}
			req, _ := http.NewRequest(tc.method, "http://127.0.0.1"+tc.path, nil)
			got := specMismatch(req, tc.status, h, body)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("mismatch %q, want one with %q", got, tc.want)
			}
		})
	}
}

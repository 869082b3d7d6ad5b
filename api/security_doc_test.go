package api

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/internal/doctable"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
)

const securityDoc = "../docs/SECURITY.md"

// The "Every limit" table of docs/SECURITY.md and the Identity section's
// "Settings" table state api's fixed figures, each from its one source:
// the header block's and the body's caps, stream tokens' lifetime and
// leeway, a stream's end before its token's, API keys' randomness and the
// keys files' reload, the log's cut of a path.
func TestEveryLimitTableStatesTheAPI(t *testing.T) {
	const def = 1 // the default cell of both tables
	for _, s := range []struct {
		section, row string // the table's heading, the row's first cell (or its start)
		want         string // a text the default cell holds
		from         string // the code's figure, named
	}{
		{"## Every limit", "request line and header block", doctable.KiB(MaxHeaderBytes), "MaxHeaderBytes"},
		{"## Every limit", "stream token", doctable.Seconds(StreamTokenTTL) + ", one stream", "StreamTokenTTL"},
		{"## Every limit", "stream token", "accepted up to " + doctable.Seconds(streamLeeway) + " past that `expiresAt`", "streamLeeway"},
		{"## Every limit", "an event stream's life", "until " + doctable.Seconds(streamEndLead) + " before its identity token expires", "streamEndLead"},
		{"## Every limit", "API keys", fmt.Sprintf("%d random bits", apiKeyBytes*8), "apiKeyBytes"},
		{"## Every limit", "API keys", "file read every " + doctable.Seconds(APIKeysReload), "APIKeysReload"},
		{"## Every limit", "a request's path and method in a log line", fmt.Sprintf("%d bytes each (a path may be %s)", maxLoggedPath, doctable.KiB(MaxHeaderBytes)), "maxLoggedPath, MaxHeaderBytes"},
		{"### Settings", "stream token lifetime", doctable.Seconds(StreamTokenTTL) + " (fixed), plus " + doctable.Seconds(streamLeeway) + " of leeway", "StreamTokenTTL, streamLeeway"},
		{"### Settings", "stream end before expiry", doctable.Seconds(streamEndLead) + " (fixed)", "streamEndLead"},
		{"### Settings", "keys file check", "every " + doctable.Seconds(keysFileInterval) + " (fixed)", "keysFileInterval"},
		{"### Settings", "refresh lifetime", strconv.FormatFloat(GuestTokenTTL.Hours(), 'f', -1, 64) + " h, as guest tokens", "GuestTokenTTL"},
	} {
		if got := securityCell(t, s.section, s.row, def); !doctable.States(got, s.want) {
			t.Errorf("%s, row %q: %q does not state %q (%s)", s.section, s.row, got, s.want, s.from)
		}
	}
}

// bodyNames names the routes the "request body" row of docs/SECURITY.md
// names; a route not here is among its "body-less routes" when
// openapi.yaml gives it no requestBody, else its "other writes".
var bodyNames = map[string]string{
	"POST /v1/auth/guest":              "auth",
	"POST /v1/auth/refresh":            "auth",
	"POST /v1/rooms/join-by-code":      "join-by-code",
	"POST /v1/rooms/{roomId}/messages": "messages",
	"PATCH /v1/rooms/{roomId}":         "room `PATCH`",
	"POST /v1/matchmaking/quick-join":  "quick-join",
	"POST /v1/matchmaking/tickets":     "tickets",
	"PUT /v1/me/following":             "`PUT /v1/me/following`",
	"PUT /v1/me/party":                 "party",
	"POST /v1/rooms":                   "create",
	"PATCH /v1/rooms/{roomId}/state":   "state `PATCH`",
}

// The "request body" row of docs/SECURITY.md states every route's body
// cap ("1 KiB (auth, join-by-code, body-less routes), 8 KiB (messages),
// …; never over 128 KiB"): each /v1 route's cap (bodyLimit) is the size
// the row gives the route's name (bodyNames), every name it gives a size
// is some route's, and the ceiling is MaxBodyBytes, above every cap.
func TestRequestBodyRowStatesEveryCap(t *testing.T) {
	const row = "request body"
	text := securityCell(t, "## Every limit", row, 1)
	stated := map[string]int64{} // name → KiB
	for _, m := range regexp.MustCompile(`(\d+) KiB \(([^)]*)\)`).FindAllStringSubmatch(text, -1) {
		kib, _ := strconv.ParseInt(m[1], 10, 64)
		for _, name := range strings.Split(m[2], ", ") {
			name, _, _ = strings.Cut(name, ": ") // "`PUT /v1/me/following`: 500 user ids …"
			stated[name] = kib << 10
		}
	}
	spec, err := openapi3.NewLoader().LoadFromData(realsync.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	h := NewHandler(Config{Auth: &Auth{}})
	n := 0
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/v1/") {
			return nil
		}
		n++
		key := method + " " + route
		name, ok := bodyNames[key]
		switch {
		case ok:
		case spec.Paths.Find(route).GetOperation(method).RequestBody != nil:
			name = "other writes"
		default:
			name = "body-less routes"
		}
		used[name] = true
		want, ok := stated[name]
		switch {
		case !ok:
			t.Errorf("row %q names no size of %q (%s, capped at %s)", row, name, key, doctable.KiB(bodyLimit(method, route)))
		case bodyLimit(method, route) != want:
			t.Errorf("row %q: %s is among %q, %s; its cap is %d bytes", row, key, name, doctable.KiB(want), bodyLimit(method, route))
		}
		if got := bodyLimit(method, route); got > MaxBodyBytes {
			t.Errorf("%s: its cap %d is over MaxBodyBytes %d", key, got, MaxBodyBytes)
		}
		return nil
	})
	if err != nil || n < 15 {
		t.Fatalf("walked %d /v1 routes: %v", n, err)
	}
	for route := range bodyLimits {
		method, path, _ := strings.Cut(route, " ")
		if _, ok := bodyNames[route]; !ok && (bodyLimits[route] != noBodyBytes || spec.Paths.Find(path).GetOperation(method).RequestBody != nil) {
			t.Errorf("%s has a cap of its own, %d bytes: name it in bodyNames as the row %q does", route, bodyLimits[route], row)
		}
	}
	for name := range stated {
		if !used[name] {
			t.Errorf("row %q gives %q a size, but no route is named so (bodyNames)", row, name)
		}
	}
	if want := "never over " + doctable.KiB(MaxBodyBytes); !doctable.States(text, want) {
		t.Errorf("row %q: %q does not state %q (MaxBodyBytes)", row, text, want)
	}
	if want := fmt.Sprintf("%d user ids of %d bytes", players.MaxFollowing, rooms.MaxUserIDLen); !doctable.States(text, want) {
		t.Errorf("row %q: %q does not state %q (players.MaxFollowing, rooms.MaxUserIDLen)", row, text, want)
	}
}

// securityCell is cell i of the row of docs/SECURITY.md's table under
// heading whose first cell is row (or starts with it: doctable.Row).
func securityCell(t *testing.T, heading, row string, i int) string {
	t.Helper()
	rows, err := doctable.Table(securityDoc, heading)
	if err != nil {
		t.Fatal(err)
	}
	r, err := doctable.Row(rows, row)
	if err != nil {
		t.Fatalf("%s: %v", heading, err)
	}
	return r[i]
}

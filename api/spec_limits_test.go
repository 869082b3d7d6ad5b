package api_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/rooms"
)

// The spec states the limits the domain enforces, each from its one
// source (rooms' constants): every maxPlayers property has maximum
// rooms.MaxPlayersLimit and minimum 1, and a message's recipients at most
// rooms.MaxRecipients.
func TestSpecStatesTheDomainLimits(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(realsync.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	var walk func(where string, s *openapi3.Schema)
	walk = func(where string, s *openapi3.Schema) {
		for name, p := range s.Properties {
			if p.Value == nil {
				continue
			}
			if name == "maxPlayers" && p.Ref == "" && where != "RoomChanges" {
				seen++
				if p.Value.Max == nil || *p.Value.Max != rooms.MaxPlayersLimit || p.Value.Min == nil || *p.Value.Min != 1 {
					t.Errorf("%s.maxPlayers: minimum %v maximum %v, want 1 and %d", where, p.Value.Min, p.Value.Max, rooms.MaxPlayersLimit)
				}
			}
			if p.Ref == "" {
				walk(where+"."+name, p.Value)
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s.Value)
	}
	if seen < 3 {
		t.Fatalf("found %d maxPlayers properties in the spec, want Room, CreateRoomRequest, UpdateRoomRequest, ...", seen)
	}
	to := doc.Components.Schemas["MessageRequest"].Value.Properties["to"].Value
	if to.MaxItems == nil || *to.MaxItems != rooms.MaxRecipients {
		t.Errorf("MessageRequest.to maxItems %v, want %d", to.MaxItems, rooms.MaxRecipients)
	}
}

// Every user id the spec takes states the one user-id grammar
// (rooms.ValidUserID): maxLength rooms.MaxUserIDLen and a pattern that
// agrees with the rule on ids within that length.
func TestSpecStatesTheUserIDGrammar(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(realsync.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	items := func(schema, prop string) *openapi3.Schema {
		return doc.Components.Schemas[schema].Value.Properties[prop].Value.Items.Value
	}
	presence := doc.Paths.Find("/v1/presence").Get.Parameters.GetByInAndName("query", "userIds").Schema.Value.Items.Value
	ids := map[string]*openapi3.Schema{
		"ReserveSeatsRequest.userIds":      items("ReserveSeatsRequest", "userIds"),
		"CreateTicketRequest.partyUserIds": items("CreateTicketRequest", "partyUserIds"),
		"Following.userIds":                items("Following", "userIds"),
		"InviteRequest.userId":             doc.Components.Schemas["InviteRequest"].Value.Properties["userId"].Value,
		"GET /v1/presence userIds":         presence,
	}
	// Each distinct pattern is checked once, for every place that states
	// it (the same string agrees or not with the rule alike everywhere;
	// the scan of the plane below is seconds under -race).
	where := map[string][]string{}
	for w, s := range ids {
		if s.MaxLength == nil || *s.MaxLength != rooms.MaxUserIDLen || s.MinLength != 1 {
			t.Errorf("%s: minLength %d maxLength %v, want 1 and %d", w, s.MinLength, s.MaxLength, rooms.MaxUserIDLen)
		}
		where[s.Pattern] = append(where[s.Pattern], w)
	}
	for pattern, ws := range where {
		slices.Sort(ws)
		at := strings.Join(ws, ", ")
		re, err := regexp.Compile(pattern)
		if err != nil || pattern == "" {
			t.Errorf("%s: pattern %q: %v", at, pattern, err)
			continue
		}
		for _, id := range []string{"u-8f2c", "jöran", "名前", "a.b@c|d", "a b", "a,b", "a\tb", "a\x00", "a\x7f", " ",
			"a\u0085", "a\u00a0b", "a\u00adb", "a\u200bb", "a\u200db", "\u0645\u200d\u0645", "\u0645\u200c\u200c\u0645", "\u200c\u0645", "a\u034fb", "\u3164a", "\u2764\ufe0f", "a\ufe0f", "\u2764\ufe0f\u200d\u2764", "\u2764\ufe0f\ufe0f", "a\u2028b", "a\u2029b", "a\u202eb", "a\u3000b", "\ufeffa",
			"a\ufff9", "e\u0301", "a\u00a1b", "a\u2070b", "a\ufffdb"} {
			if re.MatchString(id) != rooms.ValidUserID(id) {
				t.Errorf("%s: pattern %q says %v of %q, rooms.ValidUserID %v", at, pattern, re.MatchString(id), id, rooms.ValidUserID(id))
			}
		}
		// every character of the Basic Multilingual Plane (the pattern's
		// reach: beyond it the description says what else is refused)
		// after an ASCII letter, and between two Arabic letters (the
		// joiners' context)
		for r := rune(0); r <= 0xFFFF; r++ {
			for _, id := range []string{"a" + string(r), "\u0645" + string(r) + "\u0645"} {
				if utf8.ValidRune(r) && re.MatchString(id) != rooms.ValidUserID(id) {
					t.Errorf("%s: pattern says %v of %+q, rooms.ValidUserID %v", at, re.MatchString(id), id, rooms.ValidUserID(id))
				}
			}
		}
	}
}

// Every operation reads its body through limitBody, before routing and
// authentication: a body one byte over the route's cap (1 KiB for routes
// that read none) is 413 PAYLOAD_TOO_LARGE, and one that does not arrive
// in time 408. Each operation answers 413 here, and the spec declares both
// answers on every operation, so a route added later cannot leave them
// out.
func TestSpecDeclaresTheBodyAnswers(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(realsync.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, redistestEmbedded, true)
	params := regexp.MustCompile(`\{[^}]+\}`)
	ops := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			for _, status := range []int{413, 408} {
				if op.Responses.Status(status) == nil {
					t.Errorf("%s %s (%s) declares no %d", method, path, op.OperationID, status)
				}
			}
			limit := api.BodyLimit(method, path)
			r := e.do(method, params.ReplaceAllString(path, "x1"), "", strings.Repeat(" ", int(limit)+1))
			if r.status != 413 || (method != "HEAD" && r.code() != "PAYLOAD_TOO_LARGE") {
				t.Errorf("%s %s with %d bytes: %d %s", method, path, limit+1, r.status, r.raw)
			}
		}
	}
	if ops < 40 {
		t.Fatalf("%d operations in the spec", ops)
	}
}

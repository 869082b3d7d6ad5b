package main

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/doctable"
	"github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/sessions"
	"github.com/realsync/realsync/store/userlog"
)

const securityDoc = "../../docs/SECURITY.md"

// The "Rate limits" table of docs/SECURITY.md states limits.Defaults():
// every row is a limit of package limits, its per-user and per-address
// cells and the per-room figure of its last cell ("20/s, burst 40 per
// room: …") are the defaults of <name>.user, <name>.ip and <name>.room
// (rates compared as rates: 60/min is 1/s), "—" exactly where the limit
// has no such scope, and every default and every limit has its row.
func TestRateLimitsTableStatesTheDefaults(t *testing.T) {
	rows, err := doctable.Table(securityDoc, "## Rate limits")
	if err != nil {
		t.Fatal(err)
	}
	defaults := limits.Defaults().Limits
	stated := map[string]bool{} // keys with a row
	for _, row := range rows {
		name := strings.Trim(row[0], "`")
		scopes := limits.Scopes(name)
		if len(scopes) == 0 {
			t.Errorf("row %s: no such limit (package limits has %v)", row[0], limits.Names())
			continue
		}
		if stated[name] {
			t.Errorf("row %s: a second row of %s", row[0], name)
		}
		stated[name] = true
		for _, c := range []struct {
			scope limits.Scope
			cell  string
		}{{limits.User, row[2]}, {limits.IP, row[3]}, {limits.Room, roomFigure(row[4])}} {
			key := name + "." + string(c.scope)
			doc, err := parseFigure(c.cell)
			code := defaults[key]
			switch {
			case err != nil:
				t.Errorf("row %s, %s: %v", row[0], c.scope, err)
			case doc.Zero() == slices.Contains(scopes, c.scope):
				t.Errorf("row %s, %s: the table says %q, but %s has the scopes %v", row[0], c.scope, c.cell, name, scopes)
			case !sameLimit(doc, code):
				t.Errorf("row %s, %s: the table says %q, the default of %s is %s", row[0], c.scope, c.cell, key, figure(code))
			}
			if !doc.Zero() {
				stated[key] = true
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(defaults)) {
		if l := defaults[key]; !stated[key] {
			t.Errorf("%s has a default, %s, but the table states none", key, figure(l))
		}
	}
	for _, name := range limits.Names() {
		if !stated[name] {
			t.Errorf("limit %s has no row", name)
		}
	}
}

// roomFigure is the per-room figure that opens a row's "past it" cell
// ("20/s, burst 40 per room: 429 …"), "—" when it has none.
func roomFigure(pastIt string) string {
	if f, _, ok := strings.Cut(pastIt, " per room: "); ok {
		return f
	}
	return "—"
}

var (
	figureRe = regexp.MustCompile(`^(\d+)/(s|min|h), burst (\d+)$`)
	// rateRe is a rate within a sentence, burstsRe one or two bursts
	// ("burst 30", "bursts 40 and 60").
	rateRe   = regexp.MustCompile(`\b(\d+)/(s|min|h)\b`)
	burstsRe = regexp.MustCompile(`\bbursts? (\d+)(?: and (\d+))?`)
	units    = map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour}
)

// parseFigure reads a cell of the rate limits table: "—" (no limit) or
// "<count>/<s|min|h>, burst <count>".
func parseFigure(cell string) (limits.Limit, error) {
	if cell == "—" {
		return limits.Limit{}, nil
	}
	m := figureRe.FindStringSubmatch(cell)
	if m == nil {
		return limits.Limit{}, fmt.Errorf("%q is neither — nor N/s, N/min or N/h, burst N", cell)
	}
	rate, _ := strconv.Atoi(m[1])
	burst, _ := strconv.Atoi(m[3])
	return limits.Limit{Rate: rate, Period: units[m[2]], Burst: burst}, nil
}

// sameLimit compares rates as rates (60/min is 1/s) and bursts.
func sameLimit(a, b limits.Limit) bool {
	return a.Burst == b.Burst && int64(a.Rate)*int64(b.Period) == int64(b.Rate)*int64(a.Period)
}

// figure writes l as the tables do.
func figure(l limits.Limit) string {
	if l.Zero() {
		return "—"
	}
	for u, d := range units {
		if d == l.Period {
			return fmt.Sprintf("%d/%s, burst %d", l.Rate, u, l.Burst)
		}
	}
	return fmt.Sprintf("%d/%s, burst %d", l.Rate, l.Period, l.Burst)
}

// The "Every limit" table of docs/SECURITY.md states the figures the code
// enforces, each from its one source: realsyncd's defaults (as it parses
// them with no setting), the domain's constants, and the rate limits'
// defaults of the rows that restate them. The setting ranges it states
// are the ones realsyncd accepts: each bound accepted, one step past it
// refused. The rows whose default is a choice (guest tokens, browser
// origins, the session policy) and a member's half share agree with what
// realsyncd does. api's own figures (body caps, headers, stream tokens,
// API keys, the log's cut) are checked by api's tests (checkedElsewhere);
// a row no test reads fails.
func TestEveryLimitTableStatesTheCode(t *testing.T) {
	rows, err := doctable.Table(securityDoc, "## Every limit")
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{} // the rows read, by first cell
	cell := func(row string, i int) string {
		t.Helper()
		r, err := doctable.Row(rows, row)
		if err != nil {
			t.Fatalf("## Every limit: %v", err)
		}
		checked[r[0]] = true
		return r[i]
	}

	c, err := parseConfig(func(string) string { return "" }, nil, nil)
	if err != nil {
		t.Fatalf("the defaults do not parse: %v", err)
	}
	const def, setting = 1, 2 // the cells
	for _, s := range []struct {
		row  string // the row: its first cell, or the start of it
		cell int    // def or setting
		want string // a text the cell holds
		from string // the code's figure, named
	}{
		{"rooms owned at once per user", def, strconv.Itoa(c.MaxRoomsOwned), "REALSYNC_MAX_ROOMS_OWNED's default"},
		{"rooms a user is in at once", def, strconv.Itoa(c.MaxRoomsJoined), "REALSYNC_MAX_ROOMS_JOINED's default"},
		{"open event streams per user", def, strconv.Itoa(c.MaxStreamsPerUser), "REALSYNC_MAX_STREAMS_PER_USER's default"},
		{"event streams per player per room", def, strconv.Itoa(rooms.MaxStreamsPerPlayer), "rooms.MaxStreamsPerPlayer"},
		{"presence flaps", def, "within " + doctable.Seconds(c.PresenceDebounce) + " of the player's last one ending", "REALSYNC_PRESENCE_DEBOUNCE's default"},
		{"presence flaps", def, "reopened within " + doctable.Seconds(c.PresenceDebounce), "REALSYNC_PRESENCE_DEBOUNCE's default"},
		{"invite codes", def, fmt.Sprintf("%d Crockford base32 characters", rooms.CodeLength), "rooms.CodeLength"},
		{"invite codes", def, fmt.Sprintf("%d random bits", rooms.CodeLength*(bits.Len(uint(len(rooms.CodeAlphabet)))-1)), "rooms.CodeLength × log2(len(rooms.CodeAlphabet))"},
		{"bans per room", def, doctable.Thousands(rooms.MaxBans), "rooms.MaxBans"},
		{"kicks a room remembers", def, "the last " + doctable.Thousands(rooms.MaxBans), "rooms.MaxBans"},
		{"users one user follows", def, doctable.Thousands(players.MaxFollowing) + " distinct ids", "players.MaxFollowing"},
		{"users one user follows", def, "at most " + doctable.Thousands(players.MaxFollowingSent) + " sent", "players.MaxFollowingSent"},
		{"user ids per `GET /v1/presence`", def, fmt.Sprintf("1..%d", players.MaxPresenceIDs), "players.MaxPresenceIDs"},
		{"a leader's party members listed", def, fmt.Sprintf("the %d most recently joined", players.MaxPartyListed), "players.MaxPartyListed"},
		{"a leader's party members listed", def, "the leader's " + doctable.Thousands(sessions.PartyMembersKept) + " latest", "sessions.PartyMembersKept"},
		{"a user's personal log", def, doctable.Thousands(c.OfflineMax) + " events", "REALSYNC_OFFLINE_MAX's default"},
		{"a user's personal log", def, doctable.Days(c.OfflineTTL) + " after it was sent", "REALSYNC_OFFLINE_TTL's default"},
		{"a user's personal log", setting, "`" + shortDuration(c.OfflineTTL) + "`", "REALSYNC_OFFLINE_TTL's default"},
		{"identity token clock leeway", def, doctable.Seconds(c.JWTLeeway), "REALSYNC_JWT_LEEWAY's default"},
		{"admin token", def, fmt.Sprintf("≥ %d characters", minAdminToken), "minAdminToken"},
		{"JWT secret", def, fmt.Sprintf("≥ %d characters", minProductionSecret), "minProductionSecret"},
		{"time to send the headers", def, doctable.Seconds(c.ReadHeaderTimeout), "REALSYNC_READ_HEADER_TIMEOUT's default"},
		{"a connection with no request in flight", def, doctable.Seconds(idleTimeout), "idleTimeout"},
		{"time to send the body", def, doctable.Seconds(c.RequestTimeout) + " after the headers", "REALSYNC_REQUEST_TIMEOUT's default"},
		{"time to answer", def, doctable.Seconds(c.RequestTimeout), "REALSYNC_REQUEST_TIMEOUT's default"},
		{"lists", def, fmt.Sprintf("rooms and `/v1/me/rooms` 1..%d a page (default %d)", lobby.MaxLimit, lobby.DefaultLimit), "lobby.MaxLimit, lobby.DefaultLimit"},
		{"lists", def, fmt.Sprintf("rooms and `/v1/me/rooms` 1..%d a page (default %d)", rooms.MaxMyRooms, rooms.DefaultMyRooms), "rooms.MaxMyRooms, rooms.DefaultMyRooms"},
		{"lists", def, fmt.Sprintf("messages 1..%d (default %d)", rooms.MaxMessagesPage, rooms.DefaultMessages), "rooms.MaxMessagesPage, rooms.DefaultMessages"},
		{"request body nesting", def, fmt.Sprintf("objects and arrays %d deep", api.MaxBodyDepth), "api.MaxBodyDepth"},
		{"answers kept for `Idempotency-Key`s per user", def, fmt.Sprintf("%d MiB", idempotency.Budget>>20), "idempotency.Budget"},
		{"answers kept for `Idempotency-Key`s per user", def, fmt.Sprintf("each %d h", int(idempotency.TTL.Hours())), "idempotency.TTL"},
	} {
		if got := cell(s.row, s.cell); !doctable.States(got, s.want) {
			t.Errorf("row %q: %q does not state %q (%s)", s.row, got, s.want, s.from)
		}
	}
	if c.OfflineMax != userlog.DefaultMaxLen || c.OfflineTTL != userlog.DefaultTTL {
		t.Errorf("realsyncd's personal log defaults (%d, %s) are not userlog's (%d, %s)", c.OfflineMax, c.OfflineTTL, userlog.DefaultMaxLen, userlog.DefaultTTL)
	}

	// The rows that restate rate limits, the limits in the order the cell
	// states them; bursts: whether it states theirs.
	for _, r := range []struct {
		row    string
		keys   []string
		bursts bool
	}{
		{"messages and state patches per room", []string{"messages.room", "patches.room"}, true},
		{"event streams opened per user", []string{"opens.user"}, true},
		{"wrong invite codes", []string{"guess.user", "guess.ip"}, false},
		{"guest accounts made", []string{"guests.ip"}, true},
		{"direct messages and invites to one user", []string{"messages.room"}, true},
		{"direct messages and invites one user sends", []string{"direct.user", "direct.ip"}, true},
	} {
		checkRates(t, r.row, cell(r.row, def), r.keys, r.bursts)
	}

	// A member's (one sender's) share of a room's (an inbox's) rate: half.
	for _, key := range []string{"messages.room", "patches.room"} {
		l := limits.Defaults().Limits[key]
		if share := limits.MemberShare(l); share.Rate*2 != l.Rate || share.Burst*2 != l.Burst {
			t.Errorf("rows \"messages and state patches per room\", \"direct messages and invites to one user\": a member's share is half, limits.MemberShare of %s (%s) is %s", key, figure(l), figure(share))
		}
	}

	// The rows whose default is a choice rather than a figure.
	prod, err := parseConfig(envOf(map[string]string{"REALSYNC_ENV": envProduction,
		"REALSYNC_JWT_SECRET": "0f3c9a7e51d24b68aa9e7c03b5d1f2e4", "REALSYNC_REDIS_URL": "redis://127.0.0.1:6379"}), nil, nil)
	if err != nil {
		t.Fatalf("production's defaults do not parse: %v", err)
	}
	if got := cell("guest tokens", def); got != "on; off in production" || !c.GuestAuth || prod.GuestAuth {
		t.Errorf("row \"guest tokens\": %q; realsyncd's default is %v, in production %v", got, c.GuestAuth, prod.GuestAuth)
	}
	if got := cell("browser origins", def); !strings.HasPrefix(got, "none") || len(c.CORSOrigins) > 0 {
		t.Errorf("row \"browser origins\": %q; realsyncd's default is %q", got, c.CORSOrigins)
	}
	if got := cell("personal stream sessions", def); !strings.Contains(got, "a new one replaces the old") || c.SessionPolicy != players.PolicyReplace {
		t.Errorf("row \"personal stream sessions\": %q; realsyncd's default policy is %s", got, c.SessionPolicy)
	}
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(cell("personal stream sessions", setting), -1) {
		if _, err := players.ParsePolicy(m[1]); err != nil {
			t.Errorf("row \"personal stream sessions\": the policy %q: %v", m[1], err)
		}
	}

	// The ranges of the settings: the bounds the cell states are accepted,
	// one step past them refused.
	for _, r := range []struct {
		row, variable string
		re            *regexp.Regexp // the bounds, as the setting's cell states them
		step          string         // one step, for past the bounds
	}{
		{"rooms owned at once per user", "REALSYNC_MAX_ROOMS_OWNED", regexp.MustCompile("`(0)`: no limit; at most (\\d+)"), "1"},
		{"rooms a user is in at once", "REALSYNC_MAX_ROOMS_JOINED", regexp.MustCompile("`(0)`: no limit; at most (\\d+)"), "1"},
		{"open event streams per user", "REALSYNC_MAX_STREAMS_PER_USER", regexp.MustCompile("`(0)`: no limit; at most (\\d+)"), "1"},
		{"a user's personal log", "REALSYNC_OFFLINE_MAX", regexp.MustCompile(`REALSYNC_OFFLINE_MAX` + "`" + ` \((\d+)\.\.(\d+)\)`), "1"},
		{"a user's personal log", "REALSYNC_OFFLINE_TTL", regexp.MustCompile(`REALSYNC_OFFLINE_TTL` + "`" + ` \(.*; (\w+)\.\.(\w+)\)`), "1ms"},
		{"identity token clock leeway", "REALSYNC_JWT_LEEWAY", regexp.MustCompile(`\(≤ ()(\w+)\)`), "1ms"},
		{"time to send the headers", "REALSYNC_READ_HEADER_TIMEOUT", regexp.MustCompile(`\((\w+)\.\.(\w+)\)`), "1ms"},
	} {
		m := r.re.FindStringSubmatch(cell(r.row, setting))
		if m == nil {
			t.Errorf("row %q: the setting cell %q states no range of %s (%s)", r.row, cell(r.row, setting), r.variable, r.re)
			continue
		}
		checkRange(t, r.variable, m[1], m[2], r.step)
	}

	// Modes and regions: the form the table states is the one rooms
	// accepts.
	m := regexp.MustCompile("`(\\^[^`]+\\$)`").FindStringSubmatch(cell("modes and regions", def))
	if m == nil {
		t.Fatalf("row \"modes and regions\" states no pattern")
	}
	form := regexp.MustCompile(m[1])
	for _, name := range []string{"a", "0", "ranked", "eu-west_2", strings.Repeat("a", 32), strings.Repeat("a", 33), "", "A", "-a", "_a", "a.b", "a b", "é"} {
		if form.MatchString(name) != rooms.ValidName(name) {
			t.Errorf("row \"modes and regions\": %s says %q is %v, rooms.ValidName says %v", m[1], name, form.MatchString(name), rooms.ValidName(name))
		}
	}

	// Every row is checked, here or elsewhere: a row added without a check
	// fails.
	for _, elsewhere := range checkedElsewhere {
		cell(elsewhere, 0)
	}
	for _, r := range rows {
		if !checked[r[0]] {
			t.Errorf("row %q: no test checks its figures: check them here or in api's TestEveryLimitTableStatesTheAPI (and list it in checkedElsewhere)", r[0])
		}
	}
}

// checkedElsewhere are the rows of the "Every limit" table other tests
// check: the rate limits' (TestRateLimitsTableStatesTheDefaults) and
// api's (TestEveryLimitTableStatesTheAPI, TestRequestBodyRowStatesEveryCap).
var checkedElsewhere = []string{
	"requests per route class",
	"stream token",
	"an event stream's life",
	"API keys",
	"request line and header block",
	"request body",
	"a request's path and method in a log line",
}

// checkRates checks the rates (and bursts) a cell of the "Every limit"
// table states against the defaults of keys, in order.
func checkRates(t *testing.T, row, text string, keys []string, bursts bool) {
	t.Helper()
	defaults := limits.Defaults().Limits
	rates := rateRe.FindAllStringSubmatch(text, -1)
	var bs []int
	for _, m := range burstsRe.FindAllStringSubmatch(text, -1) {
		for _, b := range m[1:] {
			if n, err := strconv.Atoi(b); err == nil {
				bs = append(bs, n)
			}
		}
	}
	if !bursts {
		bs = nil
	}
	if len(rates) != len(keys) || (bursts && len(bs) != len(keys)) {
		t.Errorf("row %q: %q states %d rates and %d bursts, want those of %v", row, text, len(rates), len(bs), keys)
		return
	}
	for i, key := range keys {
		code := defaults[key]
		n, _ := strconv.Atoi(rates[i][1])
		doc := limits.Limit{Rate: n, Period: units[rates[i][2]], Burst: code.Burst}
		if bursts {
			doc.Burst = bs[i]
		}
		if !sameLimit(doc, code) {
			t.Errorf("row %q: %q states %s for %s, the default is %s", row, text, figure(doc), key, figure(code))
		}
	}
}

// checkRange checks that realsyncd accepts variable at lo and hi, and
// refuses it one step past each (lo "": the table states no lower bound).
func checkRange(t *testing.T, variable, lo, hi, step string) {
	t.Helper()
	past := func(v string, sign int) string {
		if n, err := strconv.Atoi(v); err == nil {
			s, _ := strconv.Atoi(step)
			return strconv.Itoa(n + sign*s)
		}
		d, err := time.ParseDuration(v)
		s, err2 := time.ParseDuration(step)
		if err != nil || err2 != nil {
			t.Fatalf("%s: %q is neither an integer nor a duration", variable, v)
		}
		return (d + time.Duration(sign)*s).String()
	}
	parse := func(v string) error {
		_, err := parseConfig(envOf(map[string]string{variable: v}), nil, nil)
		return err
	}
	cases := map[string]bool{hi: true, past(hi, 1): false}
	if lo != "" {
		cases[lo], cases[past(lo, -1)] = true, false
	}
	for value, ok := range cases {
		if err := parse(value); (err == nil) != ok {
			t.Errorf("%s=%s: the table states the range %s..%s, realsyncd's answer is %v", variable, value, lo, hi, cmp.Or(err, errors.New("accepted")))
		}
	}
}

// envOf is an environment of the variables of m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// shortDuration is d as a setting is written: 168h, 5m, 30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

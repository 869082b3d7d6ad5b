package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
)

// esc is n characters of free text as a JSON encoder may write them at
// their longest: each '<' as the 6-byte escape \u003c.
func esc(n int) string { return strings.Repeat(`\u003c`, n) }

// attrs16 are 16 attributes with 32-character keys and 128-character values.
func attrs16() string {
	var b strings.Builder
	for i := range 16 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s":"%s"`, fmt.Sprintf("k%031d", i), esc(128))
	}
	return "{" + b.String() + "}"
}

// fullState is a state at its totals: 256 keys of 64 characters, each with
// a 192-byte value, 64 KiB in all; prefix tells the keys apart.
func fullState(prefix string) string {
	var b strings.Builder
	for i := range 256 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s%0*d":"%s%s"`, prefix, 64-len(prefix), i, esc(31), "aaaa")
	}
	return "{" + b.String() + "}"
}

// The largest valid request of each route with a body is accepted, and
// its cap is just above it (under a third more); a body one byte over
// the cap is 413 before authentication.
func TestLargestValidBodies(t *testing.T) {
	// a mode whose parties are the largest: one team of up to 64
	rules, err := matchmaking.ParseRules([]byte(fmt.Sprintf("modes:\n  big: {minPlayers: 2, maxPlayers: %d}\n", matchmaking.MaxMatchPlayers)))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, st *store.Store, _ string) {
		c.Tickets = mustTickets(t, matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()), Rules: rules})
	})
	alice, _ := e.guest("alice")
	bob, _ := e.guest("bob")
	names := `"name":"` + esc(64) + `","mode":"` + strings.Repeat("m", 32) + `","region":"` + strings.Repeat("r", 32) + `"`
	create := `{` + names + `,"maxPlayers":100,"visibility":"public","statePolicy":"open","attributes":` + attrs16() + `,"state":` + fullState("a") + `}`
	r := e.do("POST", "/v1/rooms", alice, create)
	want(t, r, 201, "")
	id := r.body["room"].(map[string]any)["id"].(string)
	want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
	var dels strings.Builder
	for i := range 256 {
		fmt.Fprintf(&dels, `"a%063d":null,`, i)
	}
	patch := "{" + dels.String() + fullState("b")[1:]
	msg := `{"type":"` + esc(32) + `","data":"` + esc(681) + `aaaa","to":[` + strings.Repeat("1234567890123456789,", 99) + `2]}`
	var filters, ranges, regions []string
	for i := range 8 {
		filters = append(filters, fmt.Sprintf(`"f%031d":"%s"`, i, esc(128)))
		long := "-1." + strings.Repeat("1", 55) + "e+100" // 63 characters
		ranges = append(ranges, fmt.Sprintf(`"g%031d":{"gte":%s,"lte":%s}`, i, long, long))
	}
	for i := range 10 {
		regions = append(regions, fmt.Sprintf(`"%s%02d"`, strings.Repeat("r", 30), i))
	}
	// 8 string filters, and a create of 16 attributes: the 8 filtered,
	// with the filters' values (it must not contradict them: the created
	// room must match its own filters), and 8 more
	var kept, inRange []string
	for i := range 8 {
		kept = append(kept, fmt.Sprintf(`"k%031d":"%s"`, i, esc(128)))
		inRange = append(inRange, fmt.Sprintf(`"g%031d":-1.%se+100`, i, strings.Repeat("1", 55)))
	}
	quickCreate := func(filters, attrs []string) string {
		return `{"mode":"` + strings.Repeat("q", 32) + `","regions":[` + strings.Join(regions, ",") + `],"attributes":{` + strings.Join(filters, ",") +
			`},"create":{"name":"` + esc(64) + `","maxPlayers":100,"statePolicy":"open","attributes":{` + strings.Join(attrs, ",") + `}}}`
	}
	quick := quickCreate(filters, append(slices.Clone(filters), kept...))
	// 8 range filters with bounds of 63 characters, the create holding
	// their keys as numbers within them: smaller.
	if len(quickCreate(ranges, append(inRange, kept...))) > len(quick) {
		t.Fatalf("the quick-join with range filters is the larger")
	}
	// user ids of 128 bytes of UTF-8 (a 2-byte character 62 times)
	userIDs := func(n int) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf(`"u%03d%s"`, i, strings.Repeat("é", 62))
		}
		return "[" + strings.Join(ids, ",") + "]"
	}
	var tregions []string
	for i := range 8 {
		tregions = append(tregions, fmt.Sprintf(`"%s%02d"`, strings.Repeat("r", 30), i))
	}
	ticket := `{"mode":"big","regions":[` + strings.Join(tregions, ",") + `],"rating":-999999999.9999999,"attributes":` + attrs16() +
		`,"partyUserIds":` + userIDs(matchmaking.MaxMatchPlayers-1) + `}`
	carol, _ := e.guest("carol")
	cases := []struct {
		name, method, route, path, token, body string
		status                                 int
		hdr                                    []string
	}{
		{"Guest", "POST", "/v1/auth/guest", "/v1/auth/guest", "", `{"name":"` + esc(32) + `"}`, 201, nil},
		{"Create", "POST", "/v1/rooms", "/v1/rooms", alice, create, 201, nil},
		{"Update", "PATCH", "/v1/rooms/{roomId}", "/v1/rooms/" + id, alice, `{"name":"` + esc(64) + `","status":"waiting","locked":false,"maxPlayers":100,"visibility":"public","attributes":` + attrs16() + `}`, 200, nil},
		{"State", "PATCH", "/v1/rooms/{roomId}/state", "/v1/rooms/" + id + "/state", alice, patch, 200, []string{"Content-Type", "application/merge-patch+json"}},
		{"Message", "POST", "/v1/rooms/{roomId}/messages", "/v1/rooms/" + id + "/messages", alice, msg, 422, nil}, // recipients not in the room: past the size checks
		{"QuickJoinCreate", "POST", "/v1/matchmaking/quick-join", "/v1/matchmaking/quick-join", bob, quick, 201, nil},
		{"Ticket", "POST", "/v1/matchmaking/tickets", "/v1/matchmaking/tickets", carol, ticket, 201, nil},
		{"Following", "PUT", "/v1/me/following", "/v1/me/following", alice, `{"userIds":` + userIDs(500) + `}`, 200, nil},
		{"Party", "PUT", "/v1/me/party", "/v1/me/party", alice, `{"leaderUserId":"` + strings.Repeat(`\ud83d\ude00`, 32) + `"}`, 200, nil}, // 32 runes of 4 bytes, escaped
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			limit := api.BodyLimit(tc.method, tc.route)
			size := int64(len(tc.body))
			if size > limit || limit*3 > size*4 && limit > 1<<10 {
				t.Fatalf("largest valid body %d bytes, cap %d: not just above", size, limit)
			}
			r := e.do(tc.method, tc.path, tc.token, tc.body, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("largest valid body (%d bytes, cap %d): %d %s\n%s", size, limit, r.status, r.raw, e.logs.String())
			}
			t.Logf("%s: largest valid body %.1f KiB, cap %d KiB", tc.name, float64(size)/1024, limit>>10)
			over := `{"name":"` + strings.Repeat("x", int(limit)-11+1) + `"}`
			want(t, e.do(tc.method, tc.path, "", over), 413, "PAYLOAD_TOO_LARGE")
		})
	}
	// Routes that read no body take at most 1 KiB.
	want(t, e.do("POST", "/v1/rooms/"+id+"/leave", "", strings.Repeat(" ", 1025)), 413, "PAYLOAD_TOO_LARGE")
	want(t, e.do("GET", "/v1/rooms", "", strings.Repeat(" ", 1025)), 413, "PAYLOAD_TOO_LARGE")
	want(t, e.do("POST", "/v1/me/stream-token", alice, strings.Repeat(" ", 1025)), 413, "PAYLOAD_TOO_LARGE")
	want(t, e.do("POST", "/v1/me/stream-token", alice, strings.Repeat(" ", 1024)), 201, "")
}

// A client that sends its headers and then withholds its body gets 408
// REQUEST_TIMEOUT and a closed connection once the request timeout passed,
// without a token; an event stream outlives that timeout.
func TestBodyDeadline(t *testing.T) {
	// a second: the sign-in, create and patch below are ordinary requests
	// under it, which a loaded machine (CI's lanes) could stretch past 300 ms
	const timeout = time.Second
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) { c.RequestTimeout = timeout })
	u, _ := url.Parse(e.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sent := time.Now()
	fmt.Fprintf(conn, "POST /v1/rooms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounded wait for the outcome
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a withheld body: %v", err)
	}
	if res.StatusCode != 408 || !res.Close {
		t.Fatalf("withheld body: %d, connection closed %v", res.StatusCode, res.Close)
	}
	// not a bound on speed: the connection was held a whole timeout more
	// after the 408, waiting for the rest of a body that had not come in
	// time (a tester read the close 20 s after the headers, with a 10 s
	// timeout)
	io.Copy(io.Discard, res.Body)
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the 408 the connection is still open: read %d, %v (want EOF)", n, err)
	}
	if d := time.Since(sent); d >= 2*timeout {
		t.Fatalf("the connection closed %s after the headers, twice the request timeout %s or more", d.Round(time.Millisecond), timeout)
	}

	alice, _ := e.guest("alice")
	id := e.create(alice, arena)["id"].(string)
	req, _ := http.NewRequest("GET", e.url+"/v1/rooms/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	go func() { // a bounded wait: a stream that never delivers fails the test
		time.Sleep(20 * time.Second)
		stream.Body.Close()
	}()
	lines := bufio.NewScanner(stream.Body)
	readUntil := func(s string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), s) {
				return
			}
		}
		t.Fatalf("stream ended before %q: %v", s, lines.Err())
	}
	readUntil("snapshot")
	time.Sleep(timeout + 500*time.Millisecond) // past the request timeout
	want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"late":true}`, "Content-Type", "application/merge-patch+json"), 200, "")
	readUntil(`"late":true`)
}

// A request whose body the server does not read whole (over its route's
// cap by its Content-Length, over it as it arrives, or not there within
// the request timeout) is answered, and its connection closed within the
// request timeout when the client sends nothing more: net/http reads what
// is left of a declared body before it closes a connection, and without a
// deadline waited for a client that sent nothing more for good (an abuse
// tester held 3 000 connections and their goroutines so, past the idle
// timeout and the shutdown's).
func TestUnreadBodyClosesTheConnection(t *testing.T) {
	const timeout = time.Second
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) { c.RequestTimeout = timeout })
	u, _ := url.Parse(e.url)
	for _, tc := range []struct {
		name, request string
		status        int
	}{
		{"declared over the cap", "POST /v1/rooms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", 413},
		{"declared over the cap of a route without a body", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n", 413},
		{"declared over the cap of no route", "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n", 413},
		{"over the cap as it arrives", "POST /v1/rooms/join-by-code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + strings.Repeat("x", 0x800) + "\r\n", 413},
		{"withheld", "POST /v1/rooms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n{\"na", 408},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.request); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bounded wait: the close comes a request timeout (1 s) after the answer
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			io.Copy(io.Discard, res.Body)
			if res.StatusCode != tc.status || !res.Close {
				t.Fatalf("%d (Connection: close %v), want %d and close", res.StatusCode, res.Close, tc.status)
			}
			if n, err := br.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("after the answer the connection is still open: read %d, %v (want EOF)", n, err)
			}
		})
	}
}

// Requests but event streams run with the request timeout as their
// context's deadline (GET /readyz would allow its check 2 s).
func TestRequestDeadline(t *testing.T) {
	const timeout = 500 * time.Millisecond
	left := make(chan time.Duration, 1)
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) {
		c.RequestTimeout = timeout
		c.Ready = func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			if !ok {
				d = time.Now().Add(time.Hour)
			}
			left <- time.Until(d)
			return nil
		}
	})
	want(t, e.do("GET", "/readyz", "", nil), 200, "")
	if l := <-left; l > timeout {
		t.Fatalf("the request's context has %s left, more than the request timeout %s", l, timeout)
	}
}

// The largest valid request line, GET /v1/presence with 100 user ids of
// 128 bytes of UTF-8, every byte percent-encoded (commas included), fits
// api.MaxHeaderBytes with room for a large token and a proxy's headers
// (8 KiB more here): 200 with the 100 statuses, not net/http's 431. A
// header block over the limit is still 431.
func TestLargestValidQuery(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, _ := e.guest("alice")
	var q strings.Builder
	for i := range 100 {
		if i > 0 {
			q.WriteString("%2C")
		}
		for _, b := range []byte(fmt.Sprintf("u%03d%s", i, strings.Repeat("é", 62))) { // 128 bytes
			fmt.Fprintf(&q, "%%%02X", b)
		}
	}
	path := "/v1/presence?userIds=" + q.String()
	if line := len("GET " + path + " HTTP/1.1\r\n"); line < 38_700 || line > 38_800 {
		t.Fatalf("request line of %d bytes, want the worst case, about 38.7 KB", line)
	}
	r := e.do("GET", path, alice, nil, "X-Padding", strings.Repeat("p", 8<<10))
	want(t, r, 200, "")
	if users, _ := r.body["users"].([]any); len(users) != 100 {
		t.Fatalf("%d statuses, want 100", len(users))
	}
	req, _ := http.NewRequest("GET", e.url+"/v1/presence?userIds=u1", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("X-Padding", strings.Repeat("p", api.MaxHeaderBytes+16<<10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 431 {
		t.Fatalf("a header block over the limit: %d, want 431", res.StatusCode)
	}
}

package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.yaml.in/yaml/v3"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// The authorization matrix: every route of openapi.yaml × every kind of
// caller → the exact status and problem code, run against a real server on
// every backend. Three tables make it up:
//
//   - identities: the columns, each a name and how its credential is put
//     on a request;
//   - routeCalls: how to call each route (path, body, whether a success
//     consumes the fixture, whether it is an event stream);
//   - authzMatrix: the expected cells, a text table a reviewer reads as is.
//
// A route of openapi.yaml without its call or its rows fails the test, and
// so does a row or call for a route the spec no longer has; a row without a
// cell for some identity fails, naming both (cells are never defaulted).
// Every refused cell also checks that nothing changed: both fixture rooms
// (version, players, state, everything the store holds) and the lobby's
// counts are the same after. Every 404 ROOM_NOT_FOUND cell is compared with
// the same request for a room that was never issued: the answers must be
// identical, so a private room's existence does not leak.
//
// Adding an identity (after the merges of issue 13): add an entry to
// identities, then a column with its name to authzMatrix's header and a
// cell in every row; a caller that must exist in the room first (say, a
// banned user) gets a token field in fixture and its steps in
// matrixEnv.fixture; a credential the server must be configured with (API
// keys) goes into newMatrixEnv. Adding a route: openapi.yaml, then a
// routeCalls entry and its rows. newMatrixEnv wires the server as
// cmd/realsyncd does, but with request-rate limits off: the matrix sends
// over a thousand requests per backend from one address.

// Cell aliases of authzMatrix; any other cell is "<status>" or
// "<status>:<CODE>".
var cellAliases = map[string]string{
	"U":  "401:UNAUTHENTICATED",
	"NM": "403:NOT_A_MEMBER",
	"NO": "403:NOT_OWNER",
	"SK": "403:STATE_KEY_FORBIDDEN",
	"AR": "403:ADMIN_REQUIRED",
	"NF": "404:ROOM_NOT_FOUND",
	"TN": "404:TICKET_NOT_FOUND",
	"SR": "403:SCOPE_REQUIRED",
	"ST": "401:STREAM_TOKEN_REQUIRED",
	"DL": "404:DEAD_LETTER_NOT_FOUND",
	"PN": "404:PARTY_NOT_FOUND",
}

// authzMatrix is route × identity → expected answer. Columns: method, path
// (as in openapi.yaml), the room the call is made on (pub: the fixture's
// public room, priv: its private room, -: none), then one cell per identity
// named in the header. Identities (see identities for how each is made):
//
//	anon      no credential
//	malformed "Bearer not-a-jwt"
//	expired   HS256 with the server's secret, expired an hour ago
//	wrongkey  HS256 signed with another secret
//	algnone   alg "none", no signature
//	guest     valid token of a user in no room of the fixture
//	member    player 2 of the room
//	owner     player 1 of the room, its creator
//	kicked    joined, then kicked by the owner
//	left      joined, then left
//	other     owner of another (public) room
//	admin     REALSYNC_ADMIN_TOKEN
//	banned    joined, then kicked by the owner with ban=true
//	kread     API key with the scope rooms:read only (Authorization: Bearer)
//	kwrite    API key with the scope rooms:write only
//	kadmin    API key with the scope rooms:admin only
//	xkread    the rooms:read key as X-API-Key
//	memberq   the member's identity token as the query parameter
//	          access_token (no header): refused on event streams (an
//	          identity token never goes in a URL), ignored elsewhere
//	stoken    a stream token of the room's member for this room, as the
//	          query parameter token (as EventSource sends it)
//	stokenb   that stream token as a bearer token (never an identity)
//	stokenother a stream token of the other room's owner for the other
//	          room, as token
//	stokenlobby a stream token of the member for the lobby feed, as token
//
// On room routes, the room's statePolicy is owner, so a member writing the
// key "score" is STATE_KEY_FORBIDDEN; kick's target is the member.
const authzMatrix = `
method path                                  room anon malformed expired wrongkey algnone guest member owner kicked left other admin memberq banned     kread kwrite kadmin xkread stoken stokenb stokenother stokenlobby
POST   /v1/auth/guest                        -    201  201       201     201      201     201   201    201   201    201  201   201   201     201        201   201    201    201    201    201     201         201
POST   /v1/auth/refresh                      -    U    U         U       U        U       201   201    201   201    201  201   U     U       201        SR    SR     SR     SR     U      ST      U           U
POST   /v1/rooms                             -    U    U         U       U        U       201   201    201   201    201  201   U     U       201        SR    SR     SR     SR     U      ST      U           U
GET    /v1/rooms                             pub  U    U         U       U        U       200   200    200   200    200  200   U     U       200        200   SR     SR     200    U      ST      U           U
GET    /v1/rooms                             priv U    U         U       U        U       200   200    200   200    200  200   U     U       200        200   SR     SR     200    U      ST      U           U
POST   /v1/rooms/join-by-code                priv U    U         U       U        U       200   200    200   200    200  200   U     U       403:BANNED SR    SR     SR     SR     U      ST      U           U
GET    /v1/rooms/{roomId}                    pub  U    U         U       U        U       200   200    200   200    200  200   U     U       200        200   SR     SR     200    U      ST      U           U
GET    /v1/rooms/{roomId}                    priv U    U         U       U        U       NF    200    200   NF     NF   NF    U     U       NF         200   SR     SR     200    U      ST      U           U
PATCH  /v1/rooms/{roomId}                    pub  U    U         U       U        U       NM    NO     200   NM     NM   NM    U     U       NM         SR    200    SR     SR     U      ST      U           U
PATCH  /v1/rooms/{roomId}                    priv U    U         U       U        U       NF    NO     200   NF     NF   NF    U     U       NF         SR    200    SR     SR     U      ST      U           U
DELETE /v1/rooms/{roomId}                    pub  U    U         U       U        U       NM    NO     204   NM     NM   NM    U     U       NM         SR    SR     204    SR     U      ST      U           U
DELETE /v1/rooms/{roomId}                    priv U    U         U       U        U       NF    NO     204   NF     NF   NF    U     U       NF         SR    SR     204    SR     U      ST      U           U
POST   /v1/rooms/{roomId}/join               pub  U    U         U       U        U       200   200    200   200    200  200   U     U       403:BANNED SR    SR     SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/join               priv U    U         U       U        U       NF    200    200   NF     NF   NF    U     U       NF         SR    SR     SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/leave              pub  U    U         U       U        U       NM    204    204   NM     NM   NM    U     U       NM         SR    SR     SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/leave              priv U    U         U       U        U       NF    204    204   NF     NF   NF    U     U       NF         SR    SR     SR     SR     U      ST      U           U
DELETE /v1/rooms/{roomId}/players/{playerId} pub  U    U         U       U        U       NM    NO     204   NM     NM   NM    U     U       NM         SR    SR     204    SR     U      ST      U           U
DELETE /v1/rooms/{roomId}/players/{playerId} priv U    U         U       U        U       NF    NO     204   NF     NF   NF    U     U       NF         SR    SR     204    SR     U      ST      U           U
POST   /v1/rooms/{roomId}/reservations       pub  U    U         U       U        U       NM    NO     201   NM     NM   NM    U     U       NM         SR    201    SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/reservations       priv U    U         U       U        U       NF    NO     201   NF     NF   NF    U     U       NF         SR    201    SR     SR     U      ST      U           U
GET    /v1/rooms/{roomId}/state              pub  U    U         U       U        U       NM    200    200   NM     NM   NM    U     U       NM         200   SR     SR     200    U      ST      U           U
GET    /v1/rooms/{roomId}/state              priv U    U         U       U        U       NF    200    200   NF     NF   NF    U     U       NF         200   SR     SR     200    U      ST      U           U
PATCH  /v1/rooms/{roomId}/state              pub  U    U         U       U        U       NM    SK     200   NM     NM   NM    U     U       NM         SR    200    SR     SR     U      ST      U           U
PATCH  /v1/rooms/{roomId}/state              priv U    U         U       U        U       NF    SK     200   NF     NF   NF    U     U       NF         SR    200    SR     SR     U      ST      U           U
GET    /v1/rooms/{roomId}/events             pub  U    U         U       U        U       NM    200    200   NM     NM   NM    U     ST      NM         200   SR     SR     200    200    ST      ST          ST
GET    /v1/rooms/{roomId}/events             priv U    U         U       U        U       NF    200    200   NF     NF   NF    U     ST      NF         200   SR     SR     200    200    ST      ST          ST
POST   /v1/rooms/{roomId}/stream-token       pub  U    U         U       U        U       NM    201    201   NM     NM   NM    U     U       NM         SR    SR     SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/stream-token       priv U    U         U       U        U       NF    201    201   NF     NF   NF    U     U       NF         SR    SR     SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/messages           pub  U    U         U       U        U       NM    202    202   NM     NM   NM    U     U       NM         SR    202    SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/messages           priv U    U         U       U        U       NF    202    202   NF     NF   NF    U     U       NF         SR    202    SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/invites            pub  U    U         U       U        U       NM    202    202   NM     NM   NM    U     U       NM         SR    202    SR     SR     U      ST      U           U
POST   /v1/rooms/{roomId}/invites            priv U    U         U       U        U       NF    202    202   NF     NF   NF    U     U       NF         SR    202    SR     SR     U      ST      U           U
POST   /v1/users/{userId}/messages           -    U    U         U       U        U       202   202    202   202    202  202   U     U       202        SR    202    SR     SR     U      ST      U           U
GET    /v1/rooms/{roomId}/messages           pub  U    U         U       U        U       NM    200    200   NM     NM   NM    U     U       NM         200   SR     SR     200    U      ST      U           U
GET    /v1/rooms/{roomId}/messages           priv U    U         U       U        U       NF    200    200   NF     NF   NF    U     U       NF         200   SR     SR     200    U      ST      U           U
POST   /v1/matchmaking/quick-join            -    U    U         U       U        U       201   201    201   201    201  201   U     U       201        SR    SR     SR     SR     U      ST      U           U
POST   /v1/matchmaking/tickets               -    U    U         U       U        U       201   201    409:TICKET_ACTIVE 201 201 201 U U     201        SR    SR     SR     SR     U      ST      U           U
GET    /v1/matchmaking/tickets/{ticketId}    -    U    U         U       U        U       TN    TN     200   TN     TN   TN    U     U       TN         200   SR     SR     200    U      ST      U           U
DELETE /v1/matchmaking/tickets/{ticketId}    -    U    U         U       U        U       TN    TN     204   TN     TN   TN    U     U       TN         SR    204    SR     SR     U      ST      U           U
GET    /v1/me/rooms                          -    U    U         U       U        U       200   200    200   200    200  200   U     U       200        SR    SR     SR     SR     U      ST      U           U
GET    /v1/lobby/stats                       -    U    U         U       U        U       200   200    200   200    200  200   U     U       200        200   SR     SR     200    U      ST      U           U
POST   /v1/lobby/stream-token                -    U    U         U       U        U       201   201    201   201    201  201   U     U       201        SR    SR     SR     SR     U      ST      U           U
GET    /v1/lobby/events                      pub  U    U         U       U        U       200   200    200   200    200  200   U     ST      200        200   SR     SR     200    ST     ST      ST          200
GET    /v1/lobby/events                      priv U    U         U       U        U       200   200    200   200    200  200   U     ST      200        200   SR     SR     200    ST     ST      ST          200
POST   /v1/me/stream-token                   -    U    U         U       U        U       201   201    201   201    201  201   U     U       201        SR    SR     SR     SR     U      ST      U           U
GET    /v1/me/events                         -    U    U         U       U        U       200   200    200   200    200  200   U     ST      200        SR    SR     SR     SR     ST     ST      ST          ST
PUT    /v1/me/following                      -    U    U         U       U        U       200   200    200   200    200  200   U     U       200        SR    SR     SR     SR     U      ST      U           U
GET    /v1/me/party                          -    U    U         U       U        U       PN    PN     PN    PN     PN   PN    U     U       PN         SR    SR     SR     SR     U      ST      U           U
PUT    /v1/me/party                          -    U    U         U       U        U       200   200    200   200    200  200   U     U       200        SR    SR     SR     SR     U      ST      U           U
DELETE /v1/me/party                          -    U    U         U       U        U       204   204    204   204    204  204   U     U       204        SR    SR     SR     SR     U      ST      U           U
GET    /v1/me/party/members                  -    U    U         U       U        U       200   200    200   200    200  200   U     U       200        SR    SR     SR     SR     U      ST      U           U
GET    /v1/presence                          -    U    U         U       U        U       200   200    200   200    200  200   U     U       200        200   SR     SR     200    U      ST      U           U
GET    /v1/admin/instances                   -    U    U         U       U        U       AR    AR     AR    AR     AR   AR    200   U       AR         U     U      U      U      U      U       U           U
GET    /v1/admin/webhooks/dead-letters       -    U    U         U       U        U       AR    AR     AR    AR     AR   AR    200   U       AR         U     U      U      U      U      U       U           U
POST   /v1/admin/webhooks/dead-letters/{deadLetterId}/replay - U U U U U AR AR AR AR AR AR DL U AR U U U U U U U U
GET    /healthz                              -    200  200       200     200      200     200   200    200   200    200  200   200   200     200        200   200    200    200    200    200     200         200
HEAD   /healthz                              -    200  200       200     200      200     200   200    200   200    200  200   200   200     200        200   200    200    200    200    200     200         200
GET    /readyz                               -    200  200       200     200      200     200   200    200   200    200  200   200   200     200        200   200    200    200    200    200     200         200
HEAD   /readyz                               -    200  200       200     200      200     200   200    200   200    200  200   200   200     200        200   200    200    200    200    200     200         200
GET    /metrics                              -    200  200       200     200      200     200   200    200   200    200  200   200   200     200        200   200    200    200    200    200     200         200
GET    /openapi.yaml                         -    200  200       200     200      200     200   200    200   200    200  200   200   200     200        200   200    200    200    200    200     200         200
`

// matrixSecret is the server's HS256 secret; matrixAdminToken its admin
// token.
const (
	matrixSecret     = "matrix-secret"
	matrixAdminToken = "matrix-admin-token-of-at-least-32-characters"
)

// identity is a column of the matrix: a kind of caller and how its
// credential goes on a request. cred may read the fixture (the members'
// tokens) and use the environment (m.must to fetch a credential from the
// server, such as a stream token).
type identity struct {
	name string
	cred func(t *testing.T, m *matrixEnv, f *fixture, req *http.Request)
}

// tokenQuery sends a stream token as EventSource does: the query
// parameter token.
func tokenQuery(req *http.Request, token string) {
	q := req.URL.Query()
	q.Set("token", token)
	req.URL.RawQuery = q.Encode()
}

// bearerOf sends token as a bearer token.
func bearerOf(token string, req *http.Request) { req.Header.Set("Authorization", "Bearer "+token) }

// signed returns an HS256 token for subject sub signed with secret,
// expiring at exp.
func signed(secret, sub string, exp time.Time) string {
	c := jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(exp.Add(-time.Hour))}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
	if err != nil {
		panic(err)
	}
	return tok
}

// identities are the matrix's columns. The subjects of the forged tokens
// are the room owner's, so only the credential's defect can refuse them.
var identities = []identity{
	{"anon", func(*testing.T, *matrixEnv, *fixture, *http.Request) {}},
	{"malformed", func(_ *testing.T, _ *matrixEnv, _ *fixture, req *http.Request) { bearerOf("not-a-jwt", req) }},
	{"expired", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) {
		bearerOf(signed(matrixSecret, f.ownerID, time.Now().Add(-time.Hour)), req)
	}},
	{"wrongkey", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) {
		bearerOf(signed("not-"+matrixSecret, f.ownerID, time.Now().Add(time.Hour)), req)
	}},
	{"algnone", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) {
		c := jwt.RegisteredClaims{Subject: f.ownerID, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			panic(err)
		}
		bearerOf(tok, req)
	}},
	{"guest", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.guest, req) }},
	{"member", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.member, req) }},
	{"owner", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.owner, req) }},
	{"kicked", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.kicked, req) }},
	{"left", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.left, req) }},
	{"other", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.other, req) }},
	{"admin", func(_ *testing.T, _ *matrixEnv, _ *fixture, req *http.Request) { bearerOf(matrixAdminToken, req) }},
	{"banned", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) { bearerOf(f.banned, req) }},
	{"kread", func(_ *testing.T, m *matrixEnv, _ *fixture, req *http.Request) { bearerOf(m.keys["read"], req) }},
	{"kwrite", func(_ *testing.T, m *matrixEnv, _ *fixture, req *http.Request) { bearerOf(m.keys["write"], req) }},
	{"kadmin", func(_ *testing.T, m *matrixEnv, _ *fixture, req *http.Request) { bearerOf(m.keys["admin"], req) }},
	{"xkread", func(_ *testing.T, m *matrixEnv, _ *fixture, req *http.Request) {
		req.Header.Set("X-API-Key", m.keys["read"])
	}},
	{"stoken", func(t *testing.T, m *matrixEnv, f *fixture, req *http.Request) {
		tokenQuery(req, m.streamToken(t, f.member, "/v1/rooms/"+f.room+"/stream-token"))
	}},
	{"stokenb", func(t *testing.T, m *matrixEnv, f *fixture, req *http.Request) {
		bearerOf(m.streamToken(t, f.member, "/v1/rooms/"+f.room+"/stream-token"), req)
	}},
	{"stokenother", func(t *testing.T, m *matrixEnv, f *fixture, req *http.Request) {
		tokenQuery(req, m.streamToken(t, f.other, "/v1/rooms/"+f.otherRoom+"/stream-token"))
	}},
	{"stokenlobby", func(t *testing.T, m *matrixEnv, f *fixture, req *http.Request) {
		tokenQuery(req, m.streamToken(t, f.member, "/v1/lobby/stream-token"))
	}},
	{"memberq", func(_ *testing.T, _ *matrixEnv, f *fixture, req *http.Request) {
		q := req.URL.Query()
		q.Set("access_token", f.member)
		req.URL.RawQuery = q.Encode()
	}},
}

// call is how a route is called.
type call struct {
	// req returns the path (with query) and body of a call on room (the
	// fixture's room under test, or an id never issued). body nil: none;
	// a string is sent as is, anything else JSON-encoded.
	req func(m *matrixEnv, f *fixture, room string) (path string, body any)
	// ctype is the body's Content-Type (default application/json).
	ctype string
	// consumes: a successful call changes the fixture (or may), so each
	// successful cell gets a fresh one.
	consumes bool
	// stream: an event stream, checked for 200 text/event-stream and
	// closed at once.
	stream bool
	// check, when set, checks a successful answer's body (a stream's
	// first data line).
	check func(f *fixture, private bool, body []byte) error
}

func fixed(path string) func(*matrixEnv, *fixture, string) (string, any) {
	return func(*matrixEnv, *fixture, string) (string, any) { return path, nil }
}

func onRoom(suffix string, body any) func(*matrixEnv, *fixture, string) (string, any) {
	return func(_ *matrixEnv, _ *fixture, room string) (string, any) { return "/v1/rooms/" + room + suffix, body }
}

// routeCalls has one entry per operation of openapi.yaml, keyed
// "METHOD path".
var routeCalls = map[string]call{
	"POST /v1/auth/guest": {req: func(*matrixEnv, *fixture, string) (string, any) {
		return "/v1/auth/guest", map[string]any{"name": "matrix"}
	}},
	"POST /v1/rooms": {req: func(*matrixEnv, *fixture, string) (string, any) {
		return "/v1/rooms", map[string]any{"name": "Made", "mode": "made", "region": "eu"}
	}},
	// The fixture's rooms are alone in their mode: the public one is
	// listed, the private one never.
	"GET /v1/rooms": {check: listsRoomIfPublic, req: func(_ *matrixEnv, f *fixture, _ string) (string, any) {
		return "/v1/rooms?mode=" + f.mode, nil
	}},
	"POST /v1/rooms/join-by-code": {consumes: true, req: func(_ *matrixEnv, f *fixture, _ string) (string, any) {
		return "/v1/rooms/join-by-code", map[string]any{"inviteCode": f.code}
	}},
	"GET /v1/rooms/{roomId}":    {req: onRoom("", nil)},
	"PATCH /v1/rooms/{roomId}":  {req: onRoom("", map[string]any{"name": "Renamed"}), consumes: true},
	"DELETE /v1/rooms/{roomId}": {req: onRoom("", nil), consumes: true},
	// A member joining again changes nothing, but others join.
	"POST /v1/rooms/{roomId}/join":  {req: onRoom("/join", nil), consumes: true},
	"POST /v1/rooms/{roomId}/leave": {req: onRoom("/leave", nil), consumes: true},
	"DELETE /v1/rooms/{roomId}/players/{playerId}": {consumes: true, req: func(_ *matrixEnv, f *fixture, room string) (string, any) {
		return "/v1/rooms/" + room + "/players/" + strconv.Itoa(f.memberPID), nil
	}},
	// a seat held for a user of no fixture: the fixture's joins still fit
	"POST /v1/rooms/{roomId}/reservations": {req: onRoom("/reservations", map[string]any{"userIds": []string{"u-held"}}), consumes: true},
	"GET /v1/rooms/{roomId}/state":         {req: onRoom("/state", nil)},
	"PATCH /v1/rooms/{roomId}/state":       {req: onRoom("/state", map[string]any{"score": 1}), ctype: "application/merge-patch+json", consumes: true},
	// Opening a stream connects the player (player_connected).
	"GET /v1/rooms/{roomId}/events":    {req: onRoom("/events", nil), stream: true, consumes: true},
	"POST /v1/rooms/{roomId}/messages": {req: onRoom("/messages", map[string]any{"type": "chat", "data": "hi"}), consumes: true},
	"GET /v1/rooms/{roomId}/messages":  {req: onRoom("/messages", nil)},
	"POST /v1/rooms/{roomId}/invites":  {req: onRoom("/invites", map[string]any{"userId": "someone"})},
	"POST /v1/users/{userId}/messages": {req: func(*matrixEnv, *fixture, string) (string, any) {
		return "/v1/users/someone/messages", map[string]any{"type": "chat", "data": "hi"}
	}},
	"POST /v1/matchmaking/quick-join": {req: func(m *matrixEnv, _ *fixture, _ string) (string, any) {
		m.seq++ // a mode of its own: always creates, never joins the fixture
		return "/v1/matchmaking/quick-join", map[string]any{"mode": fmt.Sprintf("qj%d", m.seq), "regions": []string{"eu"},
			"create": map[string]any{"name": "Quick"}}
	}},
	// matchmaking (issue 17): the fixture's owner has a searching ticket
	"POST /v1/matchmaking/tickets": {consumes: true, req: func(m *matrixEnv, _ *fixture, _ string) (string, any) {
		m.seq++
		return "/v1/matchmaking/tickets", map[string]any{"mode": fmt.Sprintf("mm%d", m.seq), "regions": []string{"eu"}}
	}},
	"GET /v1/matchmaking/tickets/{ticketId}": {req: func(_ *matrixEnv, f *fixture, _ string) (string, any) {
		return "/v1/matchmaking/tickets/" + f.ticket, nil
	}},
	"DELETE /v1/matchmaking/tickets/{ticketId}": {consumes: true, req: func(_ *matrixEnv, f *fixture, _ string) (string, any) {
		return "/v1/matchmaking/tickets/" + f.ticket, nil
	}},
	"GET /v1/me/rooms":    {req: fixed("/v1/me/rooms")},
	"GET /v1/lobby/stats": {req: fixed("/v1/lobby/stats")},
	// Issuing a token changes nothing.
	"POST /v1/auth/refresh":                {req: fixed("/v1/auth/refresh")},
	"POST /v1/rooms/{roomId}/stream-token": {req: onRoom("/stream-token", nil)},
	"POST /v1/lobby/stream-token":          {req: fixed("/v1/lobby/stream-token")},
	// The first event, "rooms", lists the public room, never the private one.
	"GET /v1/lobby/events": {stream: true, check: listsRoomIfPublic, req: func(_ *matrixEnv, f *fixture, _ string) (string, any) {
		return "/v1/lobby/events?mode=" + f.mode, nil
	}},
	// players (issue 16): a session opened and closed at once; following
	// and presence change no room
	"POST /v1/me/stream-token": {req: fixed("/v1/me/stream-token")},
	"GET /v1/me/events":        {stream: true, req: fixed("/v1/me/events?platform=web")},
	"PUT /v1/me/following": {req: func(*matrixEnv, *fixture, string) (string, any) {
		return "/v1/me/following", map[string]any{"userIds": []string{"someone"}}
	}},
	// a party changes no room; its GET row comes first, before any
	// caller joined one
	"GET /v1/me/party": {req: fixed("/v1/me/party")},
	"PUT /v1/me/party": {req: func(*matrixEnv, *fixture, string) (string, any) {
		return "/v1/me/party", map[string]any{"leaderUserId": "someone"}
	}},
	"DELETE /v1/me/party":      {req: fixed("/v1/me/party")},
	"GET /v1/me/party/members": {req: fixed("/v1/me/party/members")},
	"GET /v1/presence":         {req: fixed("/v1/presence?userIds=someone,else")},
	"GET /v1/admin/instances":  {req: fixed("/v1/admin/instances")},
	// no dead letter in the matrix's store: the admin reaches the replay
	// and is told so (api/webhooks_admin_test.go replays real ones)
	"GET /v1/admin/webhooks/dead-letters":                        {req: fixed("/v1/admin/webhooks/dead-letters?limit=5")},
	"POST /v1/admin/webhooks/dead-letters/{deadLetterId}/replay": {req: fixed("/v1/admin/webhooks/dead-letters/0.1-0/replay")},
	"GET /healthz":      {req: fixed("/healthz")},
	"HEAD /healthz":     {req: fixed("/healthz")},
	"HEAD /readyz":      {req: fixed("/readyz")},
	"GET /readyz":       {req: fixed("/readyz")},
	"GET /metrics":      {req: fixed("/metrics")},
	"GET /openapi.yaml": {req: fixed("/openapi.yaml")},
}

// matrixRow is one parsed row of authzMatrix.
type matrixRow struct {
	method, path, room string
	cells              map[string]expect // by identity name
}

// expect is a cell: the status and, for errors, the problem code.
type expect struct {
	status int
	code   string
}

func (e expect) String() string {
	if e.code == "" {
		return strconv.Itoa(e.status)
	}
	return strconv.Itoa(e.status) + " " + e.code
}

func parseCell(s string) (expect, error) {
	if a, ok := cellAliases[s]; ok {
		s = a
	}
	st, code, _ := strings.Cut(s, ":")
	n, err := strconv.Atoi(st)
	if err != nil || n < 100 || n > 599 || (n >= 400) != (code != "") {
		return expect{}, fmt.Errorf("bad cell %q: want <status>, <status>:<CODE> for errors, or an alias", s)
	}
	return expect{n, code}, nil
}

// parseMatrix reads authzMatrix, failing on any column or cell that does
// not match the identities.
func parseMatrix(t *testing.T) []matrixRow {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(authzMatrix), "\n")
	header := strings.Fields(lines[0])
	if !slices.Equal(header[:3], []string{"method", "path", "room"}) {
		t.Fatalf("matrix header starts %q, want method path room", header[:3])
	}
	cols := header[3:]
	for _, id := range identities {
		if !slices.Contains(cols, id.name) {
			t.Errorf("identity %q has no column in authzMatrix: add it and a cell in every row", id.name)
		}
	}
	for _, c := range cols {
		if !slices.ContainsFunc(identities, func(id identity) bool { return id.name == c }) {
			t.Errorf("authzMatrix column %q is no identity", c)
		}
	}
	var rows []matrixRow
	seen := map[string]bool{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Errorf("matrix row %q: too short", l)
			continue
		}
		r := matrixRow{method: f[0], path: f[1], room: f[2], cells: map[string]expect{}}
		name := r.method + " " + r.path + " " + r.room
		if seen[name] {
			t.Errorf("matrix row %s twice", name)
		}
		seen[name] = true
		if r.room != "-" && r.room != "pub" && r.room != "priv" {
			t.Errorf("matrix row %s: room must be -, pub or priv", name)
		}
		for i, c := range cols {
			if 3+i >= len(f) {
				t.Errorf("matrix row %s has no cell for identity %q", name, c)
				continue
			}
			e, err := parseCell(f[3+i])
			if err != nil {
				t.Errorf("matrix row %s, identity %s: %v", name, c, err)
			}
			r.cells[c] = e
		}
		if len(f) > 3+len(cols) {
			t.Errorf("matrix row %s has %d cells for %d identities", name, len(f)-3, len(cols))
		}
		rows = append(rows, r)
	}
	if t.Failed() {
		t.FailNow()
	}
	return rows
}

// specRoutes returns "METHOD path" of every operation in openapi.yaml.
func specRoutes(t *testing.T) []string {
	t.Helper()
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(realsync.OpenAPI, &spec); err != nil {
		t.Fatal(err)
	}
	var out []string
	for path, item := range spec.Paths {
		for m := range item {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				out = append(out, strings.ToUpper(m)+" "+path)
			}
		}
	}
	slices.Sort(out)
	if len(out) < 20 {
		t.Fatalf("openapi.yaml has only %d operations: %v", len(out), out)
	}
	return out
}

// TestAuthzMatrixCoversSpec: every operation of openapi.yaml has its call
// and at least one row, and nothing in the tables names a route the spec
// does not have.
func TestAuthzMatrixCoversSpec(t *testing.T) {
	routes := specRoutes(t)
	rows := parseMatrix(t)
	inRows := map[string]bool{}
	for _, r := range rows {
		inRows[r.method+" "+r.path] = true
	}
	for _, rt := range routes {
		if !inRows[rt] {
			t.Errorf("route %s of openapi.yaml has no row in authzMatrix", rt)
		}
		if _, ok := routeCalls[rt]; !ok {
			t.Errorf("route %s of openapi.yaml has no entry in routeCalls", rt)
		}
	}
	for rt := range inRows {
		if !slices.Contains(routes, rt) {
			t.Errorf("authzMatrix has rows for %s, which openapi.yaml does not have", rt)
		}
	}
	for rt := range routeCalls {
		if !slices.Contains(routes, rt) {
			t.Errorf("routeCalls has %s, which openapi.yaml does not have", rt)
		}
	}
}

// matrixEnv is a server wired as cmd/realsyncd wires it (store, rooms,
// lobby, event hub, admin token, metrics) on one backend.
type matrixEnv struct {
	url   string
	store *store.Store
	auth  *api.Auth
	seq   int               // for unique modes
	keys  map[string]string // API keys by scope: read, write, admin
}

func newMatrixEnv(t *testing.T, b redistest.Backend) *matrixEnv {
	t.Helper()
	auth := &api.Auth{Secret: []byte(matrixSecret), GuestEnabled: true}
	keys, apiKeys := matrixKeys(t)
	e := newEnvAuth(t, b, auth, func(c *api.Config, st *store.Store, _ string) {
		c.APIKeys, c.AdminToken, c.Instances, c.DeadLetters = apiKeys, matrixAdminToken, st.Fleet().Instances, webhooks.NewDeadLetters(st.Base(), webhooks.Config{})
	})
	return &matrixEnv{url: e.url, store: e.store, auth: auth, keys: keys}
}

// matrixKeys makes one API key per scope, and the keys file that holds
// them.
func matrixKeys(t *testing.T) (map[string]string, *api.APIKeys) {
	t.Helper()
	keys := map[string]string{}
	var lines []string
	for name, scope := range map[string]rooms.Scope{"read": rooms.ScopeRead, "write": rooms.ScopeWrite, "admin": rooms.ScopeAdmin} {
		key, rec, err := api.NewAPIKey("matrix-"+name, scope)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = key
		lines = append(lines, rec.Line())
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := api.LoadAPIKeys(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return keys, loaded
}

// fixture is a room under test with a caller of every kind, and another
// room.
type fixture struct {
	room      string // the room under test
	otherRoom string // another public room, owned by other
	code      string // the room's invite code when private
	mode      string // of both rooms, used by no other fixture
	memberPID int
	ownerID   string // the owner's userId
	ticket    string // the owner's searching matchmaking ticket
	// Tokens of the callers.
	owner, member, kicked, left, guest, other, banned string
}

// answer is a response, its body read unless it is an open stream.
type answer struct {
	status int
	ctype  string
	body   []byte
}

func (a answer) code() string {
	var p struct{ Code string }
	json.Unmarshal(a.body, &p)
	return p.Code
}

// send makes one request; cred puts the caller's credential on it. A
// stream answered 200 is closed as soon as its headers arrived.
// With firstData, the first data line of a stream is read (a.body).
func (m *matrixEnv) send(t *testing.T, method, path string, body any, ctype string, stream, firstData bool, cred func(*http.Request)) answer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, m.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		if ctype == "" {
			ctype = "application/json"
		}
		req.Header.Set("Content-Type", ctype)
	}
	cred(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, ctype: res.Header.Get("Content-Type")}
	if stream && res.StatusCode == http.StatusOK {
		if firstData {
			a.body = firstDataLine(t, res.Body)
		}
		return a // closed by cancel
	}
	if a.body, err = io.ReadAll(res.Body); err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return a
}

// must makes a set-up request with token and requires status.
func (m *matrixEnv) must(t *testing.T, method, path, token string, body any, status int) []byte {
	t.Helper()
	a := m.send(t, method, path, body, "", false, false, func(r *http.Request) { bearerOf(token, r) })
	if a.status != status {
		t.Fatalf("set-up %s %s: %d, want %d: %s", method, path, a.status, status, a.body)
	}
	return a.body
}

// streamToken fetches a stream token with the identity token from route
// (POST /v1/rooms/{roomId}/stream-token or /v1/lobby/stream-token).
func (m *matrixEnv) streamToken(t *testing.T, identity, route string) string {
	t.Helper()
	var st struct{ Token string }
	json.Unmarshal(m.must(t, "POST", route, identity, nil, 201), &st)
	if st.Token == "" {
		t.Fatalf("set-up: no stream token from %s", route)
	}
	return st.Token
}

func (m *matrixEnv) token(t *testing.T, name string) (token, userID string) {
	t.Helper()
	g, err := m.auth.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	return g.Token, g.UserId
}

// fixture makes a room (private or public, statePolicy owner, 8 seats,
// state {"score":0}) owned by a new user, with a member (player 2), a
// kicked player, a player who left, a player kicked with a ban, a guest in
// no room, and the owner of another room: seven new users, so per-user quotas never bite.
func (m *matrixEnv) fixture(t *testing.T, private bool) *fixture {
	t.Helper()
	m.seq++
	f := &fixture{mode: fmt.Sprintf("fx%d", m.seq)}
	f.owner, f.ownerID = m.token(t, "owner")
	f.member, _ = m.token(t, "member")
	f.kicked, _ = m.token(t, "kicked")
	f.left, _ = m.token(t, "left")
	f.guest, _ = m.token(t, "guest")
	f.other, _ = m.token(t, "other")
	f.banned, _ = m.token(t, "banned")
	vis := "public"
	if private {
		vis = "private"
	}
	var created struct {
		Room struct {
			ID         string `json:"id"`
			InviteCode string `json:"inviteCode"`
		} `json:"room"`
	}
	json.Unmarshal(m.must(t, "POST", "/v1/rooms", f.owner, map[string]any{"name": "Room", "mode": f.mode, "region": "eu",
		"visibility": vis, "state": map[string]any{"score": 0}, "statePolicy": "owner"}, 201), &created)
	f.room, f.code = created.Room.ID, created.Room.InviteCode
	var tk struct{ Ticket struct{ TicketID string } }
	json.Unmarshal(m.must(t, "POST", "/v1/matchmaking/tickets", f.owner, map[string]any{"mode": f.mode, "regions": []string{"eu"}}, 201), &tk)
	f.ticket = tk.Ticket.TicketID
	if private == (f.code == "") {
		t.Fatalf("set-up: room visibility %s with invite code %q", vis, f.code)
	}
	join := func(token string) int {
		var j struct{ PlayerID int }
		if private {
			json.Unmarshal(m.must(t, "POST", "/v1/rooms/join-by-code", token, map[string]any{"inviteCode": f.code}, 200), &j)
		} else {
			json.Unmarshal(m.must(t, "POST", "/v1/rooms/"+f.room+"/join", token, nil, 200), &j)
		}
		return j.PlayerID
	}
	f.memberPID = join(f.member)
	kickedPID := join(f.kicked)
	m.must(t, "DELETE", "/v1/rooms/"+f.room+"/players/"+strconv.Itoa(kickedPID), f.owner, nil, 204)
	join(f.left)
	m.must(t, "POST", "/v1/rooms/"+f.room+"/leave", f.left, nil, 204)
	bannedPID := join(f.banned)
	m.must(t, "DELETE", "/v1/rooms/"+f.room+"/players/"+strconv.Itoa(bannedPID)+"?ban=true", f.owner, nil, 204)
	json.Unmarshal(m.must(t, "POST", "/v1/rooms", f.other, map[string]any{"name": "Other", "mode": f.mode, "region": "eu"}, 201), &created)
	f.otherRoom = created.Room.ID
	if f.memberPID != 2 || f.room == "" || f.otherRoom == "" {
		t.Fatalf("set-up: member is player %d, rooms %q %q", f.memberPID, f.room, f.otherRoom)
	}
	return f
}

// snapshot is everything a refused call must leave as it was: both
// fixture rooms as the store holds them (all fields, players, state) and
// the lobby's counts.
type snapshot struct {
	Room, OtherRoom roomSnap
	Stats           lobby.Stats
}

type roomSnap struct {
	Room  rooms.Room
	State rooms.State
	Err   string
}

func (m *matrixEnv) snapshot(t *testing.T, f *fixture) snapshot {
	t.Helper()
	ctx := context.Background()
	read := func(id string) roomSnap {
		r, st, err := m.store.Get(ctx, id, true)
		s := roomSnap{Room: r, State: st}
		if err != nil {
			s.Err = err.Error()
		}
		return s
	}
	stats, err := m.store.Listing().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{Room: read(f.room), OtherRoom: read(f.otherRoom), Stats: stats}
}

// unknownRoom is an id of the fixture room's shard that was never issued.
func unknownRoom(f *fixture) string { return f.room[:2] + "zzzzzzzzzzzzzz" }

// TestAuthzMatrix runs every cell of authzMatrix against a real server:
// every row on standalone Redis, and each row on one of the Cluster and
// the embedded store too, in turn within each room kind (each runs half
// of the public rooms' rows and half of the private rooms', the half the
// other does not). The store's part (its scripts' refusals: not found,
// not a member, banned; a refused call changing nothing) runs the same
// scripts on every backend, where the backends differ in where keys live
// and which Lua runs them, which the store's own suites test on each.
// Every row on every backend took 36 s of CPU (the embedded store half of
// it), the api package's largest share.
func TestAuthzMatrix(t *testing.T) {
	rows := parseMatrix(t)
	for bi, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			m := newMatrixEnv(t, b)
			kind := map[string]int{} // rows of each room kind (pub, priv) so far
			for _, r := range rows {
				// alternate within a kind: the rows come in pub/priv pairs,
				// and alternating over all of them gave Cluster the public
				// rooms and the embedded store the private ones
				k := kind[r.room]
				kind[r.room]++
				if bi > 0 && k%2 != (bi-1)%2 {
					continue // the other of Cluster and embedded runs it
				}
				c, ok := routeCalls[r.method+" "+r.path]
				if !ok {
					t.Fatalf("no routeCalls entry for %s %s", r.method, r.path)
				}
				t.Run(r.method+" "+r.path+" "+r.room, func(t *testing.T) {
					shared := m.fixture(t, r.room == "priv")
					for _, id := range identities {
						t.Run(id.name, func(t *testing.T) { m.cell(t, r, c, id, r.cells[id.name], shared) })
					}
				})
			}
		})
	}
}

// cell runs one cell: the call as identity id, on shared or, when a
// success consumes the fixture, on a fresh one.
func (m *matrixEnv) cell(t *testing.T, r matrixRow, c call, id identity, want expect, shared *fixture) {
	f := shared
	refused := want.status >= 400
	if c.consumes && !refused {
		f = m.fixture(t, r.room == "priv")
	}
	cred := func(req *http.Request) { id.cred(t, m, f, req) }
	path, body := c.req(m, f, f.room)
	var before snapshot
	if refused {
		before = m.snapshot(t, f)
	}
	a := m.send(t, r.method, path, body, c.ctype, c.stream, c.check != nil && !refused, cred)
	if a.status != want.status || a.code() != want.code {
		t.Errorf("%s %s as %s: got %d %s, want %s: %s", r.method, path, id.name, a.status, a.code(), want, a.body)
	}
	switch {
	case refused:
		if !strings.HasPrefix(a.ctype, "application/problem+json") {
			t.Errorf("refusal's Content-Type %q, want application/problem+json", a.ctype)
		}
		if after := m.snapshot(t, f); !reflect.DeepEqual(before, after) {
			t.Errorf("a refused call changed something:\nbefore %+v\nafter  %+v", before, after)
		}
	case c.stream && !strings.HasPrefix(a.ctype, "text/event-stream"):
		t.Errorf("stream's Content-Type %q, want text/event-stream", a.ctype)
	case c.check != nil && a.status == want.status:
		if err := c.check(f, r.room == "priv", a.body); err != nil {
			t.Errorf("%s %s as %s: %v", r.method, path, id.name, err)
		}
	}
	// Not found must look exactly like a room that never existed.
	if want.code == "ROOM_NOT_FOUND" && strings.Contains(r.path, "{roomId}") {
		upath, ubody := c.req(m, f, unknownRoom(f))
		u := m.send(t, r.method, upath, ubody, c.ctype, c.stream, false, cred)
		if u.status != a.status || !bytes.Equal(u.body, a.body) || u.ctype != a.ctype {
			t.Errorf("the answer for this room differs from a room never issued's, revealing it exists:\nthis    %d %s\nunknown %d %s",
				a.status, a.body, u.status, u.body)
		}
	}
}

// TestAuthzOddPaths: spellings of routes that a router or proxy might
// read differently (doubled or trailing slashes, dot segments, encoded
// slashes, case) never reach a handler without the credential the route
// needs: each is refused as written here, whatever the token. Sent raw, so
// no client cleans the path first. ROOM stands for the fixture's (private)
// room id.
func TestAuthzOddPaths(t *testing.T) {
	tests := []struct {
		path                      string
		anon, owner, guest, admin string
	}{
		{"//v1/me/rooms", "404:NOT_FOUND", "404:NOT_FOUND", "404:NOT_FOUND", "404:NOT_FOUND"},
		{"/v1//me/rooms", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/me/rooms/", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/./me/rooms", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/V1/me/rooms", "404:NOT_FOUND", "404:NOT_FOUND", "404:NOT_FOUND", "404:NOT_FOUND"},
		{"/v1/auth/guest/../../v1/me/rooms", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/auth/guest/..%2F..%2Fme/rooms", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/admin/../me/rooms", "U", "AR", "AR", "404:NOT_FOUND"},
		{"/v1/admin/..%2Fme/rooms", "U", "AR", "AR", "404:NOT_FOUND"},
		{"/v1/admin/../rooms/ROOM", "U", "AR", "AR", "404:NOT_FOUND"},
		{"/v1/admin/instances/", "U", "AR", "AR", "404:NOT_FOUND"},
		{"/v1/admin//instances", "U", "AR", "AR", "404:NOT_FOUND"},
		{"//v1/admin/instances", "404:NOT_FOUND", "404:NOT_FOUND", "404:NOT_FOUND", "404:NOT_FOUND"},
		{"/v1/ADMIN/instances", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/rooms/ROOM%2Fstate", "U", "NF", "NF", "U"},
		{"/v1/rooms/ROOM/state/", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/rooms/ROOM/events/..%2Fstate", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
		{"/v1/rooms/ROOM/state%3Fx=/events", "U", "404:NOT_FOUND", "404:NOT_FOUND", "U"},
	}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		m := newMatrixEnv(t, b)
		f := m.fixture(t, true)
		host := strings.TrimPrefix(m.url, "http://")
		for _, tc := range tests {
			path := strings.ReplaceAll(tc.path, "ROOM", f.room)
			for _, c := range []struct{ who, token, cell string }{
				{"anon", "", tc.anon}, {"owner", f.owner, tc.owner}, {"guest", f.guest, tc.guest}, {"admin", matrixAdminToken, tc.admin},
			} {
				want, err := parseCell(c.cell)
				if err != nil {
					t.Fatalf("%s as %s: %v", tc.path, c.who, err)
				}
				status, code := rawGet(t, host, path, c.token)
				if status != want.status || code != want.code {
					t.Errorf("GET %s as %s: got %d %s, want %s", tc.path, c.who, status, code, want)
				}
			}
		}
	})
}

// rawGet sends GET path exactly as written, with token as a bearer token
// ("" none), and returns the status and problem code.
func rawGet(t *testing.T, host, path, token string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: matrix\r\n%sConnection: close\r\n\r\n", path, auth)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, answer{body: body}.code()
}

// listsRoomIfPublic checks a list of rooms ({"rooms":[...]}, a page or a
// lobby's first event) of the fixture's mode: its room is in it when
// public, never when private.
func listsRoomIfPublic(f *fixture, private bool, body []byte) error {
	var l struct{ Rooms []struct{ ID string } }
	if err := json.Unmarshal(body, &l); err != nil {
		return fmt.Errorf("%v: %s", err, body)
	}
	listed := slices.ContainsFunc(l.Rooms, func(r struct{ ID string }) bool { return r.ID == f.room })
	if listed == private {
		return fmt.Errorf("room listed %v, private %v: %s", listed, private, body)
	}
	return nil
}

// firstDataLine reads a stream up to its first data line and returns the
// line's data.
func firstDataLine(t *testing.T, r io.Reader) []byte {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return []byte(d)
		}
	}
	t.Errorf("stream ended without a data line: %v", sc.Err())
	return nil
}

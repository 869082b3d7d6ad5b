package api

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/internal/webhook/deadletter"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
)

// Errors of the HTTP layer itself; domain errors come from rooms and lobby.
var (
	errMalformed        = errors.New("malformed request")
	errUnsupportedMedia = errors.New("unsupported media type")
	// errContentCoding: a body's Content-Encoding is not identity; its 415
	// says Accept-Encoding: identity (RFC 9110 15.5.16)
	errContentCoding    = fmt.Errorf("unsupported content coding: %w", errUnsupportedMedia)
	errUnauthenticated  = errors.New("unauthenticated")
	errGuestDisabled    = errors.New("guest tokens are disabled")
	errRouteNotFound    = errors.New("no such route")
	errMethodNotAllowed = errors.New("method not allowed")
	errAdminRequired    = errors.New("admin credential required")
	// errStreamTokenRequired: an identity token in an event stream's URL,
	// or a stream token used for another stream or as a bearer token.
	errStreamTokenRequired = errors.New("stream token required")
	// errRefreshNotAllowed: a studio's token is renewed by the studio's login.
	errRefreshNotAllowed = errors.New("refresh not allowed")
	errRequestTimeout    = errors.New("request timeout")
)

// problem is one row of the error table.
type problem struct {
	err    error
	status int
	code   oapi.ProblemCode
	title  string
}

// problems maps every error a client may see to its status and code. The
// first row whose error matches (errors.Is) wins. Anything else is a 500
// whose detail says nothing of the cause (it is logged instead).
var problems = []problem{
	{errMalformed, 400, "MALFORMED_REQUEST", "Malformed request"},
	{players.ErrInvalidPlatform, 400, "INVALID_PLATFORM", "Invalid platform"},
	{players.ErrInvalidUserIDs, 400, "INVALID_USER_IDS", "Invalid user ids"},
	{players.ErrSessionExists, 409, "SESSION_EXISTS", "A session on this platform is open"},
	{errUnauthenticated, 401, "UNAUTHENTICATED", "Authentication required"},
	{errStreamTokenRequired, 401, "STREAM_TOKEN_REQUIRED", "Stream token required"},
	{rooms.ErrNotOwner, 403, "NOT_OWNER", "Only the owner may do this"},
	{rooms.ErrNotMember, 403, "NOT_A_MEMBER", "Only members may do this"},
	{rooms.ErrStateKeyForbidden, 403, "STATE_KEY_FORBIDDEN", "State key forbidden"},
	{errGuestDisabled, 403, "GUEST_AUTH_DISABLED", "Guest tokens are disabled"},
	{errAdminRequired, 403, "ADMIN_REQUIRED", "Admin credential required"},
	{rooms.ErrBanned, 403, "BANNED", "Banned from this room"},
	{rooms.ErrScopeRequired, 403, "SCOPE_REQUIRED", "Scope required"},
	{errRefreshNotAllowed, 403, "REFRESH_NOT_ALLOWED", "Refresh not allowed"},
	{rooms.ErrRoomNotFound, 404, "ROOM_NOT_FOUND", "Room not found"},
	{rooms.ErrPlayerNotFound, 404, "PLAYER_NOT_FOUND", "Player not found"},
	{rooms.ErrNoMatch, 404, "NO_MATCH", "No room matches"},
	{deadletter.ErrNotFound, 404, "DEAD_LETTER_NOT_FOUND", "Dead letter not found"},
	{players.ErrNotInParty, 404, "PARTY_NOT_FOUND", "Not in a party"},
	{errRouteNotFound, 404, "NOT_FOUND", "Not found"},
	{errMethodNotAllowed, 405, "METHOD_NOT_ALLOWED", "Method not allowed"},
	{errRequestTimeout, 408, "REQUEST_TIMEOUT", "Request timeout"},
	{rooms.ErrRoomFull, 409, "ROOM_FULL", "Room is full"},
	{rooms.ErrUserBanned, 409, "USER_BANNED", "A user named is banned from this room"},
	{rooms.ErrNotJoinable, 409, "ROOM_NOT_JOINABLE", "Room is not joinable"},
	{rooms.ErrInvalidTransition, 409, "INVALID_TRANSITION", "Status change not allowed"},
	{rooms.ErrRoomFinished, 409, "ROOM_FINISHED", "Room is finished"},
	{rooms.ErrOwnedRoomsLimit, 409, "OWNED_ROOMS_LIMIT", "Too many rooms owned at once"},
	{rooms.ErrJoinedRoomsLimit, 409, "JOINED_ROOMS_LIMIT", "In too many rooms at once"},
	{errKeyInUse, 409, "IDEMPOTENCY_KEY_IN_USE", "Idempotency key in use"},
	{matchmaking.ErrTicketNotFound, 404, "TICKET_NOT_FOUND", "Ticket not found"},
	{matchmaking.ErrTicketActive, 409, "TICKET_ACTIVE", "An active ticket exists"},
	{matchmaking.ErrMemberQueuedInParty, 409, "MEMBER_QUEUED_IN_PARTY", "Queued in a party's ticket"},
	{matchmaking.ErrPartyConsent, 403, "PARTY_CONSENT_REQUIRED", "A party member has not consented"},
	{matchmaking.ErrTicketMatched, 409, "TICKET_MATCHED", "Ticket already matched"},
	{matchmaking.ErrQueueFull, 409, "QUEUE_FULL", "Matchmaking queue full"},
	{rooms.ErrInboxFull, 409, "INBOX_FULL", "Recipient's inbox is full"},
	{deadletter.ErrBacklogFull, 409, "WEBHOOK_BACKLOG_FULL", "Webhook endpoint's backlog full"},
	{deadletter.ErrEndpointRemoved, 409, "WEBHOOK_ENDPOINT_REMOVED", "Webhook endpoint no longer configured"},
	{rooms.ErrVersionMismatch, 412, "VERSION_MISMATCH", "State version mismatch"},
	{rooms.ErrTooLarge, 413, "PAYLOAD_TOO_LARGE", "Payload too large"},
	{rooms.ErrTooManyStreams, 429, "TOO_MANY_STREAMS", "Too many event streams"},
	{errRateLimited, 429, "RATE_LIMITED", "Too many requests"},
	{errRoomRateLimited, 429, "ROOM_RATE_LIMITED", "Too many requests to this room"},
	{errStreamOpensLimited, 429, "STREAM_OPENS_LIMITED", "Too many event streams opened"},
	{errCodeGuessesLimited, 429, "CODE_GUESSES_LIMITED", "Too many wrong invite codes"},
	{errGuestsLimited, 429, "GUESTS_LIMITED", "Too many guest accounts"},
	{errKeysLimited, 429, "IDEMPOTENCY_KEYS_LIMITED", "Idempotency keys' budget spent"},
	{rooms.ErrStreamLimit, 429, "STREAM_LIMIT", "Too many open event streams"},
	{errUnsupportedMedia, 415, "UNSUPPORTED_MEDIA_TYPE", "Unsupported media type"},
	{rooms.ErrValidation, 422, "VALIDATION_FAILED", "Validation failed"},
	{rooms.ErrKeyReused, 422, "IDEMPOTENCY_KEY_REUSED", "Idempotency key reused"},
	{errOverloaded, 503, "OVERLOADED", "Overloaded"},
	{rooms.ErrUnavailable, 503, "STORE_UNAVAILABLE", "Store unavailable"},
}

// retryAfters is the Retry-After of the answers that ask the client to
// come back, by code: every 503 (the store did not answer, the instance is
// overloaded, shutting down or not connected yet: 1 to 3 s, jittered so
// that the refused clients do not come back all at once), the stream
// limits (streamRetryAfter) and a key whose request still runs (1 s). One
// an error knows wins (a RetryAfter method: a rate limit's window, the
// idempotency keys' budget, SESSION_EXISTS's open session's lease's time
// left; retryIn). Event streams refused for want of the store are no 503
// but a 200 with a retry line (Server.stream): EventSource gives up on any
// other status.
var retryAfters = map[oapi.ProblemCode]func() string{
	"OVERLOADED":             jitteredRetryAfter,
	"STORE_UNAVAILABLE":      jitteredRetryAfter,
	"STREAM_LIMIT":           func() string { return strconv.Itoa(streamRetryAfter) },
	"TOO_MANY_STREAMS":       func() string { return strconv.Itoa(streamRetryAfter) },
	"IDEMPOTENCY_KEY_IN_USE": func() string { return "1" },
}

// retryIn is an error whose client may ask again after wait (its
// Retry-After, rounded up to whole seconds by retryAfter).
type retryIn struct {
	error
	wait time.Duration
}

func (e retryIn) Unwrap() error { return e.error }

// RetryAfter is never 0 (its Retry-After is at least 1 s), which an error
// says when it does not know the wait (players.SessionExistsError from
// an older release's session script: no Retry-After then).
func (e retryIn) RetryAfter() time.Duration { return max(e.wait, time.Nanosecond) }

// jitteredRetryAfter is a Retry-After, in seconds, of 1 to 3.
func jitteredRetryAfter() string { return strconv.Itoa(1 + rand.IntN(3)) }

// streamRetryAfter is the Retry-After, in seconds, of a stream refused for
// the streams a user or a player already holds: a place frees when a
// stream ends, or when a dead one's lease lapses (REALSYNC_PRESENCE_TTL).
const streamRetryAfter = 5

// writeError answers err as problem+json; a context's end is no internal
// error (writeContextEnded).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if contextEnded(err) {
		s.writeContextEnded(w, r, err) // a hang-up (499) or a timeout (503)
		return
	}
	p, ok := lookup(err)
	if !ok {
		s.log.Error("internal error", methodAttr(r.Method), pathAttr(r.URL.Path), "err", err, "request_id", requestID(r.Context()))
		writeProblem(w, oapi.Problem{Type: problemType("INTERNAL"), Title: "Internal error", Status: 500,
			Code: "INTERNAL", Detail: "Internal error."})
		return
	}
	if p.code == "STORE_UNAVAILABLE" {
		s.log.Warn("store unavailable", pathAttr(r.URL.Path), "err", err, "request_id", requestID(r.Context()))
	}
	if p.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="realsync"`)
	}
	if errors.Is(err, errContentCoding) {
		w.Header().Set("Accept-Encoding", "identity")
	}
	var until interface{ RetryAfter() time.Duration } // what the error knows of the wait (retryIn, players.SessionExistsError)
	if errors.As(err, &until) && until.RetryAfter() > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(until.RetryAfter())))
	} else if retry := retryAfters[p.code]; retry != nil {
		w.Header().Set("Retry-After", retry())
	}
	body := oapi.Problem{Type: problemType(string(p.code)), Title: p.title, Status: p.status,
		Code: p.code, Detail: shown(detail(p, err))}
	var verr *rooms.ValidationError
	if errors.As(err, &verr) {
		fields := make([]oapi.FieldError, len(verr.Fields))
		for i, f := range verr.Fields {
			fields[i] = oapi.FieldError{Field: shown(f.Field), Message: shown(f.Message)}
		}
		body.Errors = &fields
	}
	writeProblem(w, body)
}

// shown is an error's text as a problem carries it: what the client sent
// and an error repeats (a field named by an unknown key, a JSON pointer)
// has its control and bidirectional formatting characters written as
// \uXXXX, so a developer console or a game's error dialog showing the
// detail shows what came, not text reordered by a U+202E or cut by a
// line break (a reviewer's find).
func shown(s string) string {
	if !strings.ContainsFunc(s, rooms.NameControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if rooms.NameControl(r) {
			fmt.Fprintf(&b, "\\u%04X", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func lookup(err error) (problem, bool) {
	for _, p := range problems {
		if errors.Is(err, p.err) {
			return p, true
		}
	}
	return problem{}, false
}

// detail is the error's own text for client errors; for 503 it hides the
// transport details.
func detail(p problem, err error) string {
	if p.err == errOverloaded {
		return "The instance has as many requests in flight as it takes; retry later."
	}
	if p.status == http.StatusServiceUnavailable {
		return "The store cannot be reached; retry later."
	}
	msg := strings.TrimSuffix(err.Error(), ": "+p.err.Error())
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}

func problemType(code string) string {
	return "https://realsync.dev/problems/" + strings.ReplaceAll(strings.ToLower(code), "_", "-")
}

func writeProblem(w http.ResponseWriter, p oapi.Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	jsonout.NewEncoder(w).Encode(p)
}

// writeJSON answers v with status: the body is built in a pooled buffer
// (the hot answers without reflection, see appendHot; the rest by
// encoding/json, a newline after either) and sent with its Content-Length
// in one write, rather than encoded piecewise into the response, chunked
// once past net/http's 2 KiB buffer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBuilt(w, status, func(b []byte) []byte { return appendJSON(b, v) })
}

// appendJSON appends v's JSON and a newline to b.
func appendJSON(b []byte, v any) []byte {
	b, ok := appendHot(b, v)
	if ok {
		return append(b, '\n')
	}
	out := bytes.NewBuffer(b)
	if err := jsonout.NewEncoder(out).Encode(v); err != nil {
		// a value encoding/json cannot write is a bug of ours
		panic(fmt.Sprintf("api: encoding a %T answer: %v", v, err))
	}
	return out.Bytes()
}

// writeBuilt answers with status and the JSON body build appends to a
// pooled buffer (a newline after the value, as writeJSON's), sent with its
// Content-Length in one write.
func writeBuilt(w http.ResponseWriter, status int, build func([]byte) []byte) {
	buf := bodyBuffers.Get().(*[]byte)
	b := build((*buf)[:0])
	writeBody(w, status, b)
	if cap(b) <= maxPooledBody {
		*buf = b
		bodyBuffers.Put(buf)
	}
}

// writeBody answers with status and b, a JSON body.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}

// bodyBuffers hold answer bodies being built (writeJSON); a buffer that
// grew past maxPooledBody is left to the collector.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledBody = 64 << 10

// paramError replaces oapi-codegen's default handler, which would echo the
// binding error's text with a 400: a query parameter of the wrong form is
// a validation failure naming the parameter.
func (s *Server) paramError(w http.ResponseWriter, r *http.Request, err error) {
	if !s.limitMalformed(w, r) {
		return
	}
	if perr := playersParamError(err); perr != nil {
		s.writeError(w, r, perr)
		return
	}
	var inv *oapi.InvalidParamFormatError
	if errors.As(err, &inv) && pathNotFound[inv.ParamName] != nil {
		s.writeError(w, r, pathNotFound[inv.ParamName])
		return
	}
	s.writeError(w, r, paramInvalid(err, r.URL.Query()))
}

// pathNotFound answers an id inside a path that the router refused, which
// can only be an empty one (any other string binds): like any id never
// issued, it names nothing, and its route's 404 says so (the contract's
// "anything else is 404"). An empty last segment (a player's, a ticket's)
// is no route at all (404 NOT_FOUND); a user id is validated (422), as its
// contract says.
var pathNotFound = map[string]error{
	"roomId":       rooms.ErrRoomNotFound,
	"deadLetterId": deadletter.ErrNotFound,
}

// emptyRule is what a bound query parameter given empty (joinable=,
// limit=), which the generated binding refuses, is told. The lobby's
// string parameters (status, mode, region, sort, cursor) given empty are
// taken as absent, as they always were: a client sending "" for "any"
// (an SDK's default string) is served.
const emptyRule = "must not be empty: leave the parameter out for its default"

// paramInvalid is the validation failure of a parameter the generated
// router refused, naming it (a header's too: two Last-Event-ID headers are
// not a bad query). The router's three kinds of error are named; any
// other is the query's. A query parameter given twice is told as a
// header given twice is (the router reads it as a wrong form).
func paramInvalid(err error, query url.Values) error {
	var (
		inv  *oapi.InvalidParamFormatError
		many *oapi.TooManyValuesForParamError
		req  *oapi.RequiredParamError
	)
	switch {
	case errors.As(err, &inv) && len(query[inv.ParamName]) > 1:
		return rooms.Invalid(inv.ParamName, "must be sent once")
	case errors.As(err, &inv) && len(query[inv.ParamName]) == 1 && query[inv.ParamName][0] == "":
		return rooms.Invalid(inv.ParamName, emptyRule) // joinable=, limit=
	case errors.As(err, &inv):
		return rooms.Invalid(inv.ParamName, "has the wrong form")
	case errors.As(err, &many):
		return rooms.Invalid(many.ParamName, "must be sent once")
	case errors.As(err, &req):
		return rooms.Invalid(req.ParamName, "is required")
	}
	return rooms.Invalid("query", "is invalid")
}

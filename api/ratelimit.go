package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/rooms"
)

// RateLimiter counts requests on counters shared by every instance;
// store/ratelimit implements it on Redis.
type RateLimiter interface {
	// Start applies mode to every check and returns one decision per
	// check, in order; checks are independent of each other. When it
	// decided every check without a round trip (a lease's requests, a
	// check with no counter) finish is nil; otherwise finish, to be called
	// exactly once, decides the rest in one round trip and returns every
	// decision (errors: the store's).
	Start(mode limits.Mode, checks []limits.Check) (decisions []limits.Decision, finish func(context.Context) ([]limits.Decision, error))
}

// limit applies mode to checks on l, waiting for the round trip if one is
// needed: Start, then its finish.
func limit(ctx context.Context, l RateLimiter, mode limits.Mode, checks []limits.Check) ([]limits.Decision, error) {
	d, finish := l.Start(mode, checks)
	if finish == nil {
		return d, nil
	}
	return finish(ctx)
}

// The 429 answers, one code per kind of limit.
var (
	errRateLimited        = fmt.Errorf("rate limited")
	errRoomRateLimited    = fmt.Errorf("room rate limited")
	errStreamOpensLimited = fmt.Errorf("stream opens limited")
	errCodeGuessesLimited = fmt.Errorf("code guesses limited")
	errGuestsLimited      = fmt.Errorf("guest accounts limited")
)

// rateLimits is the server's rate limiting: nil limiter, no limits.
type rateLimits struct {
	limiter RateLimiter
	set     limits.Set
	// pausedUntil (Unix ns): after a failed check, requests go through
	// unchecked for limiterPause, so an outage costs one limiter timeout
	// per pause rather than one per request, on top of the request's own.
	pausedUntil *atomic.Int64
}

const (
	// limiterTimeout bounds the wait for a check: a round trip is well
	// under a millisecond; past this much the request goes through
	// unchecked. 1 s, not less: a machine under load answers checks in
	// hundreds of ms, and a shorter bound switched the limits off exactly
	// then (at 300 ms, once go-redis honoured it, a loaded CI run let 11
	// of 40 auth requests through a limit of 4).
	limiterTimeout = time.Second
	limiterPause   = time.Second
	// limiterCallTimeout bounds a check's call to Redis, which goes on
	// past limiterTimeout unwaited for (take): a reply timeout and more
	limiterCallTimeout = 3 * time.Second
)

// errLimiterSlow is a check not answered within limiterTimeout.
var errLimiterSlow = errors.New("rate limit check not answered within " + limiterTimeout.String())

// take counts r on checks. Checks decided without a round trip (leases)
// are answered at once; otherwise take waits limiterTimeout for the
// answer at most (errLimiterSlow). The check itself is not cut then: it goes on, bounded
// by limiterCallTimeout (and the store's own per-call deadline), and its
// answer is dropped. A call cut while its reply is on its way closes its
// pooled connection (go-redis cannot reuse one whose reply is still to
// come): with the check cut at limiterTimeout, each stall of Redis past
// it (a DEBUG SLEEP 0.5 at 64 requests in flight) closed ~28 pooled
// connections, dialed again at once, on every instance. Not the
// request's context either: a client that hangs up cancels it, and a
// cancelled check would pause the limits for everyone (a stranger could
// switch them off by dropping connections).
func (s *Server) take(r *http.Request, checks []limits.Check) ([]limits.Decision, error) {
	local, finish := s.limits.limiter.Start(limits.Take, checks)
	if finish == nil {
		return local, nil
	}
	type answer struct {
		decisions []limits.Decision
		err       error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), limiterCallTimeout)
		defer cancel()
		d, err := finish(ctx)
		done <- answer{d, err}
	}()
	t := time.NewTimer(limiterTimeout)
	defer t.Stop()
	select {
	case a := <-done:
		return a.decisions, a.err
	case <-t.C:
		return nil, errLimiterSlow
	}
}

func (rl rateLimits) on() bool { return rl.limiter != nil && !rl.set.Off }

// rateLimit is the handler middleware (it runs once the route is matched,
// after authentication) that counts each /v1 request on its route class's
// limits: the user's (when authenticated) and the client address's, plus
// the route's extra limit (routeExtras), all in one round trip. Over a
// limit it answers 429 with Retry-After and the RateLimit headers; under
// them it sends the RateLimit headers too (the numbers come with the same
// round trip, so they cost a few bytes, and let a client pace itself).
// A failed check lets the request through (the store's own errors answer
// for an outage), logged at debug.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.limits.on() {
			next.ServeHTTP(w, r)
			return
		}
		route := r.Method + " " + chi.RouteContext(r.Context()).RoutePattern()
		class, ok := routeClasses[route]
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		checks := s.checksOf(r, route, class, true)
		decisions, ok := s.count(w, r, checks)
		if routeExtras[route] == "guess" && decisions != nil {
			defer s.keepGuesses(r, checks, decisions) // also when refused here: a 429 is no wrong code
		}
		if routeExtras[route] == "opens" && !ok {
			// a stream another limit refused was not opened (a tester's
			// find: a client refused by the stream class's limit used
			// up its opens too, and waited on both)
			s.giveBack(r, allowed(checks, decisions, "opens"), "a stream open")
		}
		defer s.handBackRoomCounts(r) // the route's, and an invite's inbox (limitInbox)
		if ok {
			next.ServeHTTP(w, r)
		}
	})
}

// limitMalformed counts a request whose path, query or header parameters
// could not be read (the generated router answers those before the
// route's middlewares run) on its route's limits, as any other, but a
// room's (or inbox's): it is refused, and a refusal takes nothing from a
// room's budget (handBackRoomCounts); false when a limit refused it and
// the 429 was written.
func (s *Server) limitMalformed(w http.ResponseWriter, r *http.Request) bool {
	route := r.Method + " " + chi.RouteContext(r.Context()).RoutePattern()
	class, ok := routeClasses[route]
	if !s.limits.on() || !ok {
		return true
	}
	checks := s.checksOf(r, route, class, false)
	_, ok = s.count(w, r, checks)
	return ok
}

// checksOf lists a request's checks: the route's extra limit first (its
// code wins when several refuse; a room's or an inbox's only with
// rooms), then the class's per user and per address. Unauthenticated
// requests count per address only.
func (s *Server) checksOf(r *http.Request, route, class string, rooms bool) []limits.Check {
	u := userFrom(r.Context())
	user := u.ID
	if class == "direct" && u.Server {
		// a game's server (an API key) notifies and invites players at a
		// server's pace, not a chat's
		class = "write"
	}
	addr := clientAddr(r, s.trustedProxies)
	checks := make([]limits.Check, 0, 5)
	switch extra := routeExtras[route]; extra {
	case "opens":
		if user != "" {
			checks = append(checks, limits.Check{Name: extra, Scope: limits.User, Subject: user, Limit: s.limits.set.Get(extra, limits.User)})
		}
	case "guests":
		checks = append(checks, limits.Check{Name: extra, Scope: limits.IP, Subject: addr, Limit: s.limits.set.Get(extra, limits.IP)})
	case "guess":
		if user != "" {
			checks = append(checks, limits.Check{Name: extra, Scope: limits.User, Subject: user, Limit: s.limits.set.Get(extra, limits.User)})
		}
		checks = append(checks, limits.Check{Name: extra, Scope: limits.IP, Subject: addr, Limit: s.limits.set.Get(extra, limits.IP)})
	case "messages", "patches":
		if !rooms {
			break
		}
		// as the handler reads them: decoded (another spelling of the same
		// id, %61 for a, is the same room or inbox)
		if to := pathParam(r, "userId"); to != "" && pathParam(r, "roomId") == "" {
			checks = append(checks, s.inboxCheck(r, to)) // a direct message
			break
		}
		checks = append(checks, limits.Check{Name: extra, Scope: limits.Room, Subject: pathParam(r, "roomId"),
			Member: user, Limit: s.limits.set.Get(extra, limits.Room)})
	}
	if user != "" {
		checks = append(checks, limits.Check{Name: class, Scope: limits.User, Subject: user, Limit: s.limits.set.Get(class, limits.User)})
	}
	checks = append(checks, limits.Check{Name: class, Scope: limits.IP, Subject: addr, Limit: s.limits.set.Get(class, limits.IP)})
	// limits switched off one by one are no checks (and no headers)
	kept := checks[:0]
	for _, c := range checks {
		if !c.Limit.Zero() {
			kept = append(kept, c)
		}
	}
	return kept
}

// limitUnauthenticated counts a request whose credentials were refused on
// the client address's auth limit (a token guesser is an unauthenticated
// client): false when it answered 429.
func (s *Server) limitUnauthenticated(w http.ResponseWriter, r *http.Request) bool {
	if !s.limits.on() || (s.available != nil && !s.available()) {
		return true
	}
	c := limits.Check{Name: "auth", Scope: limits.IP, Subject: clientAddr(r, s.trustedProxies), Limit: s.limits.set.Get("auth", limits.IP)}
	if c.Limit.Zero() {
		return true
	}
	_, ok := s.count(w, r, []limits.Check{c})
	return ok
}

// count takes one request on checks and sets the RateLimit headers; false
// when a check refused it and the 429 was written. The decisions are nil
// when the check failed (the request goes through).
func (s *Server) count(w http.ResponseWriter, r *http.Request, checks []limits.Check) ([]limits.Decision, bool) {
	if len(checks) == 0 {
		return nil, true
	}
	now := time.Now().UnixNano()
	if now < s.limits.pausedUntil.Load() {
		return nil, true
	}
	decisions, err := s.take(r, checks)
	if err != nil {
		s.limits.pausedUntil.Store(now + int64(limiterPause))
		s.log.Debug("rate limit check failed; requests go through unchecked for a second", "err", err, "request_id", requestID(r.Context()))
		return nil, true
	}
	setRateLimitHeaders(w.Header(), checks, decisions)
	if x := exchangeFrom(r.Context()); x != nil {
		for i, c := range checks {
			if c.Scope == limits.Room && decisions[i].Allowed {
				x.roomCounts = append(x.roomCounts, c)
			}
		}
	}
	refused := -1
	var wait time.Duration
	for i, d := range decisions {
		if d.Allowed {
			continue
		}
		s.metrics.RateLimited(checks[i].Name, string(checks[i].Scope))
		if refused < 0 {
			refused = i
		}
		wait = max(wait, d.Retry)
	}
	if refused < 0 {
		return decisions, true
	}
	c := checks[refused]
	secs := retryAfter(wait)
	s.log.Debug("rate limited", "limit", c.Name, "scope", c.Scope, "retry_after", secs, "request_id", requestID(r.Context()))
	s.writeError(w, r, retryIn{fmt.Errorf("%s; retry in %d s: %w", refusal(c), secs, codeOf(c)), wait})
	return decisions, false
}

// keepGuesses, after a join-by-code was answered, hands the guess back
// unless the answer was 404: only wrong codes stay counted. That costs a
// second round trip on right codes (about once per game), none on wrong
// ones.
func (s *Server) keepGuesses(r *http.Request, checks []limits.Check, decisions []limits.Decision) {
	x := exchangeFrom(r.Context())
	if x == nil || x.status == http.StatusNotFound {
		return
	}
	s.giveBack(r, allowed(checks, decisions, "guess"), "a guess")
}

// allowed is the checks named name that decisions allowed.
func allowed(checks []limits.Check, decisions []limits.Decision, name string) []limits.Check {
	var out []limits.Check
	for i, c := range checks {
		if c.Name == name && i < len(decisions) && decisions[i].Allowed {
			out = append(out, c)
		}
	}
	return out
}

// giveBack hands counts of request r back to their limits (what names
// them for the log), within 2 s even when r's context ended. Best effort:
// a failure is logged at debug.
func (s *Server) giveBack(r *http.Request, checks []limits.Check, what string) {
	if len(checks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	if _, err := limit(ctx, s.limits.limiter, limits.Give, checks); err != nil {
		s.log.Debug("handing "+what+" back failed", "err", err, "request_id", requestID(r.Context()))
	}
}

// handBackRoomCounts, after a request that took a count on a room's (or an
// inbox's) limit was answered, hands the count back when the answer
// refused it: a 4xx, 429 included (another of its limits refused it).
// A refused request takes nothing from a room's budget (a replayed answer
// and a 5xx, whose write may have been made, keep their count): strangers (403 NOT_A_MEMBER, 404 for a private room), refused writes and
// a user over their own limits cannot starve the room's members. A
// request with an Idempotency-Key whose client hung up ran to its end
// and was answered all the same (recorded 499: exchange.recorded): its
// own answer decides, so a message sent keeps its count. A refusal costs
// a second round trip.
func (s *Server) handBackRoomCounts(r *http.Request) {
	x := exchangeFrom(r.Context())
	if x == nil || len(x.roomCounts) == 0 || x.status < 400 || x.status >= 500 {
		return
	}
	s.giveBack(r, x.roomCounts, "a room's count")
}

func codeOf(c limits.Check) error {
	switch {
	case c.Scope == limits.Room:
		return errRoomRateLimited
	case c.Name == "opens":
		return errStreamOpensLimited
	case c.Name == "guess":
		return errCodeGuessesLimited
	case c.Name == "guests":
		return errGuestsLimited
	}
	return errRateLimited
}

func refusal(c limits.Check) string {
	switch {
	case c.Scope == limits.Room && strings.HasPrefix(c.Subject, "@"):
		return "too many messages, invites and party tickets to this user (a sender may use half of their rate)"
	case c.Scope == limits.Room && strings.HasPrefix(c.Subject, "&"):
		return "too many messages, invites and party tickets to this user from the users they follow (a sender may use half of that rate)"
	case c.Scope == limits.Room:
		return "too many " + c.Name + " in this room (a member may use half of the room's rate)"
	case c.Name == "opens":
		return "too many event streams opened by this user"
	case c.Name == "guess" && c.Scope == limits.User:
		return "too many wrong invite codes from this user"
	case c.Name == "guess":
		return "too many wrong invite codes from this address"
	case c.Name == "guests":
		return "too many guest accounts made from this address"
	case c.Scope == limits.User:
		return "too many " + c.Name + " requests from this user"
	}
	return "too many " + c.Name + " requests from this address"
}

// retryAfter is a wait in whole seconds, at least 1 (Retry-After has no
// fractions, and 0 would invite an immediate retry).
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// setRateLimitHeaders sets RateLimit-Policy and RateLimit as in
// draft-ietf-httpapi-ratelimit-headers-10 (September 2025; unchanged in
// -11): one list member per check, named "<limit>.<scope>";
// RateLimit-Policy: "join.user";q=10;w=5 (q requests per w seconds: the
// burst and the time it takes to come back) and RateLimit:
// "join.user";r=9;t=1 (r requests left now, t seconds until the whole
// quota is back). r is at most q: an instance's lease (store/ratelimit)
// counts its spare requests beside the counter's, which refills meanwhile
// (a tester saw r=320 beside q=300).
func setRateLimitHeaders(h http.Header, checks []limits.Check, decisions []limits.Decision) {
	var buf [256]byte
	b := buf[:0]
	for i, c := range checks {
		if i > 0 {
			b = append(b, ", "...)
		}
		q, w := quota(c.Limit)
		b = appendLimitName(b, c)
		b = strconv.AppendInt(append(b, ";q="...), int64(q), 10)
		b = strconv.AppendInt(append(b, ";w="...), int64(w), 10)
	}
	h["Ratelimit-Policy"] = []string{string(b)}
	b = b[:0]
	for i, c := range checks {
		if i > 0 {
			b = append(b, ", "...)
		}
		q, _ := quota(c.Limit)
		b = appendLimitName(b, c)
		b = strconv.AppendInt(append(b, ";r="...), int64(min(decisions[i].Remaining, q)), 10)
		b = strconv.AppendInt(append(b, ";t="...), int64(math.Ceil(decisions[i].Reset.Seconds())), 10)
	}
	h["Ratelimit"] = []string{string(b)}
}

// appendLimitName appends c's name in the headers: "<limit>.<scope>",
// quoted.
func appendLimitName(b []byte, c limits.Check) []byte {
	b = append(append(append(b, '"'), c.Name...), '.')
	return append(append(b, c.Scope...), '"')
}

// quota describes a GCRA limit as a quota per window: the burst per the
// time the burst takes to come back, or, when that is under a second, the
// requests per second.
func quota(l limits.Limit) (q, w int) {
	refill := l.Interval() * time.Duration(l.Burst)
	if refill < time.Second {
		return int(time.Second / l.Interval()), 1
	}
	return l.Burst, int(math.Round(refill.Seconds()))
}

// pathParam is the route parameter name of r, percent-decoded as the
// generated router hands it to the handler ("" when absent or malformed).
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// limitParty counts a ticket's party as invites of the caller's to each
// member (a match tells every member: match_found in their personal log,
// kept like a direct message): each member on the member's inbox, and on
// the caller's and the address' direct limits (at most the caller's
// burst of members: a larger party could never queue), so naming users,
// real or made up, writes no more to personal logs than direct messages
// may. A refused party takes nothing from the direct limits (what it
// took is handed back, as its inboxes' counts are by handBackRoomCounts),
// so a client that waits the Retry-After and sends it again gets
// through once the limit has room for the whole party. The route's
// RateLimit headers are kept. False when a limit refused it and the 429
// was written; else the direct counts taken (for handBackCreate: the
// ticket refused after, they are handed back too).
func (s *Server) limitParty(w http.ResponseWriter, r *http.Request, members []string) ([]limits.Check, bool) {
	if !s.limits.on() {
		return nil, true
	}
	u := userFrom(r.Context())
	addr := clientAddr(r, s.trustedProxies)
	direct := []limits.Check{
		{Name: "direct", Scope: limits.User, Subject: u.ID, Limit: s.limits.set.Get("direct", limits.User)},
		{Name: "direct", Scope: limits.IP, Subject: addr, Limit: s.limits.set.Get("direct", limits.IP)},
	}
	counted := min(len(members), max(1, direct[0].Limit.Burst))
	kept := keepRateLimitHeaders(w.Header())
	var taken []limits.Check
	for i, m := range members {
		checks := []limits.Check{s.inboxCheck(r, m)}
		if i < counted {
			checks = append(checks, direct...)
		}
		checks = slices.DeleteFunc(checks, func(c limits.Check) bool { return c.Limit.Zero() })
		decisions, ok := s.count(w, r, checks)
		for j, c := range checks {
			if c.Name == "direct" && decisions != nil && decisions[j].Allowed {
				taken = append(taken, c)
			}
		}
		if !ok {
			s.giveBack(r, taken, "a party's direct counts")
			return nil, false
		}
	}
	kept()
	return taken, true
}

// limitCreate counts a request that may make a room besides a POST
// /v1/rooms (a quick-join that offers create, a matchmaking ticket, whose
// match may make a room its leader owns) on the create limits too (the
// user's and the address's): such routes count on join, whose rate would
// otherwise let an account make (and delete) rooms several times faster
// than create allows. False when that refused it and the 429 was written;
// else the counts taken, for handBackCreate. The route's RateLimit
// headers stay the ones sent.
func (s *Server) limitCreate(w http.ResponseWriter, r *http.Request) ([]limits.Check, bool) {
	if !s.limits.on() {
		return nil, true
	}
	checks := slices.DeleteFunc([]limits.Check{
		{Name: "create", Scope: limits.User, Subject: userFrom(r.Context()).ID, Limit: s.limits.set.Get("create", limits.User)},
		{Name: "create", Scope: limits.IP, Subject: clientAddr(r, s.trustedProxies), Limit: s.limits.set.Get("create", limits.IP)},
	}, func(c limits.Check) bool { return c.Limit.Zero() })
	kept := keepRateLimitHeaders(w.Header())
	decisions, ok := s.count(w, r, checks)
	if !ok || decisions == nil { // refused, or not counted (the limiter failed)
		return nil, ok
	}
	kept()
	return checks, true
}

// handBackCreate gives a request's create counts (limitCreate), and a
// ticket's party's direct counts (limitParty), back unless keep (a quick-join made its room; a ticket was queued) or it may
// have made its room: err a 5xx, the request cut short (the script may
// have run), or ROOM_NOT_FOUND (a quick-join's room, read after the
// script that made or joined it, was gone by then).
func (s *Server) handBackCreate(r *http.Request, taken []limits.Check, keep bool, err error) {
	if keep || len(taken) == 0 || errors.Is(err, rooms.ErrRoomNotFound) {
		return
	}
	if err != nil {
		if p, ok := lookup(err); contextEnded(err) || !ok || p.status >= 500 {
			return
		}
	}
	s.giveBack(r, taken, "a refused request's create counts")
}

// keepRateLimitHeaders saves h's RateLimit headers (the route's, the
// middleware's) and returns what puts them back as they were, for a
// handler whose further counts must not be the ones sent. With an
// Idempotency-Key, h is the recorded answer's, empty of them at first:
// what a count adds is dropped then, and the middleware's stay.
func keepRateLimitHeaders(h http.Header) (restore func()) {
	names := []string{http.CanonicalHeaderKey("RateLimit-Policy"), http.CanonicalHeaderKey("RateLimit")}
	saved := make([][]string, len(names))
	for i, n := range names {
		saved[i] = h[n]
	}
	return func() {
		for i, n := range names {
			if saved[i] == nil {
				delete(h, n)
			} else {
				h[n] = saved[i]
			}
		}
	}
}

// inboxCheck is the count a direct message, an invite or a party ticket
// of the caller's takes on the inbox of user to, counted as a room on the
// messages limit, each sender at most half: the inbox of the senders to
// follows ("&" + to) when to follows the caller, else the inbox of the
// others ("@" + to; neither character starts a room id). So strangers
// flooding a user leave the rate of the users they follow whole; the
// game's server (an API key) counts with the users to follows, not with
// the strangers, whose flood would otherwise refuse its notices. One
// SISMEMBER in to's slot, made only when the limit is on and its checks
// are not paused (count), bounded as a check is (limiterTimeout); a
// failed or slow lookup counts on the others' inbox.
func (s *Server) inboxCheck(r *http.Request, to string) limits.Check {
	u := userFrom(r.Context())
	from := u.ID
	c := limits.Check{Name: "messages", Scope: limits.Room, Subject: "@" + to, Member: from, Limit: s.limits.set.Get("messages", limits.Room)}
	if u.Server {
		c.Subject = "&" + to
		return c
	}
	if c.Limit.Zero() || from == "" || s.players == nil || time.Now().UnixNano() < s.limits.pausedUntil.Load() {
		return c
	}
	ctx, cancel := context.WithTimeout(r.Context(), limiterTimeout)
	defer cancel()
	if ok, err := s.players.Follows(ctx, to, from); err == nil && ok {
		c.Subject = "&" + to
	}
	return c
}

// limitInbox counts an invite on its recipient's inbox too (the route's
// extra limit counted it on the room: the recipient is in the body, which
// the middleware does not read), as a direct message to them is: false
// when that refused it and the 429 was written.
func (s *Server) limitInbox(w http.ResponseWriter, r *http.Request, to string) bool {
	if !s.limits.on() {
		return true
	}
	c := s.inboxCheck(r, to)
	if c.Limit.Zero() {
		return true
	}
	_, ok := s.count(w, r, []limits.Check{c})
	return ok
}

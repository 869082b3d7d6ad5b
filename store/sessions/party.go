package sessions

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store/internal/redisx"
)

var _ players.PartyStore = (*Sessions)(nil)

// PartyMembersKept is the most members a leader's list keeps
// (partyMembersKey): past it, the earliest to expire are dropped from the
// list (they stay in the party, unlisted). Ten times what a read lists, so
// the few entries of users no longer in the party never push a member out
// of a read.
const PartyMembersKept = 10 * players.MaxPartyListed

// partyJoinWrites is the writes one join (SetParty) tries. The first may
// be refused by an earlier party of the user (written by an instance
// whose clock was ahead, or a leave's trace); a second refusal means
// another join of the user wrote a later expiry after the first, during
// this one (only a join raises the expiry a party key holds): this join
// is then superseded. It took effect just before that one, which replaced
// it, and it drops its own listing (yield). Until 2026-12-06 a join tried
// again up to 32 times, then answered 503: one user's 40 joins at once
// made a few 503s, each leaving an entry in another leader's list (a
// tester's find; TestPartyJoinBurst).
const partyJoinWrites = 2

// partyKey is user uid's party: a string "<expiry, ms> <leader's userId>"
// (a user id holds no space), expiring with it; a party read past its
// expiry is none, should the key have lost its TTL (a restore, a tool).
// It is the party: consent and GET /v1/me/party read it alone. After a
// leave it holds "<expiry, ms>" alone until that expiry: no party.
func (s *Sessions) partyKey(uid string) string { return s.tag(uid) + ":party:" + uid }

// partyMembersKey is the users who joined leader's party, a zset scored by
// their party's expiry (ms) in the leader's slot, which GET
// /v1/me/party/members reads.
//
// It holds every member of the party, and perhaps a few users no longer in
// it, which the read checks against their party keys and which expire by
// their score. A join lists the user (party_members_add, a score that only
// rises) at the expiry it then writes in its party key (party_set), which
// refuses an expiry not later than the one the key holds: the join then
// lists and asks again past it. A join that replaced another leader's
// party, or a leave, drops the user from that leader's list after the key
// stopped naming it (party_members_drop), only while the entry has the
// replaced party's expiry. A user's parties have increasing expiries
// (party_set, and party_leave's trace of the left party's), so a drop
// never takes the entry of a party the user is in, and a failure between
// the steps leaves at worst an entry too many. Left behind so: the entries
// of a join whose party key was never written, of a drop lost with its
// instance. Kept PartyMembersKept entries at most; expires with its
// latest.
func (s *Sessions) partyMembersKey(leader string) string {
	return s.tag(leader) + ":partymembers:" + leader
}

// partyJoin is one SetParty: its steps, list and write until written
// (or refused partyJoinWrites times: yield), then unlist; each a call.
type partyJoin struct {
	s           *Sessions
	uid, leader string
	asked, now  int64 // ms
	listed      int64 // the expiry of its latest listing (ms)
	refused     int   // its writes refused
	ttl         time.Duration
	written     bool
	old         string // the party key's value replaced ("": none)
}

// list lists uid in leader's members at the expiry asked.
func (j *partyJoin) list(ctx context.Context) error {
	j.listed = j.asked
	return redisx.Wrap(j.s.b.Runner.Run(ctx, partyMembersAddCall{key: j.s.partyMembersKey(j.leader), user: j.uid,
		exp: j.asked, now: j.now, ttl: j.ttl}).Err())
}

// yield drops the listing of a join superseded (refused partyJoinWrites
// times), while its entry is at the expiry it listed: no party of the
// user can be written at that expiry any more (the key holds one as late,
// and not this join's party: party_set calls a party written as asked
// written). A join of the same leader listed since at a later expiry
// keeps its entry; one listed at that expiry or an earlier one (a clock
// behind) loses it, but cannot be written there either, and lists again
// before it writes. Nothing for a join written.
func (j *partyJoin) yield(ctx context.Context) error {
	if j.written || j.listed == 0 {
		return nil
	}
	return j.s.dropPartyMember(ctx, j.leader, j.uid, j.listed)
}

// write sets uid's party key at the expiry asked (party_set); when it held
// one as late, nothing is written and the next expiry asked is past it.
func (j *partyJoin) write(ctx context.Context) error {
	res, err := j.s.b.Runner.Run(ctx, partySetCall{key: j.s.partyKey(j.uid), leader: j.leader, exp: j.asked, ttl: j.ttl}).Result()
	if err != nil {
		return redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	if len(arr) != 2 {
		return fmt.Errorf("store: unexpected party_set reply %v", res)
	}
	if arr[0] == int64(1) {
		j.written = true
		j.old, _ = arr[1].(string)
		return nil
	}
	if held, ok := arr[1].(int64); ok && held >= j.asked {
		j.asked = held + 1
		j.refused++
		return nil
	}
	return fmt.Errorf("store: unexpected party_set reply %v", res)
}

// unlist drops uid from the members of the party write replaced, when it
// was another leader's.
func (j *partyJoin) unlist(ctx context.Context) error {
	if was, ms, ok := parseParty(j.old); ok && was != j.leader {
		return j.s.dropPartyMember(ctx, was, j.uid, ms)
	}
	return nil
}

// SetParty implements players.PartyStore: partyJoin's steps (partyMembersKey
// says why), three calls; two more when the write is refused (an earlier
// party of the user holds as late an expiry, written in the same
// millisecond or by an instance whose clock is ahead, or a leave's trace,
// or another join of the user wrote one meanwhile); refused twice, the
// join was superseded by another of the user (partyJoinWrites), drops its
// listing and answers the party it asked, which that one replaced. A
// failed step leaves at worst an entry too many: the user is listed
// before its key is written, and a drop removes only an entry at the
// replaced party's expiry, which no later party of the user has. (A
// leave's trace lives as long as the party key it replaced, which may end
// before the party's expiry by as much as an instance's clock was ahead
// when it wrote it: a join delivered in that moment, asking an expiry at
// or before the left party's, may leave the user unlisted until it joins
// again. Consent, which reads the party key, is never affected.)
func (s *Sessions) SetParty(ctx context.Context, uid, leader string, ttl time.Duration) (players.Party, error) {
	now := time.Now()
	j := &partyJoin{s: s, uid: uid, leader: leader, asked: now.Add(ttl).UnixMilli(), now: now.UnixMilli(), ttl: ttl}
	exp, err := j.run(ctx)
	if err != nil {
		return players.Party{}, err
	}
	return players.Party{LeaderUserID: leader, ExpiresAt: time.UnixMilli(exp).UTC()}, nil
}

// run makes j's steps in SetParty's order: list and write until written,
// then unlist; or, refused partyJoinWrites times, yield. Returns the
// expiry of the party joined (ms).
func (j *partyJoin) run(ctx context.Context) (int64, error) {
	for !j.written {
		if j.refused == partyJoinWrites {
			return j.listed, j.yield(ctx)
		}
		if err := j.list(ctx); err != nil {
			return 0, err
		}
		if err := j.write(ctx); err != nil {
			return 0, err
		}
	}
	return j.asked, j.unlist(ctx)
}

// Party implements players.PartyStore: one GET in uid's slot. A value not
// of partyKey's form (a leave's tombstone), or past its expiry, is no
// party.
func (s *Sessions) Party(ctx context.Context, uid string) (players.Party, bool, error) {
	v, err := s.b.Client.Get(ctx, s.partyKey(uid)).Result()
	if err == redis.Nil {
		return players.Party{}, false, nil
	} else if err != nil {
		return players.Party{}, false, redisx.Wrap(err)
	}
	leader, ms, ok := parseParty(v)
	if !ok || ms <= time.Now().UnixMilli() {
		return players.Party{}, false, nil
	}
	return players.Party{LeaderUserID: leader, ExpiresAt: time.UnixMilli(ms).UTC()}, true, nil
}

// parseParty is a party key's value: its leader and expiry (ms); false
// for a value not of partyKey's form (none: "").
func parseParty(v string) (leader string, ms int64, ok bool) {
	exp, leader, ok := strings.Cut(v, " ")
	ms, err := strconv.ParseInt(exp, 10, 64)
	return leader, ms, ok && err == nil && leader != ""
}

// partyLeave is one LeaveParty: its steps, in their order.
type partyLeave struct {
	s   *Sessions
	uid string
	old string // the party key's value replaced ("": none)
}

// write replaces uid's party by its tombstone (party_leave).
func (l *partyLeave) write(ctx context.Context) error {
	res, err := l.s.b.Runner.Run(ctx, partyLeaveCall{key: l.s.partyKey(l.uid)}).Result()
	if err != nil && err != redis.Nil {
		return redisx.Wrap(err)
	}
	l.old, _ = res.(string)
	return nil
}

// unlist drops uid from the members of the party it left.
func (l *partyLeave) unlist(ctx context.Context) error {
	if was, ms, ok := parseParty(l.old); ok {
		return l.s.dropPartyMember(ctx, was, l.uid, ms)
	}
	return nil
}

// LeaveParty implements players.PartyStore: partyLeave's steps, two calls
// at most.
func (s *Sessions) LeaveParty(ctx context.Context, uid string) error {
	l := &partyLeave{s: s, uid: uid}
	if err := l.write(ctx); err != nil {
		return err
	}
	return l.unlist(ctx)
}

// dropPartyMember drops uid from leader's members while its entry is the
// one its party key of expiry ms listed.
func (s *Sessions) dropPartyMember(ctx context.Context, leader, uid string, ms int64) error {
	return redisx.Wrap(s.b.Runner.Run(ctx, partyMembersDropCall{key: s.partyMembersKey(leader), user: uid, exp: ms}).Err())
}

// PartyMembers implements players.PartyStore: leader's list read by
// expiry, latest first, up to PartyMembersKept entries at once (one
// ZREVRANGEBYSCORE in leader's slot: one snapshot, no entry read twice),
// then checked against their party keys max at a time (each page's GETs
// in one pipeline) until max members are found or the list ends. A
// member's expiry is its party key's.
func (s *Sessions) PartyMembers(ctx context.Context, leader string, max int) ([]players.PartyMember, error) {
	now := time.Now().UnixMilli()
	listed, err := s.b.Client.ZRevRangeByScore(ctx, s.partyMembersKey(leader), &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(now, 10), Max: "+inf", Count: PartyMembersKept}).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	var out []players.PartyMember
	for len(listed) > 0 && len(out) < max {
		page := listed[:min(max, len(listed))]
		listed = listed[len(page):]
		p := s.b.Client.Pipeline()
		gets := make([]*redis.StringCmd, len(page))
		for i, uid := range page {
			gets[i] = p.Get(ctx, s.partyKey(uid))
		}
		p.Exec(ctx) // each GET's error is read below
		for i, uid := range page {
			v, err := gets[i].Result()
			if err == redis.Nil {
				continue
			} else if err != nil {
				return nil, redisx.Wrap(err)
			}
			if was, ms, ok := parseParty(v); ok && was == leader && ms > now && len(out) < max {
				out = append(out, players.PartyMember{UserID: uid, ExpiresAt: time.UnixMilli(ms).UTC()})
			}
		}
	}
	return out, nil
}

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
// the few entries of members gone without their drop (an instance that
// died between the two writes) never push a member out of a read.
const PartyMembersKept = 10 * players.MaxPartyListed

// partyKey is user uid's party: a string "<expiry, ms> <leader's userId>"
// (a user id holds no space), expiring with it; a party read past its
// expiry is none, should the key have lost its TTL (a restore, a tool).
// It is the party: consent and GET /v1/me/party read it alone.
func (s *Sessions) partyKey(uid string) string { return s.tag(uid) + ":party:" + uid }

// partyMembersKey is the users who joined leader's party, a zset scored by
// their party's expiry (ms) in the leader's slot, which GET
// /v1/me/party/members reads: each is listed before its party key names
// the leader (party_members_add) and dropped after the key stopped naming
// it (party_members_drop), so the list holds every member of the party and
// perhaps a few users no longer in it (a join whose party key was never
// written, a member whose drop was lost with its instance), which the read
// checks against their party keys and which expire by their score. Kept
// PartyMembersKept entries at most; expires with its latest.
func (s *Sessions) partyMembersKey(leader string) string {
	return s.tag(leader) + ":partymembers:" + leader
}

// SetParty implements players.PartyStore: uid listed in leader's members
// (party_members_add, in leader's slot), then its party key set
// (party_set, in uid's slot: the expiry asked, or just past the replaced
// party's, listed again when so moved), then, when the party replaced was
// another leader's, uid dropped from that leader's members
// (party_members_drop). A user's parties never share an expiry, so the
// drop never takes a newer entry. A join and a leave of one user at once,
// the join in the millisecond of the user's previous join, may leave the
// user in the party unlisted until the user joins again: consent, which
// reads the party key, is not affected.
func (s *Sessions) SetParty(ctx context.Context, uid, leader string, ttl time.Duration) (players.Party, error) {
	now := time.Now()
	exp := now.Add(ttl).UnixMilli()
	add := partyMembersAddCall{key: s.partyMembersKey(leader), user: uid, exp: exp, now: now.UnixMilli(), ttl: ttl}
	if err := s.b.Runner.Run(ctx, add).Err(); err != nil {
		return players.Party{}, redisx.Wrap(err)
	}
	res, err := s.b.Runner.Run(ctx, partySetCall{key: s.partyKey(uid), leader: leader, exp: exp, ttl: ttl}).Result()
	if err != nil {
		return players.Party{}, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	var set int64
	if len(arr) == 2 {
		set, _ = arr[1].(int64)
	}
	if set < exp {
		return players.Party{}, fmt.Errorf("store: unexpected party_set reply %v", res)
	}
	if set != exp {
		add.exp = set
		if err := s.b.Runner.Run(ctx, add).Err(); err != nil {
			return players.Party{}, redisx.Wrap(err)
		}
	}
	old, _ := arr[0].(string)
	if was, ms, ok := parseParty(old); ok && was != leader {
		if err := s.dropPartyMember(ctx, was, uid, ms); err != nil {
			return players.Party{}, err
		}
	}
	return players.Party{LeaderUserID: leader, ExpiresAt: time.UnixMilli(set).UTC()}, nil
}

// Party implements players.PartyStore: one GET in uid's slot. A value not
// of partyKey's form, or past its expiry, is no party.
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

// LeaveParty implements players.PartyStore: one GETDEL in uid's slot,
// then uid dropped from its leader's members (party_members_drop).
func (s *Sessions) LeaveParty(ctx context.Context, uid string) error {
	old, err := s.b.Client.GetDel(ctx, s.partyKey(uid)).Result()
	if err != nil && err != redis.Nil {
		return redisx.Wrap(err)
	}
	if was, ms, ok := parseParty(old); ok {
		return s.dropPartyMember(ctx, was, uid, ms)
	}
	return nil
}

// dropPartyMember drops uid from leader's members while its entry is the
// one its party key of expiry ms listed.
func (s *Sessions) dropPartyMember(ctx context.Context, leader, uid string, ms int64) error {
	return redisx.Wrap(s.b.Runner.Run(ctx, partyMembersDropCall{key: s.partyMembersKey(leader), user: uid, exp: ms}).Err())
}

// PartyMembers implements players.PartyStore: leader's members list read
// by their expiry, latest first, a page of max at a time (one
// ZREVRANGEBYSCORE in leader's slot), each checked against its party key
// (the page's GETs in one pipeline), until max members are found or the
// list ends. A member's expiry is its party key's.
func (s *Sessions) PartyMembers(ctx context.Context, leader string, max int) ([]players.PartyMember, error) {
	now := time.Now().UnixMilli()
	var out []players.PartyMember
	for offset := int64(0); len(out) < max; offset += int64(max) {
		page, err := s.b.Client.ZRevRangeByScore(ctx, s.partyMembersKey(leader), &redis.ZRangeBy{
			Min: "(" + strconv.FormatInt(now, 10), Max: "+inf", Offset: offset, Count: int64(max)}).Result()
		if err != nil {
			return nil, redisx.Wrap(err)
		}
		if len(page) == 0 {
			break
		}
		p := s.b.Client.Pipeline()
		gets := make([]*redis.StringCmd, len(page))
		for i, uid := range page {
			gets[i] = p.Get(ctx, s.partyKey(uid))
		}
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
			return nil, redisx.Wrap(err)
		}
		for i, uid := range page {
			if was, ms, ok := parseParty(gets[i].Val()); ok && was == leader && ms > now && len(out) < max {
				out = append(out, players.PartyMember{UserID: uid, ExpiresAt: time.UnixMilli(ms).UTC()})
			}
		}
		if len(page) < max {
			break
		}
	}
	return out, nil
}

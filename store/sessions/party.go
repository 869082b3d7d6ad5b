package sessions

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store/internal/redisx"
)

var _ players.PartyStore = (*Sessions)(nil)

// partyKey is user uid's party: a string "<expiry, ms> <leader's userId>"
// (a user id holds no space), expiring with it; a party read past its
// expiry is none, should the key have lost its TTL (a restore, a tool).
func (s *Sessions) partyKey(uid string) string { return s.tag(uid) + ":party:" + uid }

// SetParty implements players.PartyStore: one SET in uid's slot.
func (s *Sessions) SetParty(ctx context.Context, uid, leader string, ttl time.Duration) (players.Party, error) {
	exp := time.UnixMilli(time.Now().Add(ttl).UnixMilli()).UTC()
	err := s.b.Client.Set(ctx, s.partyKey(uid), strconv.FormatInt(exp.UnixMilli(), 10)+" "+leader, ttl).Err()
	if err != nil {
		return players.Party{}, redisx.Wrap(err)
	}
	return players.Party{LeaderUserID: leader, ExpiresAt: exp}, nil
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
	exp, leader, ok := strings.Cut(v, " ")
	ms, perr := strconv.ParseInt(exp, 10, 64)
	if !ok || perr != nil || leader == "" || ms <= time.Now().UnixMilli() {
		return players.Party{}, false, nil
	}
	return players.Party{LeaderUserID: leader, ExpiresAt: time.UnixMilli(ms).UTC()}, true, nil
}

// LeaveParty implements players.PartyStore: one DEL in uid's slot.
func (s *Sessions) LeaveParty(ctx context.Context, uid string) error {
	return redisx.Wrap(s.b.Client.Del(ctx, s.partyKey(uid)).Err())
}

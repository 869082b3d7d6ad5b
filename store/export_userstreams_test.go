package store

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Test-only access to the users' open streams (store/sessions, streams.go).

// UserStreams is user uid's open streams as recorded: "<roomId>/<stream>"
// members ("/<stream>" for the lobby), lapsed ones included until purged;
// nil when the key is missing.
func (s *Store) UserStreams(ctx context.Context, uid string) ([]string, error) {
	m, err := s.client.ZRange(ctx, s.sess.StreamsKey(uid), 0, -1).Result()
	if len(m) == 0 {
		return nil, err
	}
	return m, err
}

// LiveUserStreams is UserStreams without the lapsed leases (expired by
// Redis' clock, not yet purged by an open).
func (s *Store) LiveUserStreams(ctx context.Context, uid string) ([]string, error) {
	now, err := s.client.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	return s.client.ZRangeByScore(ctx, s.sess.StreamsKey(uid),
		&redis.ZRangeBy{Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
}

// LapseUserStreams makes every stream lease uid holds lapsed (its expiry
// in the past), as a dead instance's leases are.
func (s *Store) LapseUserStreams(ctx context.Context, uid string) error {
	m, err := s.client.ZRange(ctx, s.sess.StreamsKey(uid), 0, -1).Result()
	if err != nil {
		return err
	}
	for _, x := range m {
		if err := s.client.ZAdd(ctx, s.sess.StreamsKey(uid), redis.Z{Score: 1, Member: x}).Err(); err != nil {
			return err
		}
	}
	return nil
}

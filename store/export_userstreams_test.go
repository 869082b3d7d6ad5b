package store

import "context"

// Test-only access to the users' open streams (userstreams.go).

// UserStreams is user uid's open streams as recorded: "<roomId>/<stream>"
// members ("/<stream>" for the lobby), lapsed ones included until purged;
// nil when the key is missing.
func (s *Store) UserStreams(ctx context.Context, uid string) ([]string, error) {
	m, err := s.client.ZRange(ctx, s.keys.userStreams(userShard(uid, s.shards), uid), 0, -1).Result()
	if len(m) == 0 {
		return nil, err
	}
	return m, err
}

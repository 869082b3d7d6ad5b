// Package schema1 writes data as the release of key schema 1 did, for the
// tests of the 1→2 migration: Downgrade rewrites what a schema-2 store wrote
// under a prefix into schema 1's formats, so every other part of the rooms
// (indexes, logs, stats) stays what the store itself wrote.
package schema1

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
)

// Downgrade rewrites the data under prefix into schema 1 and records schema
// 1 in the meta hash:
//   - player records "<offset>|<name JSON>" become JSON
//     {"playerId","name","joinedAt"} (odd playerIds, as the oldest builds
//     wrote them) or "<joinedAt epoch ms>|<name JSON>" (even playerIds);
//   - each shard's user index hash "{p:s}:users" becomes the zset
//     "{p:s}:idx:users" of "<userId>\t<roomId>" members.
func Downgrade(ctx context.Context, c redis.UniversalClient, prefix string) error {
	players, err := rediskeys.Scan(ctx, c, "{"+prefix+":*}:room:*:players")
	if err != nil {
		return err
	}
	for _, k := range players {
		if err := downgradePlayers(ctx, c, k); err != nil {
			return err
		}
	}
	indexes, err := rediskeys.Scan(ctx, c, "{"+prefix+":*}:users")
	if err != nil {
		return err
	}
	for _, k := range indexes {
		if err := downgradeUserIndex(ctx, c, k); err != nil {
			return err
		}
	}
	return c.HSet(ctx, prefix+":meta", "schema", 1).Err()
}

func downgradePlayers(ctx context.Context, c redis.UniversalClient, key string) error {
	cr, err := c.HGet(ctx, strings.TrimSuffix(key, ":players"), "cr").Int64()
	if err != nil {
		return fmt.Errorf("%s: room createdAt: %w", key, err)
	}
	recs, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	for pid, rec := range recs {
		off, nameJSON, _ := strings.Cut(rec, "|")
		ms, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: record %q", key, rec)
		}
		joined := cr/1000 + ms
		old := strconv.FormatInt(joined, 10) + "|" + nameJSON
		if id, _ := strconv.Atoi(pid); id%2 == 1 {
			var name string
			if err := json.Unmarshal([]byte(nameJSON), &name); err != nil {
				return err
			}
			b, _ := json.Marshal(map[string]any{"playerId": id, "name": name,
				"joinedAt": time.UnixMilli(joined).UTC().Format("2006-01-02T15:04:05.999Z07:00")})
			old = string(b)
		}
		if err := c.HSet(ctx, key, pid, old).Err(); err != nil {
			return err
		}
	}
	return nil
}

func downgradeUserIndex(ctx context.Context, c redis.UniversalClient, key string) error {
	users, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	old := strings.TrimSuffix(key, ":users") + ":idx:users"
	for uid, ids := range users {
		for _, id := range strings.Fields(ids) {
			if err := c.ZAdd(ctx, old, redis.Z{Member: uid + "\t" + id}).Err(); err != nil {
				return err
			}
		}
	}
	return c.Del(ctx, key).Err()
}

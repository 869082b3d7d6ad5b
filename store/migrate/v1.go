package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Schema 1 → 2 (the release before it wrote schema 1):
//   - a player record "<joinedAt epoch ms>|<name JSON>" (or, written by
//     still older builds, JSON {"playerId","name","joinedAt"}) becomes
//     "<joinedAt, ms after the room's createdAt>|<name JSON>";
//   - the shard user index, a zset "{p:s}:idx:users" of "<userId>\t<roomId>"
//     members, becomes the hash "{p:s}:users" of userId → room ids.

// userIndexV1 is schema 1's user index of shard.
func userIndexV1(k layout.Keys, shard int) string { return k.Tag(shard) + ":idx:users" }

// absoluteMs: a joinedAt at or above it (2001-09-09) is epoch ms, below it
// an offset from the room's creation (a room would have to live 31 years).
const absoluteMs = 1_000_000_000_000

// migrateBatch bounds the user index entries one round trip moves.
const migrateBatch = 512

func migrateV1(ctx context.Context, m *migrator, dry bool, log *slog.Logger) (int, error) {
	keys, err := m.scanKeys(ctx, "{"+rediskeys.GlobEscape(m.keys.Prefix())+":*}:room:*:players")
	if err != nil {
		return 0, err
	}
	byShard := map[int][]string{}
	for _, k := range keys {
		if shard, ok := m.shardOfKey(k); ok {
			byShard[shard] = append(byShard[shard], k)
		}
	}
	total := 0
	for shard := range m.b.Shards {
		players := 0
		for _, k := range byShard[shard] {
			n, err := m.migratePlayersV1(ctx, k, dry)
			if err != nil {
				return total, err
			}
			players += n
		}
		entries, err := m.migrateUserIndexV1(ctx, shard, dry)
		if err != nil {
			return total, err
		}
		if players+entries > 0 {
			log.Info("migrate: shard", "shard", shard, "rooms", len(byShard[shard]), "playerRecords", players, "userIndexEntries", entries)
		}
		total += players + entries
	}
	return total, nil
}

// shardOfKey reads the shard of a key "{<prefix>:<shard>}:...".
func (m *migrator) shardOfKey(k string) (int, bool) {
	rest, ok := strings.CutPrefix(k, "{"+m.keys.Prefix()+":")
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, "}")
	shard, err := strconv.Atoi(n)
	return shard, ok && err == nil && shard >= 0 && shard < m.b.Shards
}

// migratePlayersV1 converts the records of one players hash; records
// already converted are left alone. Returns how many it converted.
func (m *migrator) migratePlayersV1(ctx context.Context, key string, dry bool) (int, error) {
	room := strings.TrimSuffix(key, ":players")
	var cr *redis.StringCmd
	var recs *redis.MapStringStringCmd
	_, err := m.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		cr = p.HGet(ctx, room, "cr")
		recs = p.HGetAll(ctx, key)
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, redisx.Wrap(err)
	}
	created, err := strconv.ParseInt(cr.Val(), 10, 64)
	if err != nil {
		return 0, nil // no room hash: a leftover the janitor's index repair owns
	}
	var set []any
	for pid, rec := range recs.Val() {
		nr, changed, err := playerRecordV2(rec, created/1000)
		if err != nil {
			return 0, fmt.Errorf("%s player %s: %w", key, pid, err)
		}
		if changed {
			set = append(set, pid, nr)
		}
	}
	if dry || len(set) == 0 {
		return len(set) / 2, nil
	}
	return len(set) / 2, redisx.Wrap(m.b.Client.HSet(ctx, key, set...).Err())
}

// playerRecordV2 converts a schema-1 player record of a room created at
// createdMs; changed is false for a record already in schema 2.
func playerRecordV2(rec string, createdMs int64) (string, bool, error) {
	if strings.HasPrefix(rec, "{") {
		var p struct {
			Name     string    `json:"name"`
			JoinedAt time.Time `json:"joinedAt"`
		}
		if err := json.Unmarshal([]byte(rec), &p); err != nil {
			return "", false, fmt.Errorf("record %q: %w", rec, err)
		}
		name, _ := json.Marshal(p.Name) // a string always marshals
		return strconv.FormatInt(max(0, p.JoinedAt.UnixMilli()-createdMs), 10) + "|" + string(name), true, nil
	}
	ms, name, ok := strings.Cut(rec, "|")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return "", false, fmt.Errorf("record %q is neither schema 1 nor 2", rec)
	}
	if n < absoluteMs {
		return rec, false, nil
	}
	return strconv.FormatInt(max(0, n-createdMs), 10) + "|" + name, true, nil
}

// migrateUserIndexV1 moves the shard's schema-1 user index into the hash,
// a batch at a time: each batch adds its rooms to the users' lists (a
// room already listed is not added twice) and then removes its entries,
// so a run interrupted anywhere resumes. Returns the entries moved.
func (m *migrator) migrateUserIndexV1(ctx context.Context, shard int, dry bool) (int, error) {
	old, idx := userIndexV1(m.keys, shard), m.keys.UserIndex(shard)
	if dry {
		n, err := m.b.Client.ZCard(ctx, old).Result()
		return int(n), redisx.Wrap(err)
	}
	moved := 0
	for {
		members, err := m.b.Client.ZRange(ctx, old, 0, migrateBatch-1).Result()
		if err != nil || len(members) == 0 {
			return moved, redisx.Wrap(err)
		}
		byUser := map[string][]string{}
		var users []string
		for _, e := range members {
			uid, rid, ok := strings.Cut(e, "\t")
			if !ok {
				return moved, fmt.Errorf("%s: entry %q is not \"<user>\\t<room>\"", old, e)
			}
			if byUser[uid] == nil {
				users = append(users, uid)
			}
			byUser[uid] = append(byUser[uid], rid)
		}
		cur, err := m.b.Client.HMGet(ctx, idx, users...).Result()
		if err != nil {
			return moved, redisx.Wrap(err)
		}
		_, err = m.b.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			set := make([]any, 0, 2*len(users))
			for i, uid := range users {
				ids, _ := cur[i].(string)
				list := strings.Fields(ids)
				for _, rid := range byUser[uid] {
					if !slices.Contains(list, rid) {
						list = append(list, rid)
					}
				}
				set = append(set, uid, strings.Join(list, " "))
			}
			p.HSet(ctx, idx, set...)
			rm := make([]any, len(members))
			for i, e := range members {
				rm[i] = e
			}
			p.ZRem(ctx, old, rm...)
			return nil
		})
		if err != nil {
			return moved, redisx.Wrap(err)
		}
		moved += len(members)
	}
}

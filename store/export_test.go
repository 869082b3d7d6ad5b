package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/feed"
	"github.com/realsync/realsync/store/holdings"
	"github.com/realsync/realsync/store/internal/conn"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
)

// Test-only access to key names and events, so tests can read Redis
// directly.

// LogKey is the event log key of room id.
func (s *Store) LogKey(id string) string {
	shard, _ := layout.RoomShard(id, s.shards)
	return s.keys.Room(shard, id) + ":log"
}

// Prefix is the store's key prefix.
func (s *Store) Prefix() string { return s.keys.Prefix() }

// RoomKey is the hash key of room id.
func (s *Store) RoomKey(id string) string {
	shard, _ := layout.RoomShard(id, s.shards)
	return s.keys.Room(shard, id)
}

// EvalShaArgs is the argument vector of the EVALSHA the store sends for a
// join of user uid into room id ("join", replying with the playerId only)
// or a one-key state patch by uid ("patch"), with the script loaded; uid
// may hold redis-benchmark's __rand_int__ placeholder.
func (s *Store) EvalShaArgs(ctx context.Context, script, id, uid string) ([]string, error) {
	shard, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return nil, err
	}
	var call redisx.Call = roomlua.JoinCall{Scope: scope, User: uid, NameJSON: `"bench"`}
	if script == "patch" {
		call = roomlua.PatchCall{Scope: s.env.Scope(shard, id), Caller: uid, IfMatch: -1, Set: rooms.State{"k": []byte("1")}}
	}
	sc := call.Script()
	keys, args := call.KeysArgs()
	if err := sc.Load(ctx, s.client).Err(); err != nil {
		return nil, err
	}
	out := []string{"EVALSHA", sc.Hash(), strconv.Itoa(len(keys))}
	out = append(out, keys...)
	for _, a := range args {
		out = append(out, fmt.Sprint(a))
	}
	return out, nil
}

// CodesKey is the invite-code table of the shard that holds code.
func (s *Store) CodesKey(code string) string { return s.keys.Codes(layout.CodeShard(code, s.shards)) }

// LegacyCode is a 6-character code (the length issued before) of the same
// shard as room id, as a room created then holds.
func (s *Store) LegacyCode(id string) string {
	shard, _ := layout.RoomShard(id, s.shards)
	for {
		if c := layout.RandomString(rooms.LegacyCodeLength, rooms.CodeAlphabet); layout.CodeShard(c, s.shards) == shard {
			return c
		}
	}
}

// Holdings is user uid's holdings hash: roomId → "o" or "m" (stamps cut
// off), without the "#" marker; nil when the key is missing.
func (s *Store) Holdings(ctx context.Context, uid string) (map[string]string, error) {
	h, err := s.client.HGetAll(ctx, s.held.Key(uid)).Result()
	if err != nil || len(h) == 0 {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range h {
		if k != "#" {
			out[k] = v[:1]
		}
	}
	return out, nil
}

// AgeHoldings moves every reservation of user uid back by d, as if made
// that long ago, and the read of a key built partially ("#" → "p:<µs>")
// with them.
func (s *Store) AgeHoldings(ctx context.Context, uid string, d time.Duration) error {
	key := s.held.Key(uid)
	h, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return err
	}
	for k, v := range h {
		if n, ok := holdings.Stamp(v); ok { // the stamp moved, the notes kept
			i := strings.Index(v, ":") + 1
			notes := v[i+len(strconv.FormatInt(n, 10)):]
			if err := s.client.HSet(ctx, key, k, v[:i]+strconv.FormatInt(n-d.Microseconds(), 10)+notes).Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reserve makes the reservation a create (owner) or join of uid into room
// makes before its room script, and leaves it there, as a request whose
// room script has not run yet.
func (s *Store) Reserve(ctx context.Context, uid, room string, owner bool) error {
	_, err := s.held.Reserve(ctx, uid, room, owner)
	return err
}

// Unheld is every entry of every shard's unheld list.
func (s *Store) Unheld(ctx context.Context) ([]string, error) {
	var out []string
	for shard := range s.shards {
		l, err := s.client.LRange(ctx, s.keys.Unheld(shard), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, l...)
	}
	return out, nil
}

// HoldingsRaw is user uid's holdings hash as stored ("#" marker
// included) and its time to live (-2 ns: no key).
func (s *Store) HoldingsRaw(ctx context.Context, uid string) (map[string]string, time.Duration, error) {
	key := s.held.Key(uid)
	h, err := s.client.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, 0, err
	}
	ttl, err := s.client.PTTL(ctx, key).Result()
	return h, ttl, err
}

// HoldingsTTL is how long a holdings key lives after its last reservation.
const HoldingsTTL = holdings.TTL

// UserShard is the shard of user uid's own keys.
func (s *Store) UserShard(uid string) int { return redisx.UserShard(uid, s.shards) }

// HoldingsReread is how long a key built partially is counted as it is.
const HoldingsReread = holdings.Reread

// HoldingsInFlight is how old a reservation must be for a check to drop it.
const HoldingsInFlight = holdings.InFlight

// HoldingsKey is the key of user uid's holdings hash.
func (s *Store) HoldingsKey(uid string) string {
	return s.held.Key(uid)
}

// BatchLanesBusy is how many batch lanes have a goroutine sending (0 once
// idle or closed).
func (s *Store) BatchLanesBusy() int {
	if s.batch == nil {
		return 0
	}
	return s.batch.BusyLanes()
}

// LibraryName is the name of the store's Functions library.
func LibraryName() string { return roomlua.Library.Name }

// QuickJoinSHA is the SHA1 of quick_join as EVALSHA runs it.
func QuickJoinSHA() string { return roomlua.QuickJoinCall{}.Script().Hash() }

// UsesFunctions says whether the mutations run as FCALL of the library.
func (s *Store) UsesFunctions() bool { return s.runner.Functions() }

// LeaveSlowly is Leave with its holdings correction deferred: u leaves
// room id now, and the returned function corrects u's holdings as the
// leave would have right after, as when the correction is late.
func (s *Store) LeaveSlowly(ctx context.Context, u rooms.User, id string) (func(), error) {
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return nil, err
	}
	before := s.held.Value(ctx, u.ID, id)
	rest, err := s.result(ctx, roomlua.RemoveCall{Scope: scope, Caller: u.ID, Reason: "left"})
	if err != nil {
		return nil, err
	}
	newOwner, _ := rest[0].(string)
	return func() { s.held.Left(ctx, u.ID, id, before, newOwner) }, nil
}

// PickIndexKeys are the joinable and fill index keys (shard-wide, mode,
// region, both) of a room of mode and region in room id's shard.
func (s *Store) PickIndexKeys(id, mode, region string) []string {
	shard, _ := layout.RoomShard(id, s.shards)
	var out []string
	for _, k := range s.keys.IndexKeys(shard, mode, region) {
		if strings.Contains(k, ":idx:joinable") || strings.Contains(k, ":idx:fill") {
			out = append(out, k)
		}
	}
	return out
}

// SentAs is what a run of the store's script name carries to Redis: its
// function's name where the mutations run as FCALL, else its SHA1 (a
// script of no library has only that).
func (s *Store) SentAs(name string) string {
	sha, fn := "", ""
	for id, n := range redisx.ScriptNames() {
		if n != name {
			continue
		}
		if len(id) == 40 {
			sha = id
		} else {
			fn = id
		}
	}
	if fn != "" && s.runner.Functions() {
		return fn
	}
	return sha
}

// QuickJoinLockKey is the key of user uid's quick-join lock.
func (s *Store) QuickJoinLockKey(uid string) string {
	return s.keys.QuickJoinLock(redisx.UserShard(uid, s.shards), uid)
}

// ReadRoomPlain is readRoomPlain (the room read out of memory) of room id.
func (s *Store) ReadRoomPlain(ctx context.Context, id string) (rooms.Room, error) {
	shard, _ := layout.RoomShard(id, s.shards)
	r, _, err := s.readRoomPlain(ctx, shard, id, false)
	return r, err
}

// FeedProbing is Feed with the probe's timing: every, wait (0: defaults).
func (s *Store) FeedProbing(sink sse.Sink, every, wait time.Duration) sse.Feed {
	cfg := s.feedConfig()
	cfg.ProbeEvery, cfg.ProbeWait = every, wait
	return feed.New(cfg, sink)
}

// FeedProbes returns how many probes feed (of Feed or FeedProbing)
// published.
func FeedProbes(f sse.Feed) int64 { return f.(*feed.Feed).Probes() }

// FeedTracked returns the entries feed's Pub/Sub keeps (pubsub.Mux.Tracked).
func FeedTracked(f sse.Feed) int { return f.(*feed.Feed).Tracked() }

// LayoutSlots reads a Cluster's slot layout as the store's Cluster clients
// do (conn.SlotSource), from seeds; it keeps what it read between calls as
// the clients' source does. Close it when done.
type LayoutSlots = conn.SlotSource

// NewLayoutSlots is a layout source of seeds.
func NewLayoutSlots(seeds []string, dial, read time.Duration) *LayoutSlots {
	return conn.NewSlotSource(seeds, dial, read)
}

// CheckMeta is checkMeta, for tests.
func (s *Store) CheckMeta(ctx context.Context) (bool, error) { return s.checkMeta(ctx) }

// SetIndexScan makes the repair walk's index scan SCAN count keys a call,
// every every-th visit of a shard: a test on a node that holds many other
// tests' keys gets through it in a few visits.
func (s *Store) SetIndexScan(count, every int) {
	s.repairs.SetIndexScan(count, every)
}

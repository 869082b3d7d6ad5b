package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// repairBudget bounds the entries one janitor visit of a shard checks: one
// SCAN-family page of at most this many entries, then one script over them.
const repairBudget = 20

// statsCheckMax is the largest shard whose stats the repair walk checks: the
// check reads every room of the shard in one transaction.
const statsCheckMax = 5000

// The repair walk goes round each shard's structures in phases, one page per
// janitor visit, so its cost per tick is bounded whatever the data:
// rooms (the lifecycle schedule: each room's own index entries, user index,
// code and presence schedule), users (the user index: rooms gone or left),
// codes (invite codes of rooms gone), indexes (every index key of the
// shard: entries of rooms gone or misplaced), stats (recounted from the
// rooms, small shards only). Beside the phases, every indexScanEvery-th
// visit also makes one SCAN call of the index scan: a walk of the shard's
// node for index keys of a mode or region the stats no longer name (a
// field goes at zero), whose entries a fault or an old release left; the
// next indexes phase checks them too. Slow on a large node (N keys: N /
// indexScanCount × indexScanEvery visits a scan), it never holds back the
// phases.
const (
	phaseRooms = iota
	phaseUsers
	phaseCodes
	phaseIndexes
	phaseStats
	phases
)

// The index scan: one SCAN … COUNT indexScanCount every indexScanEvery-th
// janitor visit of a shard (about 0.8 ms of Redis time a call on a node
// of a million keys); foundMax bounds the keys it keeps for the next
// indexes phase (more are found on the next scan).
const (
	indexScanCount = 1000
	indexScanEvery = 10
	foundMax       = 1024
)

// repairWalk is one shard's place in the walk. Each instance keeps its own;
// an instance that wins a shard's lease after another goes round from where
// it last was, so a pass may take longer, never less.
type repairWalk struct {
	mu     sync.Mutex
	phase  int
	cursor uint64
	keys   []indexKey // phaseIndexes: the shard's index keys, and which
	key    int
	// the index scan: its cursor, the visits that count to its next call,
	// the keys it found that the stats did not name (phaseIndexes checks
	// them too), and, during a scan, the keys already known
	scan   uint64
	visits int
	found  []indexKey
	named  map[string]bool
}

type indexKey struct{ key, kind, mode, region string }

type repairWalks struct {
	mu sync.Mutex
	m  map[int]*repairWalk
	// the index scan's SCAN COUNT and how many visits apart its calls are:
	// indexScanCount and indexScanEvery (tests on a node shared with many
	// others' keys make it quicker)
	scanCount, scanEvery int
}

func newRepairWalks() *repairWalks {
	return &repairWalks{m: map[int]*repairWalk{}, scanCount: indexScanCount, scanEvery: indexScanEvery}
}

func (r *repairWalks) get(shard int) *repairWalk {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[shard] == nil {
		r.m[shard] = &repairWalk{}
	}
	return r.m[shard]
}

// repair does one step of shard's repair walk, adding what it repaired to
// rep as "repair_<what>": index, user_index, code, schedule, stats.
func (s *Store) repair(ctx context.Context, shard int, rep Report) error {
	w := s.repairs.get(shard)
	w.mu.Lock()
	defer w.mu.Unlock()
	var next uint64
	var err error
	switch w.phase {
	case phaseRooms:
		next, err = s.repairRooms(ctx, shard, w.cursor, rep)
	case phaseUsers:
		next, err = s.repairUsers(ctx, shard, w.cursor, rep)
	case phaseCodes:
		next, err = s.repairCodes(ctx, shard, w.cursor, rep)
	case phaseIndexes:
		next, err = s.repairIndexes(ctx, shard, w, rep)
	case phaseStats:
		err = s.repairStats(ctx, shard, rep)
	}
	if err != nil {
		return err
	}
	w.cursor = next
	if next == 0 && (w.phase != phaseIndexes || w.key >= len(w.keys)) {
		w.phase, w.keys, w.key = (w.phase+1)%phases, nil, 0
	}
	if w.visits++; w.visits%s.repairs.scanEvery == 0 {
		return s.scanIndexes(ctx, shard, w)
	}
	return nil
}

func (s *Store) repairRooms(ctx context.Context, shard int, cursor uint64, rep Report) (uint64, error) {
	page, next, err := s.client.ZScan(ctx, s.keys.RoomsDue(shard), cursor, "", repairBudget).Result()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	for i := 0; i < len(page); i += 2 {
		id := page[i]
		_, scope, err := s.scopeOf(ctx, id)
		if errors.Is(err, rooms.ErrRoomNotFound) {
			n, err := s.client.ZRem(ctx, s.keys.RoomsDue(shard), id).Result()
			if err != nil {
				return 0, redisx.Wrap(err)
			}
			rep.Add("repair_schedule", int(n))
			continue
		}
		if err != nil {
			return 0, err
		}
		rest, err := s.result(ctx, roomRepairCall{scope})
		if err != nil {
			return 0, err
		}
		for _, kind := range rest {
			rep.Add("repair_"+kind.(string), 1)
		}
	}
	return next, nil
}

func (s *Store) repairUsers(ctx context.Context, shard int, cursor uint64, rep Report) (uint64, error) {
	page, next, err := s.client.HScan(ctx, s.keys.UserIndex(shard), cursor, "", repairBudget).Result()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	call := userRepairCall{index: s.keys.UserIndex(shard), schedule: s.keys.RoomsDue(shard)}
	for i := 0; i+1 < len(page); i += 2 {
		for _, id := range strings.Fields(page[i+1]) {
			call.entries = append(call.entries, userEntry{user: page[i], room: id, roomHash: s.keys.Room(shard, id)})
		}
	}
	if len(call.entries) == 0 {
		return next, nil
	}
	res, err := s.runner.Run(ctx, call).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	rep.Add("repair_user_index", int(res[0]))
	rep.Add("repair_schedule", int(res[1]))
	return next, nil
}

func (s *Store) repairCodes(ctx context.Context, shard int, cursor uint64, rep Report) (uint64, error) {
	page, next, err := s.client.HScan(ctx, s.keys.Codes(shard), cursor, "", repairBudget).Result()
	if err != nil || len(page) == 0 {
		return next, redisx.Wrap(err)
	}
	call := codeRepairCall{codes: s.keys.Codes(shard), schedule: s.keys.RoomsDue(shard)}
	for i := 0; i+1 < len(page); i += 2 {
		call.entries = append(call.entries, codeEntry{code: page[i], room: page[i+1], roomHash: s.keys.Room(shard, page[i+1])})
	}
	n, err := s.runner.Run(ctx, call).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	rep.Add("repair_code", int(n[0]))
	rep.Add("repair_schedule", int(n[1]))
	return next, nil
}

// repairIndexes checks one page of the current index key, moving to the
// next key when that one is done.
func (s *Store) repairIndexes(ctx context.Context, shard int, w *repairWalk, rep Report) (uint64, error) {
	if w.keys == nil {
		keys, err := s.indexKeysOf(ctx, shard)
		if err != nil {
			return 0, err
		}
		w.keys, w.key, w.found = append(keys, w.found...), 0, nil
	}
	if w.key >= len(w.keys) {
		return 0, nil
	}
	k := w.keys[w.key]
	page, next, err := s.client.ZScan(ctx, k.key, w.cursor, "", repairBudget).Result()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	if next == 0 {
		w.key++
	}
	if len(page) == 0 {
		return next, nil
	}
	entries := make([]string, 0, len(page)/2)
	for i := 0; i < len(page); i += 2 {
		entries = append(entries, page[i])
	}
	n, err := s.runner.Run(ctx, s.indexCheck(shard, k, entries)).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	rep.Add("repair_index", int(n[0]))
	rep.Add("repair_schedule", int(n[1]))
	return next, nil
}

// indexCheck is index_repair.lua over entries of index k of shard (room
// ids; fill members for a fill index).
func (s *Store) indexCheck(shard int, k indexKey, entries []string) indexRepairCall {
	call := indexRepairCall{index: k, schedule: s.keys.RoomsDue(shard), entries: entries}
	for _, e := range entries {
		id := e
		if k.kind == "fill" {
			id = layout.FillID(e)
		}
		call.roomHashes = append(call.roomHashes, s.keys.Room(shard, id))
	}
	return call
}

// checkIndex runs indexCheck when there are entries, reporting nothing
// (quick-join's repairs on its way).
func (s *Store) checkIndex(ctx context.Context, shard int, k indexKey, entries []string) error {
	if len(entries) == 0 {
		return nil
	}
	return redisx.Wrap(s.runner.Run(ctx, s.indexCheck(shard, k, entries)).Err())
}

// scanIndexes makes one SCAN call of the index scan on the node of shard:
// the index keys of the shard that indexKeysOf does not list are kept in
// w.found, for the next indexes phase.
func (s *Store) scanIndexes(ctx context.Context, shard int, w *repairWalk) error {
	if w.scan == 0 || w.named == nil { // a scan starts
		keys, err := s.indexKeysOf(ctx, shard)
		if err != nil {
			return err
		}
		w.named = make(map[string]bool, len(keys)+len(w.found))
		for _, k := range append(keys, w.found...) {
			w.named[k.key] = true
		}
	}
	node, err := s.nodeOf(ctx, shard)
	if err != nil {
		return err
	}
	page, next, err := node.Scan(ctx, w.scan, rediskeys.GlobEscape(s.keys.Tag(shard)+":idx:")+"*", int64(s.repairs.scanCount)).Result()
	if err != nil {
		return redisx.Wrap(err)
	}
	for _, key := range page {
		if k, ok := s.parseIndexKey(shard, key); ok && !w.named[key] && len(w.found) < foundMax {
			w.found, w.named[key] = append(w.found, k), true
		}
	}
	w.scan = next
	return nil
}

// nodeOf is the client of the node that holds shard's slot: the Cluster
// master of its tag, or the one server.
func (s *Store) nodeOf(ctx context.Context, shard int) (redis.UniversalClient, error) {
	cc, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return s.client, nil
	}
	n, err := cc.MasterForKey(ctx, s.keys.Tag(shard))
	return n, redisx.Wrap(err)
}

// parseIndexKey reads an index key of shard, "<tag>:idx:<kind>[:mode:<m>]
// [:region:<r>]"; false for any other key (the key must be exactly what
// layout.Keys names for what it reads).
func (s *Store) parseIndexKey(shard int, key string) (indexKey, bool) {
	rest, ok := strings.CutPrefix(key, s.keys.Tag(shard)+":idx:")
	if !ok {
		return indexKey{}, false
	}
	kind, rest, _ := strings.Cut(rest, ":")
	var mode, region string
	if m, ok := strings.CutPrefix(rest, "mode:"); ok {
		mode, rest, _ = strings.Cut(m, ":")
	}
	if r, ok := strings.CutPrefix(rest, "region:"); ok {
		region = r
	}
	k := indexKey{key: key, kind: kind, mode: mode, region: region}
	known := slices.Contains(layout.IndexStatuses[:], rooms.Status(kind))
	return k, known && s.keys.StatusIndex(shard, rooms.Status(kind), mode, region) == key
}

// indexKeysOf lists shard's index keys: the shard-wide ones, and those of
// each mode and region the shard's stats name (a pair's keys only in its
// stripes, every recorded configuration's).
func (s *Store) indexKeysOf(ctx context.Context, shard int) ([]indexKey, error) {
	fields, err := s.client.HKeys(ctx, s.keys.Stats(shard)).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	modes, regions := map[string]bool{}, map[string]bool{}
	for _, f := range fields {
		parts := strings.Split(f, ":")
		if len(parts) == 3 && parts[0] == "m" {
			modes[parts[1]] = true
		}
		if len(parts) == 3 && parts[0] == "r" {
			regions[parts[1]] = true
		}
	}
	var out []indexKey
	add := func(mode, region string) {
		for _, kind := range []rooms.Status{rooms.Waiting, rooms.Playing, rooms.Finished, "joinable", "fill"} {
			out = append(out, indexKey{key: s.keys.StatusIndex(shard, kind, mode, region), kind: string(kind), mode: mode, region: region})
		}
	}
	add("", "")
	for m := range modes {
		add(m, "")
		for r := range regions {
			if slices.Contains(s.stripes.ReadShards(m, r), shard) {
				add(m, r)
			}
		}
	}
	for r := range regions {
		add("", r)
	}
	return out, nil
}

// repairStats recounts the shard's stats from its rooms and corrects the
// fields that differ, in one optimistic transaction: any change to the
// stats or to the set of rooms meanwhile aborts it (tried again next pass).
func (s *Store) repairStats(ctx context.Context, shard int, rep Report) error {
	statsKey, dueKey := s.keys.Stats(shard), s.keys.RoomsDue(shard)
	err := s.client.Watch(ctx, func(tx *redis.Tx) error {
		ids, err := tx.ZRange(ctx, dueKey, 0, statsCheckMax).Result()
		if err != nil || len(ids) > statsCheckMax {
			return err
		}
		cmds := make([]*redis.SliceCmd, len(ids))
		var have *redis.MapStringStringCmd
		if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HMGet(ctx, s.keys.Room(shard, id), "st", "m", "r", "pc")
			}
			have = p.HGetAll(ctx, statsKey)
			return nil
		}); err != nil {
			return err
		}
		want := map[string]int{}
		for _, c := range cmds {
			v := c.Val()
			st, _ := v[0].(string)
			if st == "" {
				continue // closed since the schedule was read: WATCH catches it
			}
			mode, _ := v[1].(string)
			region, _ := v[2].(string)
			pc, _ := v[3].(string)
			want["players"] += layout.Atoi(pc)
			want["rooms:"+st]++
			want["m:"+mode+":"+st]++
			want["r:"+region+":"+st]++
		}
		fix := map[string]int{}
		for f, n := range want {
			if n != 0 && strconv.Itoa(n) != have.Val()[f] {
				fix[f] = n
			}
		}
		for f := range have.Val() {
			if want[f] == 0 {
				fix[f] = 0
			}
		}
		if len(fix) == 0 {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for f, n := range fix {
				if n == 0 {
					p.HDel(ctx, statsKey, f)
				} else {
					p.HSet(ctx, statsKey, f, n)
				}
			}
			return nil
		})
		if err == nil {
			rep.Add("repair_stats", len(fix))
		}
		return err
	}, statsKey, dueKey)
	if errors.Is(err, redis.TxFailedErr) {
		return nil
	}
	return redisx.Wrap(err)
}

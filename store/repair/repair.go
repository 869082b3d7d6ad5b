// Package repair is the janitor's repair walk: each visit of a shard
// checks one bounded page of the shard's structures against its rooms and
// repairs what drifted (a fault, a script of an older release, a write
// lost mid-way): the rooms' own entries (by their script, Config.Room),
// the user index, the invite codes, every index key and the stats, phase
// after phase, so a walk's cost per visit is bounded whatever the data.
// Quick-join repairs the index entries it finds gone with Check.
package repair

import (
	"context"
	_ "embed"
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
	"github.com/realsync/realsync/store/janitor"
)

// Config is what the walk reads and repairs with.
type Config struct {
	// Base runs the walk's reads and scripts (its Client: the shards' masters).
	Base *redisx.Base
	// Keys names the shards' keys; Stripes says which shards hold a (mode,
	// region)'s indexes.
	Keys    layout.Keys
	Stripes *layout.Placement
	// Room repairs room id of shard with the room's own script (its index
	// entries, user index, code and schedule as the room says) and returns
	// the kinds of what it repaired; rooms.ErrRoomNotFound when the room
	// is gone (its schedule entry is then dropped here).
	Room func(ctx context.Context, shard int, id string) ([]string, error)
}

//go:embed lua/index_repair.lua
var indexRepairLua string

//go:embed lua/user_repair.lua
var userRepairLua string

//go:embed lua/code_repair.lua
var codeRepairLua string

var (
	indexRepair = redisx.Plain("index_repair", layout.FillLua("index_repair.lua", indexRepairLua))
	userRepair  = redisx.Plain("user_repair", userRepairLua)
	codeRepair  = redisx.Plain("code_repair", codeRepairLua)
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
// codes (invite codes of rooms gone), create keys (keyed creates' entries
// of rooms gone: an older release's close leaves them), indexes (every
// index key of the
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
	phaseCreateKeys
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
	keys   []Index // phaseIndexes: the shard's index keys, and which
	key    int
	// the index scan: its cursor, the visits that count to its next call,
	// the keys it found that the stats did not name (phaseIndexes checks
	// them too), and, during a scan, the keys already known
	scan   uint64
	visits int
	found  []Index
	named  map[string]bool
}

// Index is an index key of a shard and what it indexes: Kind is a room
// status, "joinable" or "fill"; Mode and Region are "" for the
// shard-wide (or mode-wide) index.
type Index struct{ Key, Kind, Mode, Region string }

// Walks is every shard's place in the repair walk, this instance's own;
// safe for concurrent use.
type Walks struct {
	cfg Config
	mu  sync.Mutex
	m   map[int]*repairWalk
	// the index scan's SCAN COUNT and how many visits apart its calls are:
	// indexScanCount and indexScanEvery (tests on a node shared with many
	// others' keys make it quicker)
	scanCount, scanEvery int
}

// New returns the walks of cfg, every shard at its beginning.
func New(cfg Config) *Walks {
	return &Walks{cfg: cfg, m: map[int]*repairWalk{}, scanCount: indexScanCount, scanEvery: indexScanEvery}
}

// SetIndexScan makes the index scan SCAN count keys a call, every
// every-th visit of a shard (tests on a node that holds many others'
// keys).
func (s *Walks) SetIndexScan(count, every int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scanCount, s.scanEvery = count, every
}

func (s *Walks) get(shard int) *repairWalk {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[shard] == nil {
		s.m[shard] = &repairWalk{}
	}
	return s.m[shard]
}

// Step does one step of shard's repair walk, adding what it repaired to
// rep as "repair_<what>": index, user_index, code, schedule, stats, and
// the kinds Config.Room reports.
func (s *Walks) Step(ctx context.Context, shard int, rep janitor.Report) error {
	w := s.get(shard)
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
		next, err = s.repairCodes(ctx, shard, s.cfg.Keys.Codes(shard), "cd", "repair_code", w.cursor, rep)
	case phaseCreateKeys:
		next, err = s.repairCodes(ctx, shard, s.cfg.Keys.CreateKeys(shard), "ck", "repair_create_key", w.cursor, rep)
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
	if w.visits++; w.visits%s.every() == 0 {
		return s.scanIndexes(ctx, shard, w)
	}
	return nil
}

func (s *Walks) repairRooms(ctx context.Context, shard int, cursor uint64, rep janitor.Report) (uint64, error) {
	page, next, err := s.page(ctx, func(p redis.Pipeliner) *redis.ScanCmd {
		return p.ZScan(ctx, s.cfg.Keys.RoomsDue(shard), cursor, "", repairBudget)
	})
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(page); i += 2 {
		id := page[i]
		kinds, err := s.cfg.Room(ctx, shard, id)
		if errors.Is(err, rooms.ErrRoomNotFound) {
			n, err := s.cfg.Base.Client.ZRem(ctx, s.cfg.Keys.RoomsDue(shard), id).Result()
			if err != nil {
				return 0, redisx.Wrap(err)
			}
			rep.Add("repair_schedule", int(n))
			continue
		}
		if err != nil {
			return 0, err
		}
		for _, kind := range kinds {
			rep.Add("repair_"+kind, 1)
		}
	}
	return next, nil
}

func (s *Walks) repairUsers(ctx context.Context, shard int, cursor uint64, rep janitor.Report) (uint64, error) {
	page, next, err := s.page(ctx, func(p redis.Pipeliner) *redis.ScanCmd {
		return p.HScan(ctx, s.cfg.Keys.UserIndex(shard), cursor, "", repairBudget)
	})
	if err != nil {
		return 0, err
	}
	call := userRepairCall{index: s.cfg.Keys.UserIndex(shard), schedule: s.cfg.Keys.RoomsDue(shard)}
	for i := 0; i+1 < len(page); i += 2 {
		for _, id := range strings.Fields(page[i+1]) {
			call.entries = append(call.entries, userEntry{user: page[i], room: id, roomHash: s.cfg.Keys.Room(shard, id)})
		}
	}
	if len(call.entries) == 0 {
		return next, nil
	}
	res, err := s.cfg.Base.Runner.Run(ctx, call).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	rep.Add("repair_user_index", int(res[0]))
	rep.Add("repair_schedule", int(res[1]))
	return next, nil
}

// repairCodes checks one page of hash, the shard's invite codes (field
// "cd" of their rooms) or create keys ("ck"), against the rooms; what it
// drops counts as kind.
func (s *Walks) repairCodes(ctx context.Context, shard int, hash, field, kind string, cursor uint64, rep janitor.Report) (uint64, error) {
	page, next, err := s.page(ctx, func(p redis.Pipeliner) *redis.ScanCmd { return p.HScan(ctx, hash, cursor, "", repairBudget) })
	if err != nil || len(page) == 0 {
		return next, err
	}
	call := codeRepairCall{codes: hash, field: field, schedule: s.cfg.Keys.RoomsDue(shard)}
	for i := 0; i+1 < len(page); i += 2 {
		call.entries = append(call.entries, codeEntry{code: page[i], room: page[i+1], roomHash: s.cfg.Keys.Room(shard, page[i+1])})
	}
	n, err := s.cfg.Base.Runner.Run(ctx, call).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	rep.Add(kind, int(n[0]))
	rep.Add("repair_schedule", int(n[1]))
	return next, nil
}

// repairIndexes checks one page of the current index key, moving to the
// next key when that one is done.
func (s *Walks) repairIndexes(ctx context.Context, shard int, w *repairWalk, rep janitor.Report) (uint64, error) {
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
	page, next, err := s.page(ctx, func(p redis.Pipeliner) *redis.ScanCmd { return p.ZScan(ctx, k.Key, w.cursor, "", repairBudget) })
	if err != nil {
		return 0, err
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
	n, err := s.cfg.Base.Runner.Run(ctx, s.indexCheck(shard, k, entries)).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	rep.Add("repair_index", int(n[0]))
	rep.Add("repair_schedule", int(n[1]))
	return next, nil
}

// page reads one SCAN-family page with redisx.Read, batched with the
// pages of the other shards' visits bound for the same node (alone, each
// was a round trip a shard and visit: most of an idle instance's upkeep
// at a thousand shards).
func (s *Walks) page(ctx context.Context, scan func(p redis.Pipeliner) *redis.ScanCmd) ([]string, uint64, error) {
	var cmd *redis.ScanCmd
	if err := redisx.Read(ctx, s.cfg.Base.Client, func(p redis.Pipeliner) { cmd = scan(p) }); err != nil {
		return nil, 0, err
	}
	page, next := cmd.Val()
	return page, next, nil
}

// indexCheck is index_repair.lua over entries of index k of shard (room
// ids; fill members for a fill index).
func (s *Walks) indexCheck(shard int, k Index, entries []string) indexRepairCall {
	call := indexRepairCall{index: k, schedule: s.cfg.Keys.RoomsDue(shard), entries: entries}
	for _, e := range entries {
		id := e
		if k.Kind == "fill" {
			id = layout.FillID(e)
		}
		call.roomHashes = append(call.roomHashes, s.cfg.Keys.Room(shard, id))
	}
	return call
}

// Check runs index_repair.lua over entries of index k of shard when there
// are any, reporting nothing (quick-join's repairs on its way): entries of
// rooms gone or no longer belonging to k leave it.
func (s *Walks) Check(ctx context.Context, shard int, k Index, entries []string) error {
	if len(entries) == 0 {
		return nil
	}
	return redisx.Wrap(s.cfg.Base.Runner.Run(ctx, s.indexCheck(shard, k, entries)).Err())
}

// scanIndexes makes one SCAN call of the index scan on the node of shard:
// the index keys of the shard that indexKeysOf does not list are kept in
// w.found, for the next indexes phase.
func (s *Walks) scanIndexes(ctx context.Context, shard int, w *repairWalk) error {
	if w.scan == 0 || w.named == nil { // a scan starts
		keys, err := s.indexKeysOf(ctx, shard)
		if err != nil {
			return err
		}
		w.named = make(map[string]bool, len(keys)+len(w.found))
		for _, k := range append(keys, w.found...) {
			w.named[k.Key] = true
		}
	}
	node, err := s.nodeOf(ctx, shard)
	if err != nil {
		return err
	}
	page, next, err := node.Scan(ctx, w.scan, rediskeys.GlobEscape(s.cfg.Keys.Tag(shard)+":idx:")+"*", int64(s.count())).Result()
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
func (s *Walks) nodeOf(ctx context.Context, shard int) (redis.UniversalClient, error) {
	cc, ok := s.cfg.Base.Client.(*redis.ClusterClient)
	if !ok {
		return s.cfg.Base.Client, nil
	}
	n, err := cc.MasterForKey(ctx, s.cfg.Keys.Tag(shard))
	return n, redisx.Wrap(err)
}

// parseIndexKey reads an index key of shard, "<tag>:idx:<kind>[:mode:<m>]
// [:region:<r>]"; false for any other key (the key must be exactly what
// layout.Keys names for what it reads).
func (s *Walks) parseIndexKey(shard int, key string) (Index, bool) {
	rest, ok := strings.CutPrefix(key, s.cfg.Keys.Tag(shard)+":idx:")
	if !ok {
		return Index{}, false
	}
	kind, rest, _ := strings.Cut(rest, ":")
	var mode, region string
	if m, ok := strings.CutPrefix(rest, "mode:"); ok {
		mode, rest, _ = strings.Cut(m, ":")
	}
	if r, ok := strings.CutPrefix(rest, "region:"); ok {
		region = r
	}
	k := Index{Key: key, Kind: kind, Mode: mode, Region: region}
	known := slices.Contains(layout.IndexStatuses[:], rooms.Status(kind))
	return k, known && s.cfg.Keys.StatusIndex(shard, rooms.Status(kind), mode, region) == key
}

// indexKeysOf lists shard's index keys: the shard-wide ones, and those of
// each mode and region the shard's stats name (a pair's keys only in its
// stripes, every recorded configuration's).
func (s *Walks) indexKeysOf(ctx context.Context, shard int) ([]Index, error) {
	var cmd *redis.StringSliceCmd
	if err := redisx.Read(ctx, s.cfg.Base.Client, func(p redis.Pipeliner) { cmd = p.HKeys(ctx, s.cfg.Keys.Stats(shard)) }); err != nil {
		return nil, err
	}
	fields := cmd.Val()
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
	var out []Index
	add := func(mode, region string) {
		for _, kind := range []rooms.Status{rooms.Waiting, rooms.Playing, rooms.Finished, "joinable", "fill"} {
			out = append(out, Index{Key: s.cfg.Keys.StatusIndex(shard, kind, mode, region), Kind: string(kind), Mode: mode, Region: region})
		}
	}
	add("", "")
	for m := range modes {
		add(m, "")
		for r := range regions {
			if slices.Contains(s.cfg.Stripes.ReadShards(m, r), shard) {
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
// A shard with no room and no stats has nothing to recount: one batched
// read (as page) says so, not the transaction's four round trips.
func (s *Walks) repairStats(ctx context.Context, shard int, rep janitor.Report) error {
	statsKey, dueKey := s.cfg.Keys.Stats(shard), s.cfg.Keys.RoomsDue(shard)
	var room, stats *redis.StringSliceCmd
	if err := redisx.Read(ctx, s.cfg.Base.Client, func(p redis.Pipeliner) {
		room, stats = p.ZRange(ctx, dueKey, 0, 0), p.HKeys(ctx, statsKey)
	}); err != nil {
		return err
	}
	if len(room.Val()) == 0 && len(stats.Val()) == 0 {
		return nil
	}
	err := s.cfg.Base.Client.Watch(ctx, func(tx *redis.Tx) error {
		ids, err := tx.ZRange(ctx, dueKey, 0, statsCheckMax).Result()
		if err != nil || len(ids) > statsCheckMax {
			return err
		}
		cmds := make([]*redis.SliceCmd, len(ids))
		var have *redis.MapStringStringCmd
		if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = p.HMGet(ctx, s.cfg.Keys.Room(shard, id), "st", "m", "r", "pc")
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

// count and every are the index scan's SCAN COUNT and visits between calls.
func (s *Walks) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scanCount
}

func (s *Walks) every() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scanEvery
}

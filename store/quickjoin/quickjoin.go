// Package quickjoin is the store's quick-join (rooms.Matchmaker): the
// fullest joinable room of a mode in its regions' stripes, picked and
// joined in one script (quick_join.lua, a function of the rooms' library,
// store/internal/roomlua) where one region is asked, read then joined
// where several are, created when none is joinable; a user's quick-joins
// one at a time.
package quickjoin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/holdings"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
	"github.com/realsync/realsync/store/repair"
)

// Config is what a quick-join is made of: the store's clients and layout,
// the room quotas and the repair walk it checks its picks with, and the
// rooms' own operations (the store's) it ends in when quick_join.lua does
// not do it all (several regions, attribute filters no room matched).
type Config struct {
	Client  redis.UniversalClient
	Runner  *redisx.Runner // runs quick_join.lua and the lock's release
	Keys    layout.Keys
	Shards  int
	Stripes *layout.Placement
	Env     roomlua.Env // quick_join.lua's scope
	Held    *holdings.Holdings
	Repairs *repair.Walks

	// Join joins u into room id, the quick-join's pick (rooms.Store.Join,
	// but a room that kicked u refuses them as rooms.ErrBanned).
	Join func(ctx context.Context, u rooms.User, id string) (rooms.Joined, error)
	// Create creates room p owned by u; with onlyIfNone it is refused
	// (roomlua.ErrJoinableExists) while a joinable room of its mode and
	// region exists.
	Create func(ctx context.Context, u rooms.User, p rooms.NewRoom, onlyIfNone bool) (rooms.Joined, error)
	// NewRoom is room_create.lua's arguments of room p by u, with the
	// encoded attributes, the state's size and the invite code.
	NewRoom func(u rooms.User, p rooms.NewRoom, attrs []byte, size int, code string, onlyIfNone bool) roomlua.NewRoom
	// Read reads room id of shard, from its master.
	Read func(ctx context.Context, shard int, id string) (rooms.Room, error)
	// UserRooms are the rooms user u is in on shards, as the shards' user
	// indexes say.
	UserRooms func(ctx context.Context, u rooms.User, shards []int) ([]string, error)
}

// QuickJoin places players into the fullest joinable room of a mode and
// its regions, or creates one (rooms.Matchmaker). Safe for concurrent use.
type QuickJoin struct{ Config }

// New is the quick-join of cfg.
func New(cfg Config) *QuickJoin { return &QuickJoin{cfg} }

// maxQuickJoinAttempts bounds the retries of a quick-join whose pick was
// taken (filled, locked, closed) before it could join.
const maxQuickJoinAttempts = 32

// maxPassedOver bounds the rooms a quick-join into several regions passes
// over for having banned or kicked its caller (each a read and a join
// refused, the reads deeper by one each time): past them, the rooms left
// count as none, as past the 256 entries the one-region script walks.
const maxPassedOver = 64

var _ rooms.Matchmaker = (*QuickJoin)(nil)

// QuickJoin implements rooms.Matchmaker. Every joinable room of a (mode,
// region) is in that pair's fill index in its stripe (layout.Placement; with
// K = 1 the home shard, the only one), so picking the best room of a
// stripe and creating one only when none is joinable there are decided on
// one node. With one region, picking and joining are one script there
// (quick_join.lua, pickAndJoin): concurrent callers never lose a race for
// the same room, so none retries. With several regions or none, the best
// room is read first and joined after (the join script re-checks it; a
// caller that lost it reads again, up to maxQuickJoinAttempts times). The
// create script refuses while the fill index holds a room that exists
// (entries of rooms gone are dropped on the way: a fault may leave
// them). Concurrent
// callers of one bucket therefore pack rooms: N callers, rooms of M seats
// → ceil(N/M) rooms with K = 1, at most ceil(N/M) + K − 1 over K stripes.
// A room that banned or kicked u is passed over, and then creating is not
// held back by joinable rooms: a banned or kicked user is never placed in
// the room (they may join a room that kicked them by id or code), and
// packing holds for the others.
func (q *QuickJoin) QuickJoin(ctx context.Context, u rooms.User, mode string, regions []string, filters []rooms.AttrFilter, create *rooms.NewRoom) (rooms.QuickJoined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.QuickJoined{}, err
	}
	// with the room quotas on, a quick-join into one region reserves its
	// room under a placeholder with the lock (pickAndJoin); into several,
	// the store's Join or Create reserves
	l, err := q.begin(ctx, u.ID, len(regions) == 1 && q.Held.On(), create != nil)
	if err != nil {
		return rooms.QuickJoined{}, err
	}
	defer q.end(ctx, l)
	if j, ok, err := q.memberOf(ctx, u, mode, regions, filters); err != nil || ok {
		return rooms.QuickJoined{Joined: j}, err
	}
	if err := q.reserve(ctx, l); err != nil {
		return rooms.QuickJoined{}, err
	}
	if len(regions) == 1 {
		return q.quickJoinOne(ctx, l, u, mode, regions[0], filters, create)
	}
	skip, banned, passed := map[string]bool{}, false, 0
	for races := 0; races < maxQuickJoinAttempts; {
		c, seen, err := q.bestJoinable(ctx, mode, regions, filters, skip)
		if err != nil {
			return rooms.QuickJoined{}, err
		}
		if passed >= maxPassedOver && c.pos.ID != "" {
			// past so many rooms that banned or kicked u, the rest count
			// as none: create, or NO_MATCH
			c, seen = candidate{}, 0
		}
		if id := c.pos.ID; id != "" {
			j, err := q.Join(ctx, u, id)
			switch {
			case errors.Is(err, rooms.ErrBanned):
				skip[id], banned, passed = true, true, passed+1
				continue
			case taken(err):
				races++
				// filled, locked or gone since the read, or an entry a fault
				// left: passed over, and the entries of that index's head
				// whose room is gone or no longer belongs there dropped (the
				// next callers, and this one's next read, need not)
				skip[id] = true
				if c.pos.Key != "" {
					if err := q.dropGoneHead(ctx, mode, c); err != nil {
						return rooms.QuickJoined{}, err
					}
				}
				continue
			}
			return rooms.QuickJoined{Joined: j}, err
		}
		if create == nil {
			stage := stageNoRoom
			switch {
			case seen > 0:
				stage = stageFilters
			case banned:
				stage = stageBanned
			}
			return rooms.QuickJoined{}, noMatch(mode, regions, stage)
		}
		j, err := q.Create(ctx, u, *create, len(filters) == 0 && !banned)
		if errors.Is(err, roomlua.ErrJoinableExists) {
			races++
			continue
		}
		return rooms.QuickJoined{Joined: j, Created: err == nil}, err
	}
	return rooms.QuickJoined{}, fmt.Errorf("%w: quick-join lost %d races in a row", rooms.ErrUnavailable, maxQuickJoinAttempts)
}

// joinOtherStripe runs a join-only pickAndJoin on each stripe of (mode,
// region) but tried, until one joins (or asks to be read again: pickTaken);
// outcome is tried's (none or noneBanned), worsened to noneBanned when a
// stripe passed over a ban or a kick.
func (q *QuickJoin) joinOtherStripe(ctx context.Context, l *userHold, u rooms.User, tried int, mode, region string, outcome pickOutcome) (rooms.QuickJoined, pickOutcome, error) {
	for _, sh := range q.Stripes.ReadShards(mode, region) {
		if sh == tried {
			continue
		}
		j, o, err := q.pickAndJoin(ctx, l, u, sh, mode, region, nil, nil)
		if err != nil || o == picked || o == pickTaken { // taken: read again
			return j, o, err
		}
		if o == noneBanned {
			outcome = noneBanned
		}
	}
	return rooms.QuickJoined{}, outcome, nil
}

// The stages at which a quick-join found nothing, for NO_MATCH's detail.
const (
	stageNoRoom  = "no joinable room"
	stageBanned  = "no joinable room that did not ban or kick you"
	stageFilters = "no joinable room matching the attribute filters (among the first 64 in fill order)"
)

// noMatch is rooms.ErrNoMatch saying which stage emptied the candidates.
func noMatch(mode string, regions []string, stage string) error {
	where := "any region"
	if len(regions) > 0 {
		where = strings.Join(regions, ", ")
	}
	return fmt.Errorf("%s of mode %s in %s: %w", stage, mode, where, rooms.ErrNoMatch)
}

// quickJoinOne is QuickJoin into one region: pickAndJoin on one stripe of
// the (mode, region) (layout.Placement; the home shard with K = 1), which also
// creates the room when it finds nothing to join there. Without filters
// the stripe is one of the current configuration's, at random (a stripe
// no longer configured that still holds a joinable room goes first, so it
// drains): quick-joins spread evenly over the stripes' masters, and each
// stripe packs its own rooms, so at most K rooms of the pair are partly
// filled by quick-join at a time, and the room joined is the fullest of
// its stripe, not always the fullest of the pair (the tolerance: one of
// the K stripes' fullest rooms). With filters, the fullest matching room
// of all stripes is tried first. Only filter candidates that all stopped
// being joinable before the script ran, and a fresh room id or invite
// code that collided, go round again. With filters that no room of the
// fill order's top matches, the room is created as before (create).
func (q *QuickJoin) quickJoinOne(ctx context.Context, l *userHold, u rooms.User, mode, region string, filters []rooms.AttrFilter, create *rooms.NewRoom) (rooms.QuickJoined, error) {
	for range maxQuickJoinAttempts {
		var cands []string
		var shard, seen int
		var err error
		stage := stageNoRoom
		if len(filters) > 0 {
			shard, cands, seen, err = q.matching(ctx, mode, region, filters)
			if seen > 0 {
				stage = stageFilters
			}
		} else {
			shard, err = q.quickJoinShard(ctx, mode, region)
		}
		if err != nil {
			return rooms.QuickJoined{}, err
		}
		if len(filters) == 0 || len(cands) > 0 {
			offer := create
			if q.Stripes.Drained(mode, region, shard) {
				offer = nil // drained: join only
			}
			j, outcome, err := q.pickAndJoin(ctx, l, u, shard, mode, region, cands, offer)
			if err == nil && offer == nil && len(filters) == 0 && (outcome == none || outcome == noneBanned) {
				// nothing to join on that stripe: the others may have
				j, outcome, err = q.joinOtherStripe(ctx, l, u, shard, mode, region, outcome)
			}
			if outcome == noneBanned {
				stage = stageBanned
			}
			switch {
			case err != nil:
				return rooms.QuickJoined{}, err
			case outcome == picked:
				return j, nil
			case outcome == pickTaken:
				continue
			case offer == nil && create != nil && len(filters) == 0:
				// the drained stripe's rooms went meanwhile (or banned u):
				// a current stripe, which creates when it has none
				j, outcome, err = q.pickAndJoin(ctx, l, u, q.Stripes.RandomCreateShard(mode, region), mode, region, nil, create)
				switch {
				case err != nil:
					return rooms.QuickJoined{}, err
				case outcome == picked:
					return j, nil
				}
			}
		}
		if create == nil {
			return rooms.QuickJoined{}, noMatch(mode, []string{region}, stage)
		}
		// filters no room matched, or the script was not offered the
		// create (u owns all it may: create says so); the store's create
		// reserves the room it creates, so the placeholder goes first
		q.dropPlaceholder(ctx, l)
		j, err := q.Create(ctx, u, *create, false)
		return rooms.QuickJoined{Joined: j, Created: err == nil}, err
	}
	return rooms.QuickJoined{}, fmt.Errorf("%w: quick-join lost %d races in a row", rooms.ErrUnavailable, maxQuickJoinAttempts)
}

// quickJoinShard is the stripe an unfiltered quick-join into (mode,
// region) runs on: with one configuration recorded, one of its stripes at
// random (no read); else the stripe no longer configured whose fill
// index's head is fullest (one pipelined read of each such head), when any
// holds a joinable room, or one of the current stripes at random.
func (q *QuickJoin) quickJoinShard(ctx context.Context, mode, region string) (int, error) {
	cur, all := q.Stripes.CreateShards(mode, region), q.Stripes.ReadShards(mode, region)
	if len(all) == len(cur) { // cur ⊆ all
		return cur[rand.IntN(len(cur))], nil
	}
	var old []int
	for _, sh := range all {
		if !slices.Contains(cur, sh) {
			old = append(old, sh)
		}
	}
	heads := make([]*redis.StringSliceCmd, len(old))
	_, err := q.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sh := range old {
			heads[i] = p.ZRangeArgs(ctx, redis.ZRangeArgs{Key: q.Keys.FillIndex(sh, mode, region),
				ByLex: true, Start: "-", Stop: "+", Count: 1})
		}
		return nil
	})
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	best, bestKey := -1, ""
	for i, h := range heads {
		if v := h.Val(); len(v) > 0 && (best < 0 || v[0] < bestKey) {
			best, bestKey = old[i], v[0]
		}
	}
	if best >= 0 {
		return best, nil
	}
	return cur[rand.IntN(len(cur))], nil
}

// pickOutcome is what quick_join.lua did.
type pickOutcome int

const (
	picked     pickOutcome = iota // joined or created a room
	none                          // no joinable room, none created
	noneBanned                    // none, a room that banned or kicked the caller passed over
	pickTaken                     // every candidate stopped being joinable
)

// pickAndJoin runs quick_join.lua on shard, a stripe of (mode, region):
// u joins the first room of the stripe's fill order of the pair (of cands,
// rooms of that stripe, in order, when given) that did not ban or kick
// u, or, when there is none and create is given, creates it. With the room
// quotas on, l holds the reservation made with the quick-join's lock under
// a placeholder id (the room is not known yet), always as an owner, within
// the owned limit only when it may create (no create is offered when u
// owns all it may; holdings.ReservePlaceholder): the room picked is
// recorded in l, whose end turns the placeholder into the room's entry
// (holdings_rebind.lua), drops it when nothing was picked, or leaves it
// when the script's outcome is not known (it counts until a check of the
// holdings finds it stale and records the rooms the user is in).
// The room is read right after the script (not in its transaction: its id
// comes from the script), so it may show changes made in between.
func (q *QuickJoin) pickAndJoin(ctx context.Context, l *userHold, u rooms.User, shard int, mode, region string, cands []string, create *rooms.NewRoom) (rooms.QuickJoined, pickOutcome, error) {
	call := roomlua.QuickJoinCall{Env: q.Env, Shard: shard, Mode: mode, Region: region,
		User: u.ID, NameJSON: roomlua.JSONString(u.Name), Candidates: cands}
	if !l.mayCreate {
		create = nil // it may still join: as a member
	}
	for range roomlua.CollisionRetries {
		if create != nil {
			p := *create
			attrs, err := jsonout.Marshal(p.Attributes)
			if err != nil {
				return rooms.QuickJoined{}, none, fmt.Errorf("store: attributes: %w", err)
			}
			_, size := rooms.StateTotals(p.State)
			code := ""
			if p.Visibility == rooms.Private {
				code = layout.NewCode(shard, q.Shards)
			}
			call.CreateID, call.Create = layout.NewRoomID(shard), q.NewRoom(u, p, attrs, size, code, false)
		}
		rest, err := roomlua.Reply(q.Runner.Run(ctx, call))
		switch {
		case errors.Is(err, roomlua.ErrCodeTaken):
			continue
		case errors.Is(err, roomlua.ErrNothingPicked):
			return rooms.QuickJoined{}, none, nil
		case errors.Is(err, roomlua.ErrAllBanned):
			return rooms.QuickJoined{}, noneBanned, nil
		case errors.Is(err, roomlua.ErrPickTaken):
			return rooms.QuickJoined{}, pickTaken, nil
		case err == nil && len(rest) < 2:
			err = fmt.Errorf("store: unexpected quick_join reply %v", rest)
		}
		if err != nil {
			if taken(err) {
				// the pick and the join are one script: the stripe's
				// indexes named a room the join refused, which only a fault
				// leaves; repaired, read again
				if err := q.repairPick(ctx, shard, mode, region, cands); err != nil {
					return rooms.QuickJoined{}, none, err
				}
				return rooms.QuickJoined{}, pickTaken, nil
			}
			// the script may have joined: the placeholder keeps the count
			// (a check finds the room)
			l.keep = !roomlua.NotRun(err)
			return rooms.QuickJoined{}, none, err
		}
		id, _ := rest[1].(string)
		created := len(rest) > 2 && rest[2] == "created"
		l.room, l.created = id, created
		room, err := q.Read(ctx, shard, id)
		return rooms.QuickJoined{Joined: rooms.Joined{Room: room, PlayerID: int(layout.ToInt64(rest[0]))}, Created: created}, picked, err
	}
	return rooms.QuickJoined{}, none, fmt.Errorf("store: %d id collisions in a row", roomlua.CollisionRetries)
}

// matching returns the stripe of the first room, in fill order, among the
// top filteredCandidates of each of (mode, region)'s stripes' fill indexes
// whose attributes pass filters, and the matching rooms of that stripe in
// fill order (none: no room matched).
func (q *QuickJoin) matching(ctx context.Context, mode, region string, filters []rooms.AttrFilter) (shard int, ids []string, seen int, err error) {
	for range goneRereads {
		var gone int
		shard, ids, seen, gone, err = q.matchingOnce(ctx, mode, region, filters)
		if err != nil || len(ids) > 0 || gone == 0 {
			break
		}
	}
	return shard, ids, seen, err
}

// goneRereads bounds how often a filtered read of the fill indexes is read
// again because it found entries of rooms that are gone (dropped since).
const goneRereads = maxQuickJoinAttempts

// matchingOnce is one read of matching, also returning how many of the
// entries read were of rooms that are gone (and dropped).
func (q *QuickJoin) matchingOnce(ctx context.Context, mode, region string, filters []rooms.AttrFilter) (shard int, ids []string, seen, gone int, err error) {
	shards := q.Stripes.ReadShards(mode, region)
	tops := make([]*redis.StringSliceCmd, len(shards))
	_, err = q.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sh := range shards {
			tops[i] = p.ZRangeArgs(ctx, redis.ZRangeArgs{Key: q.Keys.FillIndex(sh, mode, region),
				ByLex: true, Start: "-", Stop: "+", Count: filteredCandidates})
		}
		return nil
	})
	if err != nil {
		return 0, nil, 0, 0, redisx.Wrap(err)
	}
	var cands []candidate
	for i, top := range tops {
		for _, m := range top.Val() {
			cands = append(cands, candidate{pos: lobby.Position{ID: layout.FillID(m), Key: m}, shard: shards[i], region: region})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].pos.Key < cands[j].pos.Key })
	ids, gone, err = q.allMatching(ctx, mode, cands, filters)
	if err != nil || len(ids) == 0 {
		return shards[0], nil, len(cands) - gone, gone, err
	}
	shard, _ = layout.RoomShard(ids[0], q.Shards)
	var out []string
	for _, id := range ids {
		if sh, _ := layout.RoomShard(id, q.Shards); sh == shard {
			out = append(out, id)
		}
	}
	return shard, out, len(cands) - gone, gone, nil
}

// candidate is a room read from the fill index of (mode, region) of shard
// (region "": the mode's), at pos.
type candidate struct {
	pos    lobby.Position
	shard  int
	region string
}

// taken: the picked room stopped being joinable before the join.
func taken(err error) bool {
	return errors.Is(err, rooms.ErrRoomFull) || errors.Is(err, rooms.ErrNotJoinable) || errors.Is(err, rooms.ErrRoomNotFound)
}

// filteredCandidates is how deep in each fill index a quick-join with
// attribute filters looks for a match.
const filteredCandidates = 64

// bestJoinable returns the first room of the fill order of mode in the
// first region that has one ("" when none): one pipelined read of the top
// of each region's fill index in each of its stripes (of every shard's mode
// index without regions). With filters it reads the top 64 of each and the candidates'
// attributes, and takes the first that matches. The rooms in skip are
// passed over (the top of each index is read that much deeper).
func (q *QuickJoin) bestJoinable(ctx context.Context, mode string, regions []string, filters []rooms.AttrFilter, skip map[string]bool) (c candidate, seen int, err error) {
	for range goneRereads {
		var gone int
		c, seen, gone, err = q.bestJoinableOnce(ctx, mode, regions, filters, skip)
		if err != nil || c.pos.ID != "" || gone == 0 {
			break
		}
	}
	return c, seen, err
}

// bestJoinableOnce is one read of bestJoinable, also returning how many of
// the entries read with filters were of rooms that are gone (and dropped).
func (q *QuickJoin) bestJoinableOnce(ctx context.Context, mode string, regions []string, filters []rooms.AttrFilter, skip map[string]bool) (_ candidate, seen, gone int, err error) {
	type index struct {
		shard, region int // region: its place in regions
		top           *redis.StringSliceCmd
	}
	var idx []index
	depth := int64(1)
	if len(filters) > 0 {
		depth = filteredCandidates
	}
	depth += int64(len(skip))
	_, err = q.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		read := func(shard int, region string, ri int) {
			idx = append(idx, index{shard, ri, p.ZRangeArgs(ctx, redis.ZRangeArgs{Key: q.Keys.FillIndex(shard, mode, region),
				ByLex: true, Start: "-", Stop: "+", Count: depth})})
		}
		if len(regions) == 0 {
			for shard := range q.Shards {
				read(shard, "", 0)
			}
		}
		for ri, r := range regions {
			for _, sh := range q.Stripes.ReadShards(mode, r) {
				read(sh, r, ri)
			}
		}
		return nil
	})
	if err != nil {
		return candidate{}, 0, 0, redisx.Wrap(err)
	}
	type entry struct {
		candidate
		region int
	}
	var es []entry
	for _, ix := range idx {
		for _, m := range ix.top.Val() {
			if !skip[layout.FillID(m)] {
				c := candidate{pos: lobby.Position{ID: layout.FillID(m), Key: m}, shard: ix.shard}
				if len(regions) > 0 {
					c.region = regions[ix.region]
				}
				es = append(es, entry{c, ix.region})
			}
		}
	}
	// in region order, each region (its stripes merged) in fill order
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].region != es[j].region {
			return es[i].region < es[j].region
		}
		return es[i].pos.Key < es[j].pos.Key
	})
	if len(filters) == 0 {
		if len(es) == 0 {
			return candidate{}, 0, 0, nil
		}
		return es[0].candidate, len(es), 0, nil
	}
	cands := make([]candidate, len(es))
	for i, e := range es {
		cands[i] = e.candidate
	}
	ids, gone, err := q.allMatching(ctx, mode, cands, filters)
	if err != nil || len(ids) == 0 {
		return candidate{}, len(cands) - gone, gone, err
	}
	return candidate{pos: lobby.Position{ID: ids[0]}}, len(cands) - gone, gone, nil
}

// goneHead is how many entries of a fill index's head dropGoneHead checks.
const goneHead = 64

// dropGoneHead removes from the fill index c was read from every entry of
// its head (goneHead entries) whose room is gone or does not belong there
// (index_repair.lua, which checks each in the script): a fault or an old
// release left them, and each would be every quick-join's first pick, one
// try at a time.
func (q *QuickJoin) dropGoneHead(ctx context.Context, mode string, c candidate) error {
	k := q.fillKey(c.shard, mode, c.region)
	head, err := q.Client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: k.Key, ByLex: true, Start: "-", Stop: "+", Count: goneHead}).Result()
	if err != nil {
		return redisx.Wrap(err)
	}
	return q.Repairs.Check(ctx, c.shard, k, head)
}

// repairPick repairs the indexes of (mode, region) on shard after its
// quick_join.lua picked a room the join refused: the fill index's head,
// and the candidates' entries in the joinable index (index_repair.lua
// drops what does not belong, whatever the reason).
func (q *QuickJoin) repairPick(ctx context.Context, shard int, mode, region string, cands []string) error {
	if err := q.dropGoneHead(ctx, mode, candidate{shard: shard, region: region}); err != nil {
		return err
	}
	joinable := repair.Index{Key: q.Keys.JoinableIndex(shard, mode, region), Kind: "joinable", Mode: mode, Region: region}
	return q.Repairs.Check(ctx, shard, joinable, cands)
}

// dropGone removes each of cands from the fill index of mode it was read
// from if its room is gone (index_repair.lua checks that, and leaves an
// entry of a room that exists as it should be), one script per index.
func (q *QuickJoin) dropGone(ctx context.Context, mode string, cands []candidate) error {
	entries := map[repair.Index][]string{}
	shards := map[repair.Index]int{}
	var order []repair.Index
	for _, c := range cands {
		k := q.fillKey(c.shard, mode, c.region)
		if _, ok := entries[k]; !ok {
			order, shards[k] = append(order, k), c.shard
		}
		entries[k] = append(entries[k], c.pos.Key)
	}
	for _, k := range order {
		if err := q.Repairs.Check(ctx, shards[k], k, entries[k]); err != nil {
			return err
		}
	}
	return nil
}

// fillKey is the fill index of (mode, region) in shard (region "": the
// mode's), as the repair script checks it.
func (q *QuickJoin) fillKey(shard int, mode, region string) repair.Index {
	return repair.Index{Key: q.Keys.FillIndex(shard, mode, region), Kind: "fill", Mode: mode, Region: region}
}

// allMatching reads the candidates' attributes in one pipeline and returns
// those that pass the filters, in order, and how many are gone (no room
// hash: their entries are dropped, dropGone).
func (q *QuickJoin) allMatching(ctx context.Context, mode string, cands []candidate, filters []rooms.AttrFilter) ([]string, int, error) {
	cmds := make([]*redis.StringCmd, len(cands))
	_, err := q.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cands {
			cmds[i] = p.HGet(ctx, q.Keys.Room(c.shard, c.pos.ID), "at")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, 0, redisx.Wrap(err)
	}
	var out []string
	var gone []candidate
	for i, c := range cands {
		if errors.Is(cmds[i].Err(), redis.Nil) {
			gone = append(gone, c)
			continue
		}
		var attrs map[string]any
		if layout.DecodeJSON(cmds[i].Val(), &attrs) == nil && rooms.MatchAll(filters, attrs) {
			out = append(out, c.pos.ID)
		}
	}
	return out, len(gone), q.dropGone(ctx, mode, gone)
}

// memberOf finds a room of mode, in one of regions (any without regions),
// not finished, that u is already in, and returns it as a join would. The
// rooms u may be in are read from the user index of every shard the pair's
// stripes (every shard, without regions) live on, the one record that
// never misses a room u is in (the holdings may, for a while: a lost reply
// or rebind); each is checked for u's membership. The room found gets its
// holdings entry (room quotas) whatever the limits, or keeps the one it
// has (holdings.Found, then Undo): u is in it already, and a quick-join
// whose reply was lost may not have recorded it. A room u left between
// the reads (another tab) is passed over, its entry as it was.
func (q *QuickJoin) memberOf(ctx context.Context, u rooms.User, mode string, regions []string, filters []rooms.AttrFilter) (rooms.Joined, bool, error) {
	var shards []int
	for _, r := range regions {
		for _, shard := range q.Stripes.ReadShards(mode, r) {
			if !slices.Contains(shards, shard) {
				shards = append(shards, shard)
			}
		}
	}
	if len(regions) == 0 {
		for shard := range q.Shards {
			shards = append(shards, shard)
		}
	}
	ids, err := q.UserRooms(ctx, u, shards)
	if err != nil || len(ids) == 0 {
		return rooms.Joined{}, false, err
	}
	fields := make([]*redis.SliceCmd, len(ids))
	pids := make([]*redis.StringCmd, len(ids))
	if _, err := q.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, q.Shards)
			fields[i] = p.HMGet(ctx, q.Keys.Room(shard, id), "m", "r", "st", "at", "ow")
			pids[i] = p.HGet(ctx, q.Keys.Room(shard, id)+":users", u.ID)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return rooms.Joined{}, false, redisx.Wrap(err)
	}
	for i, id := range ids {
		h, pid := fields[i].Val(), pids[i].Val()
		if len(h) < 5 || pid == "" {
			continue
		}
		var attrs map[string]any
		layout.DecodeJSON(fmt.Sprint(h[3]), &attrs)
		if h[0] != mode || (len(regions) > 0 && !slices.Contains(regions, fmt.Sprint(h[1]))) ||
			h[2] == string(rooms.Finished) || !rooms.MatchAll(filters, attrs) {
			continue
		}
		held, err := q.Held.Found(ctx, u.ID, id, h[4] == pid)
		if err != nil {
			return rooms.Joined{}, false, err
		}
		shard, _ := layout.RoomShard(id, q.Shards)
		room, err := q.Read(ctx, shard, id)
		if errors.Is(err, rooms.ErrRoomNotFound) { // closed meanwhile: the entry just made goes
			q.Held.Forget(ctx, held)
			continue
		}
		if err != nil {
			q.Held.Undo(ctx, held)
			return rooms.Joined{}, false, err
		}
		if !slices.ContainsFunc(room.Players, func(p rooms.Player) bool { return p.UserID == u.ID }) {
			// u left meanwhile (another tab): not this room, and not its
			// entry, which u's leave may have dropped before Found made it
			q.Held.Release(ctx, held)
			continue
		}
		q.Held.Undo(ctx, held)
		return rooms.Joined{Room: room, PlayerID: int(layout.Atoi64(pid))}, true, nil
	}
	return rooms.Joined{}, false, nil
}

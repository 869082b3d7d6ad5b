package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/holdings"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Quotas bound the rooms one user holds at once, across every shard and
// instance; 0 switches a limit off.
type Quotas struct {
	// RoomsOwned: rooms one user owns at once (create and quick-join's
	// create refuse past it with rooms.ErrOwnedRoomsLimit).
	RoomsOwned int
	// RoomsJoined: rooms one user is in at once, owned ones included
	// (create, join, join-by-code, quick-join refuse past it with
	// rooms.ErrJoinedRoomsLimit).
	RoomsJoined int
	// StreamsPerUser: event streams one user holds open at once, of all
	// rooms and the lobby, on every instance (OpenStream and OpenLobby
	// refuse past it with rooms.ErrStreamLimit; see store/sessions/streams.go).
	StreamsPerUser int
}

// MayHoldRoom implements matchmaking.RoomQuotas: holdings.Check.
func (s *Store) MayHoldRoom(ctx context.Context, uid string, owner bool) error {
	return s.held.Check(ctx, uid, owner)
}

// The room quotas are kept by store/holdings; heldRooms is what it reads
// of the rooms, whose layout the root store owns.
type heldRooms struct{ s *Store }

var _ holdings.Rooms = heldRooms{}

// RoomsOf implements holdings.Rooms: the user indexes of every shard,
// checked against the rooms. Each master's shards are read in a pipeline
// of their own, the masters at once (readIndexes), so a master down (its
// connections refused, or hung until the call's bound) leaves its shards
// unread and the others read: a user's holdings are then built from the
// rooms of the masters up, not refused whole (holdings' package doc).
func (r heldRooms) RoomsOf(ctx context.Context, uid string) ([]string, []bool, []int, error) {
	ids, unread, err := r.s.readIndexes(ctx, uid)
	if err != nil {
		return nil, nil, nil, err
	}
	member, owner, err := r.Membership(ctx, uid, ids)
	if err != nil {
		return nil, nil, nil, err
	}
	var in []string
	var owned []bool
	for i, id := range ids {
		if member[i] {
			in, owned = append(in, id), append(owned, owner[i])
		}
	}
	return in, owned, unread, nil
}

// readIndexes reads uid's field of every shard's user index, one pipeline
// per master (byMaster), all at once: the ids of the rooms listed in the
// shards read, and the shards whose read failed (sorted); an error only
// when none was read. Each shard's command keeps its own error, and a
// hung master's pipeline, cut by its bound, fails its own shards alone
// (go-redis fails every command of a pipeline whose context ends during
// a retry's backoff, the other masters' too: TestModesOfTheOtherMasters
// PassedWhileOneIsDown in store/tickets says the same of the mode lists).
func (s *Store) readIndexes(ctx context.Context, uid string) ([]string, []int, error) {
	groups := s.byMaster(ctx)
	lists := make([][][]string, len(groups))
	errs := make([][]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { lists[i], errs[i] = s.readIndexesOf(ctx, uid, g) })
	}
	wg.Wait()
	var ids []string
	var unread []int
	var first error
	for i, g := range groups {
		for j, shard := range g {
			if errs[i][j] != nil {
				unread, first = append(unread, shard), cmp.Or(first, errs[i][j])
				continue
			}
			ids = append(ids, lists[i][j]...)
		}
	}
	if len(unread) == s.shards {
		return nil, nil, redisx.Wrap(first)
	}
	slices.Sort(unread)
	return ids, unread, nil
}

// readIndexesOf reads uid's field of the user index of each shard of
// shards in one pipeline: the room ids each lists, and each read's error.
func (s *Store) readIndexesOf(ctx context.Context, uid string, shards []int) ([][]string, []error) {
	reads := make([]*redis.StringSliceCmd, len(shards))
	// the pipeline's error is its first command's: each has its own
	s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, shard := range shards {
			reads[i] = redisx.HMGet(ctx, p, s.keys.UserIndex(shard), uid)
		}
		return nil
	})
	lists, errs := make([][]string, len(shards)), make([]error, len(shards))
	for i, c := range reads {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			errs[i] = err
			continue
		}
		for _, v := range c.Val() { // "": not in the shard
			lists[i] = append(lists[i], strings.Fields(v)...)
		}
	}
	return lists, errs
}

// byMaster splits the deployment's shards by the Cluster master that
// serves each, as the store's client routes them (one group without a
// Cluster, or when the client knows no layout). A shard whose slot no
// master serves goes with whichever node go-redis would send it to.
func (s *Store) byMaster(ctx context.Context) [][]int {
	all := make([]int, s.shards)
	for i := range all {
		all[i] = i
	}
	cc, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return [][]int{all}
	}
	at := map[string]int{}
	var groups [][]int
	for _, shard := range all {
		addr := ""
		if n, err := cc.MasterForKey(ctx, s.keys.UserIndex(shard)); err == nil {
			addr = n.Options().Addr
		}
		i, ok := at[addr]
		if !ok {
			i, at[addr] = len(groups), len(groups)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], shard)
	}
	return groups
}

// Membership implements holdings.Rooms: it reads, in one pipeline, whether uid is in each room and owns
// it.
func (r heldRooms) Membership(ctx context.Context, uid string, ids []string) (member, owner []bool, err error) {
	pids := make([]*redis.StringCmd, len(ids))
	owners := make([]*redis.StringCmd, len(ids))
	_, err = r.s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, r.s.shards)
			pids[i] = p.HGet(ctx, r.s.keys.Room(shard, id)+":users", uid)
			owners[i] = p.HGet(ctx, r.s.keys.Room(shard, id), "ow")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, redisx.Wrap(err)
	}
	member, owner = make([]bool, len(ids)), make([]bool, len(ids))
	for i := range ids {
		pid := pids[i].Val()
		member[i] = pid != ""
		owner[i] = member[i] && pid == owners[i].Val()
	}
	return member, owner, nil
}

// InRooms implements holdings.Rooms.
func (r heldRooms) InRooms(ctx context.Context, uids, ids []string) ([]bool, error) {
	cmds := make([]*redis.BoolCmd, len(ids))
	_, err := r.s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, r.s.shards)
			cmds[i] = p.HExists(ctx, r.s.keys.Room(shard, id)+":users", uids[i])
		}
		return nil
	})
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]bool, len(ids))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// IsRoom implements holdings.Rooms.
func (r heldRooms) IsRoom(id string) bool { _, ok := layout.RoomShard(id, r.s.shards); return ok }

// UnheldKey implements holdings.Rooms.
func (r heldRooms) UnheldKey(shard int) string { return r.s.keys.Unheld(shard) }

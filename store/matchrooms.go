package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
)

var _ matchmaking.RoomOpener = (*Store)(nil)

// matchmaker is who reserves a match's seats: the server.
var matchmaker = rooms.User{ID: rooms.ServerUserPrefix + "matchmaker", Name: "matchmaker", Server: true,
	Scopes: rooms.ScopeRead | rooms.ScopeWrite}

// matchRoomIDs are the ids match m's room may have: for each stripe
// configuration recorded (layout.Placement.UsedCreateShards), a stripe of
// (mode, region) and the random part both derived from the match id, so a
// retry after a crash (the matcher's repair) finds the room it made, also
// on an instance whose REALSYNC_MODE_STRIPES gives the mode another stripe
// count. The current configuration's id comes first (a new room's); each
// id once.
func (s *Store) matchRoomIDs(m matchmaking.Match) []string {
	sum := sha256.Sum256([]byte(m.ID))
	var ids []string
	for _, shards := range s.stripes.UsedCreateShards(m.Mode, m.Region) {
		if id := matchRoomIDOn(shards, sum); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// matchRoomIDOn is the id of the match room whose match id's SHA-256 is
// sum, on one of shards: the shard and the random part both from sum.
func matchRoomIDOn(shards []int, sum [sha256.Size]byte) string {
	shard := shards[binary.BigEndian.Uint32(sum[:4])%uint32(len(shards))]
	sh := strconv.FormatInt(int64(shard), 36)
	if len(sh) < layout.IDShardLen {
		sh = "0" + sh
	}
	b := make([]byte, layout.IDRandLen)
	for i := range b {
		b[i] = layout.Base62[sum[4+i]%62]
	}
	return sh + string(b)
}

// madeMatchRoom returns the one of ids (a match room's ids under the
// stripe configurations other than the current one) whose room exists: an
// instance of that configuration made it. "" when none does; nothing is
// read for no ids (one configuration recorded). A room made there and closed
// since, its log still kept (as createWithID's ID_TAKEN sees it), is
// rooms.ErrRoomNotFound, as for the current configuration's id; once its
// log is gone it is not seen (nor is the current id's: a repair then
// makes a room on its own stripe).
func (s *Store) madeMatchRoom(ctx context.Context, ids []string) (string, error) {
	for _, id := range ids {
		shard, ok := layout.RoomShard(id, s.shards)
		if !ok {
			return "", fmt.Errorf("store: match room id %q", id)
		}
		// one slot: the room's keys share its shard's tag
		n, err := s.client.Exists(ctx, s.keys.Room(shard, id), s.keys.Log(shard, id)).Result()
		if err != nil {
			return "", redisx.Wrap(err)
		}
		if n == 0 {
			continue
		}
		if _, _, err := s.Get(ctx, id, false); errors.Is(err, rooms.ErrRoomNotFound) {
			return "", fmt.Errorf("store: match room %s was made and is gone: %w", id, rooms.ErrRoomNotFound)
		} else if err != nil {
			return "", err
		}
		return id, nil
	}
	return "", nil
}

// OpenMatchRoom implements matchmaking.RoomOpener: a private room of the
// match's mode and region for maxPlayers, owned by the first ticket's
// leader (player 1: the room's creator, as every room has one), with the
// other users' seats reserved for hold; attributes.matchId names the
// match. Run again for the same match (a repair), it finds the room and
// reserves again what is not taken, for every user of the match (members
// are skipped: a user who left, the owner too, is held a seat again), or
// leaves a room that started as it is; a room it made that closed since is
// rooms.ErrRoomNotFound (its id is never used again). A ticket with a user
// the room banned since (the owner too, whom the server may ban) and none
// in the room is refused, a party whole, whether the room started or not
// (the seats its users hold, the first open's, stay until the matcher put
// the ticket back: ReleaseMatchSeats), the users of the other tickets
// are held their seats (a waiting room), and the room's id comes with a
// *matchmaking.SeatsRefusedError naming the banned users (whose tickets
// the matcher puts back in the queue, barred from the room). A ticket
// with a user in the room keeps the match, its banned users simply unable
// to join: sent back, that user would be matched again while in this
// match. So does every ticket of a committed match (m.Told: some of its
// users may have been told of the room): its banned users get no seat,
// the others are held theirs again, none is refused.
//
// The room's id derives from the match id and the mode's stripes
// (REALSYNC_MODE_STRIPES): a repair on an instance of another stripe
// configuration than the first open's, both recorded in the meta hash,
// looks for the room under every recorded configuration's id (a read
// each while several are recorded) before it makes one under its own; one
// it finds closed (its log still kept) is rooms.ErrRoomNotFound, as its
// own id's would be. Not covered: a configuration this instance has not read yet (another
// instance's, recorded at its start, is read within a janitor interval:
// RefreshStripes), and two opens of one match at once on instances of
// different configurations (the mode's lease runs them one at a time,
// but for a holder stuck on a call as the lease moves on): each would make
// a room on its own stripe.
func (s *Store) OpenMatchRoom(ctx context.Context, m matchmaking.Match, maxPlayers int, hold time.Duration) (string, error) {
	users := m.Users()
	if len(users) == 0 {
		return "", errors.New("store: a match without users")
	}
	owner := rooms.User{ID: users[0], Name: m.OwnerName}
	if owner.Name == "" {
		owner.Name = "player"
	}
	p := rooms.NewRoom{Name: "match " + m.ID, Mode: m.Mode, Region: m.Region, MaxPlayers: maxPlayers,
		Visibility: rooms.Private, Attributes: map[string]any{"matchId": m.ID}, StatePolicy: rooms.PolicyOwner}
	if len(p.Name) > 64 {
		p.Name = p.Name[:64]
	}
	ids := s.matchRoomIDs(m)
	id, err := s.madeMatchRoom(ctx, ids[1:])
	if err != nil {
		return "", err
	}
	if id == "" {
		id = ids[0]
		if err := s.createWithID(ctx, owner, p, id); err != nil {
			return "", err
		}
	}
	// a refusal holds nothing: the tickets left are held again (a ban made
	// meanwhile refuses more; each refusal takes a ticket off, so it ends)
	var refused []string
	for tickets := m.Tickets; len(tickets) > 0; {
		err := s.holdMatchSeats(ctx, id, tickets, hold, m.Told != "")
		var r *matchmaking.SeatsRefusedError
		if !errors.As(err, &r) {
			if err != nil && !errors.Is(err, rooms.ErrNotJoinable) { // a started room: as it is
				return "", err
			}
			break
		}
		refused = append(refused, r.Users...)
		tickets = slices.DeleteFunc(slices.Clone(tickets), func(t matchmaking.MatchedTicket) bool {
			return slices.ContainsFunc(t.Users, func(u string) bool { return slices.Contains(r.Users, u) })
		})
	}
	if len(refused) > 0 {
		return id, &matchmaking.SeatsRefusedError{Users: refused}
	}
	return id, nil
}

// holdMatchSeats is seats_reserve.lua's "m" for tickets of match room id:
// their users' seats held for hold (members skipped, and a ticket's
// banned users when another of its users is in the room); a ticket with a
// user the room banned and none in it refused (*matchmaking.SeatsRefusedError
// naming the banned, nothing held) whatever the room's status; then a room
// not waiting is rooms.ErrNotJoinable.
// A match that stands (committed) refuses no ticket: every ticket keeps
// it as one with a user in the room does.
func (s *Store) holdMatchSeats(ctx context.Context, id string, tickets []matchmaking.MatchedTicket, hold time.Duration, stands bool) error {
	var args []string
	for _, t := range tickets {
		args = append(append(args, t.Users...), "") // a ticket's end
	}
	mode := "m"
	if stands {
		mode = "s"
	}
	_, err := s.reserveSeats(ctx, matchmaker, id, args, hold, 0, mode)
	return err
}

// createWithID creates p as room id, owned by u; nil too when room id
// exists already (a retry). The room counts in u's holdings (room quotas)
// even past them: the matcher, not the user, asked for it, and holdings
// that missed a room u is in would let u past the quota later. They
// record it before it is made, so a retry that finds it records nothing
// (u may not be its creator then: a repair of a match whose first
// ticket the room refused is of the others).
func (s *Store) createWithID(ctx context.Context, u rooms.User, p rooms.NewRoom, id string) error {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return fmt.Errorf("store: match room id %q", id)
	}
	attrs := []byte(`{"matchId":` + roomlua.JSONString(p.Attributes["matchId"].(string)) + `}`)
	recorded := false
	for range roomlua.CollisionRetries {
		if _, _, err := s.Get(ctx, id, false); err == nil {
			return nil
		} else if !errors.Is(err, rooms.ErrRoomNotFound) {
			return err
		}
		if !recorded { // before the room is made, so a crash leaves none unrecorded
			if _, err := s.held.Record(ctx, u.ID, id, true); err != nil {
				return err
			}
			recorded = true
		}
		code := layout.NewCode(shard, s.shards)
		call := roomlua.CreateCall{Scope: s.env.Indexed(shard, id, p.Mode, p.Region), Room: s.newRoom(u, p, attrs, 0, code, false)}
		_, err := s.runThenRead(ctx, call, shard, id, false)
		if errors.Is(err, roomlua.ErrIDTaken) {
			if _, _, err := s.Get(ctx, id, false); !errors.Is(err, rooms.ErrRoomNotFound) {
				return err // nil: a concurrent repair made it
			}
			return fmt.Errorf("store: match room %s was made and is gone: %w", id, rooms.ErrRoomNotFound)
		}
		if errors.Is(err, roomlua.ErrCodeTaken) {
			continue // the code
		}
		return err
	}
	return fmt.Errorf("store: %d collisions in a row creating match room %s", roomlua.CollisionRetries, id)
}

// ReserveMatchSeats implements matchmaking.RoomOpener: the server holds
// seats of room id for users, the room's players and held seats never
// past size (nor its maxPlayers), checked in the script: rooms.ErrRoomFull;
// a locked room is rooms.ErrNotJoinable. The script refuses the users the
// room banned, as a join checks the bans, and, unless repair, its players
// and its seats' holders (a user who queued again is not matched into the
// room they are in or hold a seat of): *matchmaking.SeatsRefusedError,
// holding nothing. A repair skips members and holds a holder's seat again
// (the first hold's own, perhaps taken).
func (s *Store) ReserveMatchSeats(ctx context.Context, id string, users []string, size int, hold time.Duration, repair bool) error {
	mode := "b"
	if repair {
		mode = "r"
	}
	_, err := s.reserveSeats(ctx, matchmaker, id, users, hold, size, mode)
	return err
}

// ReleaseMatchSeats implements matchmaking.RoomOpener: seats_reserve.lua's
// "x", reservation_expired for the seats released.
func (s *Store) ReleaseMatchSeats(ctx context.Context, id string, users []string) error {
	_, err := s.reserveSeats(ctx, matchmaker, id, users, 0, 0, "x")
	if errors.Is(err, rooms.ErrRoomNotFound) {
		return nil
	}
	return err
}

// FreeSeats implements matchmaking.RoomOpener: the smaller of maxPlayers
// and size less the players and held seats, of a waiting room (open);
// (0, false) for any other. An owner may raise a match room's maxPlayers
// (friends join by its invite code), but backfill fills it to its mode's
// size only. It reads the room's hash alone (one HMGET, batched with other
// reads), not its players: a pass reads every backfill room of its mode.
func (s *Store) FreeSeats(ctx context.Context, id string, size int) (int, bool, error) {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return 0, false, nil
	}
	var cmd *redis.StringSliceCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = redisx.HMGet(ctx, p, s.keys.Room(shard, id), layout.RoomHashFields()...)
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, false, redisx.Wrap(err)
	}
	h := layout.RoomHashOf(cmd)
	if h == nil {
		return 0, false, nil
	}
	r, err := layout.DecodeRoom(id, h, nil, nil, nil)
	if err != nil {
		return 0, false, err
	}
	if r.Status != rooms.Waiting {
		return 0, false, nil
	}
	if r.Locked { // kept, for an unlock: a hold would be refused, and a join
		return 0, true, nil
	}
	return max(min(r.MaxPlayers, size)-r.PlayerCount-r.ReservedSeats, 0), true, nil
}

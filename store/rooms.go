package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// errCodeTaken: a fresh room id or invite code collided; the caller retries
// with new random ones.
var errCodeTaken = errors.New("store: room id or invite code taken")

// errJoinableExists: a quick-join create found a joinable room meanwhile.
var errJoinableExists = errors.New("store: a joinable room exists")

const maxCollisionRetries = 5

// common is the ARGV every mutation script starts with (lua/prelude.lua).
func (s *Store) common(shard int, id string) []any {
	return []any{id, s.keys.channel(shard, id), s.pubcmd, eventTag(), s.argv[0], s.argv[1]}
}

// Create implements rooms.Store. The room lives in a stripe of its (mode,
// region) (stripes.go: the home shard with K = 1), chosen at random among
// the current configuration's, whatever its visibility, so it never moves.
func (s *Store) Create(ctx context.Context, u rooms.User, p rooms.NewRoom) (rooms.Joined, error) {
	return s.create(ctx, u, p, false)
}

// create creates p; with onlyIfNone, only when no joinable room of its mode
// and region exists (errJoinableExists otherwise).
func (s *Store) create(ctx context.Context, u rooms.User, p rooms.NewRoom, onlyIfNone bool) (rooms.Joined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.Joined{}, err
	}
	attrs, err := json.Marshal(p.Attributes)
	if err != nil {
		return rooms.Joined{}, fmt.Errorf("store: attributes: %w", err)
	}
	shard := s.stripes.randomCreateShard(p.Mode, p.Region)
	_, size := rooms.StateTotals(p.State)
	for range maxCollisionRetries {
		id := newRoomID(shard)
		code := ""
		if p.Visibility == rooms.Private {
			code = newCode(shard, s.shards)
		}
		args := append(s.common(shard, id), s.createArgs(u, p, attrs, size, code, onlyIfNone)...)
		keys := s.keys.roomKeysWithIndexes(shard, id, p.Mode, p.Region)
		h, err := s.reserve(ctx, u.ID, id, true)
		if err != nil {
			return rooms.Joined{}, err
		}
		j, err := s.joined(s.runThenRead(ctx, roomCreate, shard, id, keys, args, false))
		if refused(err) {
			s.release(ctx, h)
		}
		if errors.Is(err, errCodeTaken) {
			continue
		}
		return j, err
	}
	return rooms.Joined{}, fmt.Errorf("store: %d id collisions in a row", maxCollisionRetries)
}

// createArgs is room_create.lua's ARGV from ARGV[7] on: room p with the
// encoded attributes and the state's size, its invite code ("" public),
// created by u.
func (s *Store) createArgs(u rooms.User, p rooms.NewRoom, attrs []byte, size int, code string, onlyIfNone bool) []any {
	args := []any{p.Name, p.Mode, p.Region, string(p.Visibility),
		p.MaxPlayers, string(p.StatePolicy), attrs, code, u.ID, jsonString(u.Name), size,
		map[bool]string{true: "1", false: ""}[onlyIfNone], s.life.firstCheck()}
	for _, k := range sortedKeys(p.State) {
		args = append(args, k, []byte(p.State[k]))
	}
	return args
}

// Get implements rooms.Store with one consistent read.
func (s *Store) Get(ctx context.Context, id string, withState bool) (rooms.Room, rooms.State, error) {
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return rooms.Room{}, nil, rooms.ErrRoomNotFound
	}
	return s.readRoom(ctx, shard, id, withState)
}

// Join implements rooms.Store.
func (s *Store) Join(ctx context.Context, u rooms.User, id string) (rooms.Joined, error) {
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return rooms.Joined{}, rooms.ErrRoomNotFound
	}
	return s.join(ctx, u, shard, id, "")
}

// JoinByCode implements rooms.Store: the code's shard holds the code table
// and the room.
func (s *Store) JoinByCode(ctx context.Context, u rooms.User, code string) (rooms.Joined, error) {
	shard := codeShard(code, s.shards)
	id, err := s.client.HGet(ctx, s.keys.codes(shard), code).Result()
	if errors.Is(err, redis.Nil) {
		return rooms.Joined{}, rooms.ErrRoomNotFound
	}
	if err != nil {
		return rooms.Joined{}, wrap(err)
	}
	if got, ok := roomShard(id, s.shards); !ok || got != shard {
		return rooms.Joined{}, fmt.Errorf("store: code %s maps to room %s of another shard", code, id)
	}
	return s.join(ctx, u, shard, id, code)
}

func (s *Store) join(ctx context.Context, u rooms.User, shard int, id, code string) (rooms.Joined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.Joined{}, err
	}
	_, keys, err := s.indexedKeys(ctx, id)
	if err != nil {
		return rooms.Joined{}, err
	}
	args := append(s.common(shard, id), u.ID, jsonString(u.Name), code)
	h, err := s.reserve(ctx, u.ID, id, false)
	if err != nil {
		return rooms.Joined{}, err
	}
	j, err := s.joined(s.runThenRead(ctx, roomJoin, shard, id, keys, args, false))
	if refused(err) {
		s.release(ctx, h)
	}
	return j, err
}

// joined decodes the reply {"OK", playerId} of a script run by runThenRead
// and the room read after it.
func (s *Store) joined(r ran, err error) (rooms.Joined, error) {
	if err != nil {
		return rooms.Joined{}, err
	}
	res, err := r.cmd.Result()
	if err != nil {
		return rooms.Joined{}, wrap(err)
	}
	rest, err := replyStatus(res)
	if err != nil {
		return rooms.Joined{}, err
	}
	room, _, err := s.decodeRead(r.id, r.read)
	return rooms.Joined{Room: room, PlayerID: int(toInt64(rest[0]))}, err
}

// Leave implements rooms.Store.
func (s *Store) Leave(ctx context.Context, u rooms.User, id string) error {
	if u.Server {
		return rooms.PlayersOnly(u)
	}
	return s.remove(ctx, id, u, "", "left", false)
}

// Kick implements rooms.Store.
func (s *Store) Kick(ctx context.Context, u rooms.User, id string, playerID int) error {
	return s.remove(ctx, id, u, strconv.Itoa(playerID), "kicked", false)
}

// Ban implements rooms.Store: one script kicks and bans. The player_left
// event says reason "kicked" as for any kick; the ban is never shown.
func (s *Store) Ban(ctx context.Context, u rooms.User, id string, playerID int) error {
	return s.remove(ctx, id, u, strconv.Itoa(playerID), "kicked", true)
}

func (s *Store) remove(ctx context.Context, id string, u rooms.User, target, reason string, ban bool) error {
	c, err := caller(u)
	if err != nil {
		return err
	}
	shard, keys, err := s.indexedKeys(ctx, id)
	if err != nil {
		return err
	}
	args := append(s.common(shard, id), c, target, reason, map[bool]string{true: "1", false: ""}[ban], rooms.MaxBans)
	before := ""
	if target == "" {
		before = s.heldValue(ctx, c, id)
	}
	res, err := s.runMutation(ctx, playerRemove, keys, args...).Result()
	if err != nil {
		return wrap(err)
	}
	rest, err := replyStatus(res)
	if err != nil {
		return err
	}
	newOwner, _ := rest[0].(string)
	s.left(ctx, c, id, before, newOwner)
	return nil
}

// caller is the caller's userId as the scripts take it: "" for the server
// (rooms.User.Server), which skips the membership, owner and state-policy
// checks. A player without a userId would pass for the server: refused.
func caller(u rooms.User) (string, error) {
	switch {
	case u.Server:
		return "", nil
	case u.ID == "":
		return "", errors.New("store: a player without a userId")
	}
	return u.ID, nil
}

// Update implements rooms.Store.
func (s *Store) Update(ctx context.Context, u rooms.User, id string, p rooms.UpdateParams) (rooms.Room, error) {
	shard, keys, err := s.indexedKeys(ctx, id)
	if err != nil {
		return rooms.Room{}, err
	}
	fields, err := updateArgs(p)
	if err != nil {
		return rooms.Room{}, err
	}
	c, err := caller(u)
	if err != nil {
		return rooms.Room{}, err
	}
	for range maxCollisionRetries {
		args := append(s.common(shard, id), c)
		args = append(args, fields...)
		args = append(args, newCode(shard, s.shards))
		j, err := s.joined(s.runThenRead(ctx, roomUpdate, shard, id, keys, args, false))
		if errors.Is(err, errCodeTaken) {
			continue
		}
		return j.Room, err
	}
	return rooms.Room{}, fmt.Errorf("store: %d invite code collisions in a row", maxCollisionRetries)
}

// updateArgs are ARGV[8..14] of room_update.lua: "" for unchanged fields.
func updateArgs(p rooms.UpdateParams) ([]any, error) {
	out := []any{"", "", "", "", "", "", ""}
	if p.Name != nil {
		out[0], out[1] = *p.Name, jsonString(*p.Name)
	}
	if p.Status != nil {
		out[2] = string(*p.Status)
	}
	if p.Locked != nil {
		out[3] = map[bool]string{false: "0", true: "1"}[*p.Locked]
	}
	if p.MaxPlayers != nil {
		out[4] = strconv.Itoa(*p.MaxPlayers)
	}
	if p.Visibility != nil {
		out[5] = string(*p.Visibility)
	}
	if p.Attributes != nil {
		b, err := json.Marshal(*p.Attributes)
		if err != nil {
			return nil, fmt.Errorf("store: attributes: %w", err)
		}
		out[6] = string(b)
	}
	return out, nil
}

// Delete implements rooms.Store.
func (s *Store) Delete(ctx context.Context, u rooms.User, id string) error {
	c, err := caller(u)
	if err != nil {
		return err
	}
	shard, keys, err := s.indexedKeys(ctx, id)
	if err != nil {
		return err
	}
	return s.status(s.runMutation(ctx, roomDelete, keys, append(s.common(shard, id), c)...))
}

// PatchState implements rooms.Store. Keys are sent sorted, so the state
// event lists them in a stable order.
func (s *Store) PatchState(ctx context.Context, u rooms.User, id string, p rooms.StatePatch) (rooms.Versions, error) {
	c, err := caller(u)
	if err != nil {
		return rooms.Versions{}, err
	}
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return rooms.Versions{}, rooms.ErrRoomNotFound
	}
	args := append(s.common(shard, id), c, p.IfMatch, rooms.MaxStateKeys, rooms.MaxStateBytes, len(p.Set))
	for _, k := range sortedKeys(p.Set) {
		args = append(args, k, []byte(p.Set[k]))
	}
	del := append([]string(nil), p.Del...)
	sort.Strings(del)
	for _, k := range del {
		args = append(args, k)
	}
	res, err := s.runMutation(ctx, statePatch, s.keys.roomKeys(shard, id), args...).Result()
	if err != nil {
		return rooms.Versions{}, wrap(err)
	}
	rest, err := replyStatus(res)
	if err != nil {
		return rooms.Versions{}, err
	}
	return rooms.Versions{Version: toInt64(rest[0]), StateVersion: toInt64(rest[1])}, nil
}

// indexedKeys returns the room's shard and the script keys including its
// status indexes, reading its (immutable) mode and region when not cached.
func (s *Store) indexedKeys(ctx context.Context, id string) (int, []string, error) {
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return 0, nil, rooms.ErrRoomNotFound
	}
	p, ok := s.places.get(id)
	if !ok {
		got, err := s.client.HMGet(ctx, s.keys.room(shard, id), "m", "r").Result()
		if err != nil {
			return 0, nil, wrap(err)
		}
		mode, _ := got[0].(string)
		region, _ := got[1].(string)
		if mode == "" {
			return 0, nil, rooms.ErrRoomNotFound
		}
		p = place{mode: mode, region: region}
		s.places.put(id, p)
	}
	return shard, s.keys.roomKeysWithIndexes(shard, id, p.mode, p.region), nil
}

// status decodes a reply that carries only a status.
func (s *Store) status(cmd *redis.Cmd) error {
	res, err := cmd.Result()
	if err != nil {
		return wrap(err)
	}
	_, err = replyStatus(res)
	return err
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sortedKeys(m rooms.State) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

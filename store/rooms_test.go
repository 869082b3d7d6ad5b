package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

func TestCreate(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t.Run("Public", func(t *testing.T) {
			j := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) {
				r.State = rooms.State{"score": []byte(`{"a":[1,2]}`)}
			}))
			r := j.Room
			if j.PlayerID != 1 || r.OwnerPlayerID != 1 || r.PlayerCount != 1 || r.Version != 1 || r.Status != rooms.Waiting {
				t.Fatalf("created %+v", j)
			}
			if r.InviteCode != "" || r.Attributes["map"] != "dust2" || r.MaxPlayers != 4 || r.CreatedAt.IsZero() {
				t.Fatalf("created %+v", r)
			}
			got, st, err := s.Get(ctx, r.ID, true)
			if err != nil || !reflect.DeepEqual(got, r) {
				t.Fatalf("Get = %+v, %v; want %+v", got, err, r)
			}
			if string(st["score"]) != `{"a":[1,2]}` {
				t.Fatalf("state %s", st)
			}
			evs := events(t, s, r.ID)
			if len(evs) != 1 || evs[0].Type != "player_joined" || evs[0].Player["name"] != "alice" || evs[0].TS[len(evs[0].TS)-1] != 'Z' {
				t.Fatalf("events %s", evs[0].Raw)
			}
		})
		t.Run("PrivateGetsCode", func(t *testing.T) {
			r := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
			if norm, ok := rooms.NormalizeCode(r.InviteCode); !ok || norm != r.InviteCode || len(r.InviteCode) != rooms.CodeLength+2 {
				t.Fatalf("invite code %q is not canonical", r.InviteCode)
			}
		})
		t.Run("UnknownIDs", func(t *testing.T) {
			for _, id := range []string{"00AAAAAAAAAAAAAA", "zz", "ZZAAAAAAAAAAAAAA"} {
				_, _, err := s.Get(ctx, id, false)
				wantErr(t, err, rooms.ErrRoomNotFound)
			}
		})
		checkInvariants(t, s)
	})
}

func TestJoin(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		full := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 2 })).Room
		mustJoin(t, s, bob, full.ID)
		private := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
		playing := mustCreate(t, s, alice, newRoom()).Room
		mustJoin(t, s, bob, playing.ID)
		update(t, s, alice, playing.ID, rooms.UpdateParams{Status: ptr(rooms.Playing)})
		locked := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 1 })).Room
		update(t, s, alice, locked.ID, rooms.UpdateParams{Locked: ptr(true)})

		tests := []struct {
			name string
			user rooms.User
			room string
			want error // nil: joins
			pid  int   // expected playerId on success
		}{
			{"MemberRejoinsFullRoom", bob, full.ID, nil, 2},
			{"MemberRejoinsPlayingRoom", bob, playing.ID, nil, 2},
			{"OwnerRejoinsLockedFullRoom", alice, locked.ID, nil, 1},
			{"Full", carol, full.ID, rooms.ErrRoomFull, 0},
			{"PrivateByID", carol, private.ID, rooms.ErrRoomNotFound, 0},
			{"Playing", carol, playing.ID, rooms.ErrNotJoinable, 0},
			{"LockedBeforeFull", carol, locked.ID, rooms.ErrNotJoinable, 0},
			{"Unknown", carol, "00AAAAAAAAAAAAAA", rooms.ErrRoomNotFound, 0},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				before, _, _ := s.Get(ctx, tc.room, false)
				j, err := s.Join(ctx, tc.user, tc.room)
				wantErr(t, err, tc.want)
				if tc.want == nil && j.PlayerID != tc.pid {
					t.Fatalf("playerId %d, want %d", j.PlayerID, tc.pid)
				}
				if after, _, _ := s.Get(ctx, tc.room, false); !reflect.DeepEqual(before, after) {
					t.Fatalf("room changed:\n%+v\n%+v", before, after)
				}
			})
		}
		checkInvariants(t, s)
	})
}

func TestJoinByCode(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
		j, err := s.JoinByCode(ctx, bob, r.InviteCode)
		if err != nil || j.PlayerID != 2 || j.Room.InviteCode != r.InviteCode {
			t.Fatalf("JoinByCode = %+v, %v", j, err)
		}
		if j, err := s.JoinByCode(ctx, bob, r.InviteCode); err != nil || j.PlayerID != 2 {
			t.Fatalf("rejoin = %+v, %v", j, err)
		}
		other := "0000-0000-0000"
		if r.InviteCode == other {
			other = "0000-0000-0001"
		}
		_, err = s.JoinByCode(ctx, carol, other)
		wantErr(t, err, rooms.ErrRoomNotFound)

		// Going public revokes the code; going private again issues a new one.
		pub := update(t, s, alice, r.ID, rooms.UpdateParams{Visibility: ptr(rooms.Public)})
		if pub.InviteCode != "" {
			t.Fatalf("public room kept code %q", pub.InviteCode)
		}
		_, err = s.JoinByCode(ctx, carol, r.InviteCode)
		wantErr(t, err, rooms.ErrRoomNotFound)
		priv := update(t, s, alice, r.ID, rooms.UpdateParams{Visibility: ptr(rooms.Private)})
		if priv.InviteCode == "" || priv.InviteCode == r.InviteCode {
			t.Fatalf("new code %q (old %q)", priv.InviteCode, r.InviteCode)
		}
		if _, err := s.JoinByCode(ctx, carol, priv.InviteCode); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
	})
}

// A room created before codes grew to 12 characters keeps its 6-character
// code, and the code still resolves, typed in either case.
func TestJoinByLegacyCode(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
		legacy := s.LegacyCode(r.ID)
		c := s.Client()
		// what the former release wrote: the code in the room and the shard's table
		if err := c.HDel(ctx, s.CodesKey(r.InviteCode), r.InviteCode).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, s.CodesKey(legacy), legacy, r.ID).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, s.RoomKey(r.ID), "cd", legacy).Err(); err != nil {
			t.Fatal(err)
		}
		norm, ok := rooms.NormalizeCode(strings.ToLower(legacy))
		if !ok {
			t.Fatalf("legacy code %q not accepted", legacy)
		}
		j, err := s.JoinByCode(ctx, bob, norm)
		if err != nil || j.PlayerID != 2 || j.Room.InviteCode != legacy {
			t.Fatalf("JoinByCode(%q) = %+v, %v", norm, j, err)
		}
		checkInvariants(t, s)
	})
}

func update(tb testing.TB, s *store.Store, u rooms.User, id string, p rooms.UpdateParams) rooms.Room {
	tb.Helper()
	r, err := s.Update(context.Background(), u, id, p)
	if err != nil {
		tb.Fatalf("update: %v", err)
	}
	return r
}

func TestLeave(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t.Run("OwnerPassesToEarliestJoined", func(t *testing.T) {
			r := mustCreate(t, s, alice, newRoom()).Room
			mustJoin(t, s, bob, r.ID)
			mustJoin(t, s, carol, r.ID)
			if err := s.Leave(ctx, alice, r.ID); err != nil {
				t.Fatal(err)
			}
			got, _, _ := s.Get(ctx, r.ID, false)
			if got.OwnerPlayerID != 2 || got.PlayerCount != 2 {
				t.Fatalf("after owner left: owner %d, count %d", got.OwnerPlayerID, got.PlayerCount)
			}
			evs := events(t, s, r.ID)
			last := evs[len(evs)-2:]
			if last[0].Type != "player_left" || last[0].PlayerID != 1 || last[0].Reason != "left" ||
				last[1].Type != "room_updated" || last[1].Changes["ownerPlayerId"] != float64(2) {
				t.Fatalf("events %s %s", last[0].Raw, last[1].Raw)
			}
		})
		t.Run("LastMemberClosesRoom", func(t *testing.T) {
			r := mustCreate(t, s, alice, newRoom()).Room
			if err := s.Leave(ctx, alice, r.ID); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Get(ctx, r.ID, false)
			wantErr(t, err, rooms.ErrRoomNotFound)
			evs := events(t, s, r.ID)
			if got := types(evs); !reflect.DeepEqual(got, []string{"player_joined", "player_left", "room_closed"}) || evs[2].Reason != "empty" {
				t.Fatalf("events %v", got)
			}
			wantErr(t, s.Leave(ctx, alice, r.ID), rooms.ErrRoomNotFound)
		})
		t.Run("NonMember", func(t *testing.T) {
			pub := mustCreate(t, s, alice, newRoom()).Room
			wantErr(t, s.Leave(ctx, bob, pub.ID), rooms.ErrNotMember)
			priv := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
			wantErr(t, s.Leave(ctx, bob, priv.ID), rooms.ErrRoomNotFound)
		})
		checkInvariants(t, s)
	})
}

func TestKick(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom()).Room
		mustJoin(t, s, bob, r.ID)
		mustJoin(t, s, carol, r.ID)
		tests := []struct {
			name   string
			caller rooms.User
			target int
			want   error
		}{
			{"NotOwner", bob, 3, rooms.ErrNotOwner},
			{"NonMember", rooms.User{ID: "u-dave"}, 2, rooms.ErrNotMember},
			{"UnknownPlayer", alice, 9, rooms.ErrPlayerNotFound},
			{"Self", alice, 1, rooms.ErrValidation},
			{"Kicked", alice, 2, nil},
			{"AlreadyGone", alice, 2, rooms.ErrPlayerNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wantErr(t, s.Kick(ctx, tc.caller, r.ID, tc.target), tc.want)
			})
		}
		evs := events(t, s, r.ID)
		if e := evs[len(evs)-1]; e.Type != "player_left" || e.PlayerID != 2 || e.Reason != "kicked" {
			t.Fatalf("last event %s", e.Raw)
		}
		// playerIds are never reused: bob comes back as player 4.
		if j := mustJoin(t, s, bob, r.ID); j.PlayerID != 4 {
			t.Fatalf("rejoined as %d, want 4", j.PlayerID)
		}
		checkInvariants(t, s)
	})
}

func TestUpdate(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t.Run("Transitions", func(t *testing.T) {
			steps := []struct {
				to   rooms.Status
				want error
			}{
				{rooms.Playing, nil}, {rooms.Waiting, nil}, {rooms.Waiting, nil}, {rooms.Finished, nil},
				{rooms.Waiting, rooms.ErrInvalidTransition}, {rooms.Playing, rooms.ErrInvalidTransition}, {rooms.Finished, nil},
			}
			r := mustCreate(t, s, alice, newRoom()).Room
			for _, st := range steps {
				got, err := s.Update(ctx, alice, r.ID, rooms.UpdateParams{Status: ptr(st.to)})
				wantErr(t, err, st.want)
				if err == nil && got.Status != st.to {
					t.Fatalf("status %s, want %s", got.Status, st.to)
				}
			}
			checkInvariants(t, s)
		})
		t.Run("ChangesAndEvent", func(t *testing.T) {
			r := mustCreate(t, s, alice, newRoom()).Room
			got := update(t, s, alice, r.ID, rooms.UpdateParams{Name: ptr(`New "name"`), Locked: ptr(true),
				MaxPlayers: ptr(6), Attributes: &map[string]any{"rank": 1500}})
			if got.Name != `New "name"` || !got.Locked || got.MaxPlayers != 6 || got.Version != 2 || len(got.Attributes) != 1 {
				t.Fatalf("updated %+v", got)
			}
			e := events(t, s, r.ID)[1]
			want := map[string]any{"name": `New "name"`, "locked": true, "maxPlayers": float64(6), "attributes": map[string]any{"rank": float64(1500)}}
			if e.Type != "room_updated" || !reflect.DeepEqual(e.Changes, want) {
				t.Fatalf("event %s", e.Raw)
			}
			// The same values again change nothing and emit nothing.
			again := update(t, s, alice, r.ID, rooms.UpdateParams{Name: ptr(`New "name"`), Locked: ptr(true)})
			if again.Version != 2 || len(events(t, s, r.ID)) != 2 {
				t.Fatalf("no-op update bumped version to %d", again.Version)
			}
		})
		t.Run("Refusals", func(t *testing.T) {
			r := mustCreate(t, s, alice, newRoom()).Room
			mustJoin(t, s, bob, r.ID)
			_, err := s.Update(ctx, bob, r.ID, rooms.UpdateParams{Name: ptr("x")})
			wantErr(t, err, rooms.ErrNotOwner)
			_, err = s.Update(ctx, carol, r.ID, rooms.UpdateParams{Name: ptr("x")})
			wantErr(t, err, rooms.ErrNotMember)
			_, err = s.Update(ctx, alice, r.ID, rooms.UpdateParams{MaxPlayers: ptr(1), Name: ptr("x")})
			wantErr(t, err, rooms.ErrValidation)
			if got, _, _ := s.Get(ctx, r.ID, false); got.Name != "Arena" || got.Version != 2 {
				t.Fatalf("refused update changed the room: %+v", got)
			}
		})
		t.Run("VisibilityMovesIndexes", func(t *testing.T) {
			r := mustCreate(t, s, alice, newRoom()).Room
			update(t, s, alice, r.ID, rooms.UpdateParams{Visibility: ptr(rooms.Private), Status: ptr(rooms.Playing)})
			checkInvariants(t, s)
			update(t, s, alice, r.ID, rooms.UpdateParams{Visibility: ptr(rooms.Public)})
			checkInvariants(t, s)
		})
	})
}

func TestDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
		mustJoin2 := func() { s.JoinByCode(ctx, bob, r.InviteCode) }
		mustJoin2()
		_, err := s.Delete(ctx, bob, r.ID)
		wantErr(t, err, rooms.ErrNotOwner)
		_, err = s.Delete(ctx, carol, r.ID)
		wantErr(t, err, rooms.ErrRoomNotFound)
		members, err := s.Delete(ctx, alice, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Sort(members); !slices.Equal(members, []string{alice.ID, bob.ID}) {
			t.Errorf("the closed room's members %v, want alice and bob", members)
		}
		_, _, err = s.Get(ctx, r.ID, false)
		wantErr(t, err, rooms.ErrRoomNotFound)
		evs := events(t, s, r.ID)
		if e := evs[len(evs)-1]; e.Type != "room_closed" || e.Reason != "closed" {
			t.Fatalf("last event %s", e.Raw)
		}
		_, err = s.JoinByCode(ctx, carol, r.InviteCode)
		wantErr(t, err, rooms.ErrRoomNotFound)
		ttl, _ := s.Client().TTL(ctx, s.LogKey(r.ID)).Result()
		if ttl <= 0 {
			t.Fatalf("closed room's log has TTL %v, want a positive one", ttl)
		}
		checkInvariants(t, s)
	})
}

func TestPatchState(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom()).Room
		mustJoin(t, s, bob, r.ID) // player 2, version 2
		set := func(kv ...string) rooms.State {
			st := rooms.State{}
			for i := 0; i < len(kv); i += 2 {
				st[kv[i]] = []byte(kv[i+1])
			}
			return st
		}
		tests := []struct {
			name string
			user rooms.User
			p    rooms.StatePatch
			want error
			ver  rooms.Versions // on success
		}{
			{"OwnerAnyKey", alice, rooms.StatePatch{Set: set("score", "10", "board", `[1,2]`), IfMatch: -1}, nil, rooms.Versions{Version: 3, StateVersion: 1}},
			{"MemberOwnPrefix", bob, rooms.StatePatch{Set: set("player_2_ready", "true"), IfMatch: 1}, nil, rooms.Versions{Version: 4, StateVersion: 2}},
			{"MemberOtherKey", bob, rooms.StatePatch{Set: set("score", "11"), IfMatch: -1}, rooms.ErrStateKeyForbidden, rooms.Versions{}},
			{"MemberDeletesOtherKey", bob, rooms.StatePatch{Del: []string{"score"}, IfMatch: -1}, rooms.ErrStateKeyForbidden, rooms.Versions{}},
			{"MemberOtherPlayersPrefix", bob, rooms.StatePatch{Set: set("player_1_x", "1"), IfMatch: -1}, rooms.ErrStateKeyForbidden, rooms.Versions{}},
			{"NonMember", carol, rooms.StatePatch{Set: set("player_3_x", "1"), IfMatch: -1}, rooms.ErrNotMember, rooms.Versions{}},
			{"StaleIfMatch", alice, rooms.StatePatch{Set: set("score", "12"), IfMatch: 1}, rooms.ErrVersionMismatch, rooms.Versions{}},
			{"NeverMatches", alice, rooms.StatePatch{Set: set("score", "12"), IfMatch: rooms.NeverMatches}, rooms.ErrVersionMismatch, rooms.Versions{}},
			{"EmptyChangesNothing", alice, rooms.StatePatch{IfMatch: -1}, nil, rooms.Versions{Version: 4, StateVersion: 2}},
			{"DeleteAndSameValue", alice, rooms.StatePatch{Set: set("score", "10"), Del: []string{"board", "missing"}, IfMatch: 2}, nil, rooms.Versions{Version: 5, StateVersion: 3}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				v, err := s.PatchState(ctx, tc.user, r.ID, tc.p)
				wantErr(t, err, tc.want)
				if err == nil && v != tc.ver {
					t.Fatalf("versions %+v, want %+v", v, tc.ver)
				}
			})
		}
		_, st, _ := s.Get(ctx, r.ID, true)
		if !reflect.DeepEqual(st, set("score", "10", "player_2_ready", "true")) {
			t.Fatalf("state %s", st)
		}
		e := events(t, s, r.ID)[4]
		if e.Type != "state" || e.By != 1 || e.StateV != 3 || !reflect.DeepEqual(e.Del, []string{"board", "missing"}) || e.Set["score"] != float64(10) {
			t.Fatalf("state event %s", e.Raw)
		}
	})
}

func TestPatchStateLimits(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.StatePolicy = rooms.PolicyOpen })).Room
		many := rooms.State{}
		for i := range rooms.MaxStateKeys {
			many["k"+strings.Repeat("0", 3-len(strconv.Itoa(i)))+strconv.Itoa(i)] = []byte("1")
		}
		if _, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: many, IfMatch: -1}); err != nil {
			t.Fatalf("256 keys: %v", err)
		}
		_, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"one_more": []byte("1")}, IfMatch: -1})
		wantErr(t, err, rooms.ErrTooLarge)
		// Replacing a key and deleting one keep the count.
		if _, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"k000": []byte("2"), "one_more": []byte("1")}, Del: []string{"k001"}, IfMatch: -1}); err != nil {
			t.Fatalf("swap within limits: %v", err)
		}
		big := []byte(`"` + strings.Repeat("x", rooms.MaxStateValue-2) + `"`)
		bytesLeft := rooms.MaxStateBytes - 256*5 // keys "kNNN" + value "1"
		var err2 error
		for i := 0; err2 == nil && i < bytesLeft/len(big)+2; i++ {
			_, err2 = s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"k" + strconv.Itoa(100+i): big}, IfMatch: -1})
		}
		wantErr(t, err2, rooms.ErrTooLarge)
		_, st, _ := s.Get(ctx, r.ID, true)
		total := 0
		for k, v := range st {
			total += len(k) + len(v)
		}
		if len(st) > rooms.MaxStateKeys || total > rooms.MaxStateBytes {
			t.Fatalf("state holds %d keys, %d bytes", len(st), total)
		}
		checkInvariants(t, s) // "sk" and "sb" count the state exactly

		// A room from before "sk" (the state's keys in the room hash), or
		// one an older release patched since (its keys added, "sv" moved,
		// "sk" left), has its keys counted at its next patch, the limit
		// kept.
		for _, tc := range []struct {
			name string
			age  func(key string) error
		}{
			{"before sk", func(key string) error { return s.Client().HDel(ctx, key, "sk", "kv").Err() }},
			{"older release's patch", func(key string) error {
				if err := s.Client().HSet(ctx, key+":state", "o1", "1", "o2", "1").Err(); err != nil {
					return err
				}
				return s.Client().HSet(ctx, key, "sv", "1", "sb", "10").Err() // a 1, b 2, o1 1, o2 1
			}},
		} {
			room := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) {
				r.StatePolicy, r.State = rooms.PolicyOpen, rooms.State{"a": []byte("1"), "b": []byte("2")}
			})).Room
			if err := tc.age(s.RoomKey(room.ID)); err != nil {
				t.Fatal(err)
			}
			have, _ := s.Client().HLen(ctx, s.RoomKey(room.ID)+":state").Result()
			almost := rooms.State{}
			for i := range rooms.MaxStateKeys - int(have) {
				almost[fmt.Sprint("k", i)] = []byte("1")
			}
			if _, err := s.PatchState(ctx, alice, room.ID, rooms.StatePatch{Set: almost, IfMatch: -1}); err != nil {
				t.Fatalf("%s: %d keys more into a room of %d: %v", tc.name, len(almost), have, err)
			}
			_, err = s.PatchState(ctx, alice, room.ID, rooms.StatePatch{Set: rooms.State{"c": []byte("1")}, IfMatch: -1})
			wantErr(t, err, rooms.ErrTooLarge)
			if sk, _ := s.Client().HGet(ctx, s.RoomKey(room.ID), "sk").Result(); sk != strconv.Itoa(rooms.MaxStateKeys) {
				t.Fatalf("%s: sk %q after the patch, want %d", tc.name, sk, rooms.MaxStateKeys)
			}
		}
		checkInvariants(t, s)
	})
}

// Scripts run with EVALSHA; after SCRIPT FLUSH (or a restart) they must
// load again by themselves.
func TestScriptFlushFallsBackToEval(t *testing.T) {
	for _, b := range backendsWithFlush(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := openStore(t, b)
			ctx := context.Background()
			r := mustCreate(t, s, alice, newRoom()).Room
			flushScripts(t, s)
			mustJoin(t, s, bob, r.ID)
			if _, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"a": []byte("1")}, IfMatch: -1}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// closingStore is a store whose Delete first lets joinFirst and
// leaveFirst act on the room: requests answered just before the close.
type closingStore struct {
	*store.Store
	joinFirst, leaveFirst rooms.User
}

func (s closingStore) Delete(ctx context.Context, u rooms.User, id string) ([]string, error) {
	if _, err := s.Join(ctx, s.joinFirst, id); err != nil {
		return nil, err
	}
	if err := s.Leave(ctx, s.leaveFirst, id); err != nil {
		return nil, err
	}
	return s.Store.Delete(ctx, u, id)
}

// closedNotices records the room_closed notices a service sends.
type closedNotices struct {
	mu     sync.Mutex
	closed []string // user ids told
}

func (*closedNotices) Kicked(context.Context, string, string, bool) error { return nil }
func (n *closedNotices) Closed(_ context.Context, uids []string, _ string, _ rooms.CloseReason) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = append(n.closed, uids...)
	return nil
}

// The members told of a room's close are those in it as it closed (the
// owner who closed it too: its other platforms learn of it): one whose
// join was answered just before the close is told, one whose leave was is
// not.
func TestDeleteTellsTheMembersAtTheClose(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		if _, err := s.Join(ctx, bob, id); err != nil {
			t.Fatal(err)
		}
		told := &closedNotices{}
		svc := rooms.New(rooms.Config{Store: closingStore{Store: s, joinFirst: carol, leaveFirst: bob}, Notices: told})
		if err := svc.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		if slices.Sort(told.closed); !slices.Equal(told.closed, []string{alice.ID, carol.ID}) {
			t.Errorf("told of the close: %v, want alice and carol", told.closed)
		}
	})
}

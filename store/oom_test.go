package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/userlog"
)

// A full Redis (maxmemory, noeviction) lets a script that changed
// something write past maxmemory: following_set emptied the set first (a
// DEL, which Redis does not refuse out of memory) and its SADDs then grew
// it past maxmemory. Full, a new list is refused whole (503) and the old
// one stays; emptying it, which frees memory, still goes through.
func TestFullRedisRefusesFollowing(t *testing.T) {
	srv := ownServer(t)
	s := openStore(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr})
	ctx := context.Background()
	following := func(want ...string) {
		t.Helper()
		if got, err := s.Sessions().Following(ctx, alice.ID); err != nil || !slices.Equal(got, want) {
			t.Fatalf("following %v (%v), want %v", got, err, want)
		}
	}
	if err := s.Sessions().SetFollowing(ctx, alice.ID, []string{"u1", "u2"}); err != nil {
		t.Fatal(err)
	}
	redistest.Fill(t, srv.Addr)
	wantErr(t, s.Sessions().SetFollowing(ctx, alice.ID, []string{"u2", "u3", "u4"}), rooms.ErrUnavailable)
	following("u1", "u2")
	if err := s.Sessions().SetFollowing(ctx, alice.ID, nil); err != nil {
		t.Fatalf("emptied out of memory: %v", err)
	}
	following()
	redistest.Unfill(t, srv.Addr)
	for _, ids := range [][]string{{"u1", "u2"}, {"u2", "u3", "u4"}, {"u4"}} {
		if err := s.Sessions().SetFollowing(ctx, alice.ID, ids); err != nil {
			t.Fatal(err)
		}
		following(ids...)
	}
}

// A full Redis refuses a party's join whole (its listing, the first
// write, is refused before anything changed) and lets a member leave,
// which frees memory: the leave's trace of the left party is refused
// then, and the key deleted instead.
func TestFullRedisLetsAPartyBeLeft(t *testing.T) {
	srv := ownServer(t)
	s := openStore(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr})
	ctx := context.Background()
	x := s.Sessions()
	if _, err := x.SetParty(ctx, alice.ID, bob.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	redistest.Fill(t, srv.Addr)
	_, err := x.SetParty(ctx, alice.ID, carol.ID, time.Hour)
	wantErr(t, err, rooms.ErrUnavailable)
	if p, ok, err := x.Party(ctx, alice.ID); !ok || err != nil || p.LeaderUserID != bob.ID {
		t.Fatalf("party after a refused join: %+v %v %v", p, ok, err)
	}
	if ms, err := x.PartyMembers(ctx, carol.ID, 10); err != nil || len(ms) != 0 {
		t.Fatalf("the refused join's leader lists %v %v", ms, err)
	}
	if err := x.LeaveParty(ctx, alice.ID); err != nil {
		t.Fatalf("left out of memory: %v", err)
	}
	if _, ok, err := x.Party(ctx, alice.ID); ok || err != nil {
		t.Fatalf("a party after leaving: %v %v", ok, err)
	}
	if ms, err := x.PartyMembers(ctx, bob.ID, 10); err != nil || len(ms) != 0 {
		t.Fatalf("the left leader lists %v %v", ms, err)
	}
	if ks := s.Client().Keys(ctx, "*:party:*").Val(); len(ks) != 0 {
		t.Fatalf("party keys left after leaving out of memory: %v", ks)
	}
	redistest.Unfill(t, srv.Addr)
	if _, err := x.SetParty(ctx, alice.ID, carol.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ms, err := x.PartyMembers(ctx, carol.ID, 10); err != nil || len(ms) != 1 || ms[0].UserID != alice.ID {
		t.Fatalf("carol lists %v %v", ms, err)
	}
}

// A full Redis refuses a user's first personal event (a new history):
// user_send began it with a DEL of the old log, which Redis lets through
// out of memory (whatever it deletes), and then wrote the history's meta,
// log and event past maxmemory, for every user sent to for the first time.
func TestFullRedisRefusesANewHistory(t *testing.T) {
	srv := ownServer(t)
	s := openStore(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr})
	ctx := context.Background()
	if _, err := s.UserLogs().Send(ctx, alice.ID, []byte(`{"type":"message","n":0}`)); err != nil {
		t.Fatal(err)
	}
	redistest.Fill(t, srv.Addr)
	for _, uid := range []string{alice.ID, bob.ID} {
		_, err := s.UserLogs().Send(ctx, uid, []byte(`{"type":"message","n":1}`))
		wantErr(t, err, rooms.ErrUnavailable)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	if n, err := rdb.Exists(ctx, s.UserLogs().KeysOf(bob.ID).Meta, s.UserLogs().KeysOf(bob.ID).Log).Result(); err != nil || n != 0 {
		t.Fatalf("a new history out of memory: %d keys (%v), want none", n, err)
	}
	redistest.Unfill(t, srv.Addr)
	if seq, err := s.UserLogs().Send(ctx, bob.ID, []byte(`{"type":"message","n":1}`)); err != nil || seq != 1 {
		t.Fatalf("with memory to spare: seq %d (%v), want 1", seq, err)
	}
}

// A full Redis keeps taking a personal stream's acks, which free memory
// (the log trimmed to what the platforms have not got): user_ack began
// with its cursor's HSET, which Redis refuses out of memory, and the log
// stayed whole.
func TestFullRedisTakesAcks(t *testing.T) {
	srv := ownServer(t)
	s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, func(c *store.Config) {
		c.Offline.MaxLen = userlog.ResumeMargin + 100 // past the margin: the acks trim
	})
	ctx := context.Background()
	const sent = userlog.ResumeMargin + 20
	for i := range sent {
		if _, err := s.UserLogs().Send(ctx, alice.ID, fmt.Appendf(nil, `{"type":"message","n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	k := s.UserLogs().KeysOf(alice.ID)
	id := fmt.Sprintf("%d-0", sent)
	last, err := rdb.XRange(ctx, k.Log, id, id).Result()
	if err != nil || len(last) != 1 {
		t.Fatal(last, err)
	}
	tag, _ := last[0].Values["g"].(string) // the write's (user_ack checks it)
	redistest.Fill(t, srv.Addr)
	for _, platform := range []string{"pc", "web"} { // a cursor moved, a platform's first
		if moved, err := s.UserLogs().Ack(ctx, alice.ID, platform, tag, sent); err != nil || !moved {
			t.Fatalf("%s ack out of memory: %v (%v), want the cursor moved", platform, moved, err)
		}
	}
	if n, err := rdb.XLen(ctx, k.Log).Result(); err != nil || n != userlog.ResumeMargin+1 { // the margin and its resume's position
		t.Fatalf("log after the acks: %d entries (%v), want %d", n, err, userlog.ResumeMargin+1)
	}
	if ttl, err := rdb.PTTL(ctx, k.Cursors).Result(); err != nil || ttl <= 0 {
		t.Fatalf("cursors' TTL %v (%v)", ttl, err)
	}
}

// A full Redis refuses a room mutation whole, as FCALL of the library (a
// function not flagged allow-oom) and as EVALSHA of its script alike
// (Config.ScriptsOnly; Redis before 7): a state patch that only deletes
// began with an HDEL, which Redis lets through out of memory, and then
// wrote the room's new version and its event past maxmemory as EVALSHA.
func TestFullRedisRefusesMutationsWhole(t *testing.T) {
	for _, scriptsOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("scriptsOnly=%v", scriptsOnly), func(t *testing.T) {
			srv := ownServer(t)
			s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, func(c *store.Config) { c.ScriptsOnly = scriptsOnly })
			ctx := context.Background()
			id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.State = rooms.State{"hp": json.RawMessage("10")} })).Room.ID
			before, _, err := s.Get(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			del := rooms.StatePatch{Del: []string{"hp"}, IfMatch: rooms.NoIfMatch}
			redistest.Fill(t, srv.Addr)
			_, err = s.PatchState(ctx, alice, id, del)
			wantErr(t, err, rooms.ErrUnavailable)
			room, state, err := s.Get(ctx, id, true)
			if err != nil || room.Version != before.Version || string(state["hp"]) != "10" {
				t.Fatalf("room out of memory: version %d, state %s (%v), want version %d and hp", room.Version, state, err, before.Version)
			}
			redistest.Unfill(t, srv.Addr)
			if _, err := s.PatchState(ctx, alice, id, del); err != nil {
				t.Fatalf("patch with memory to spare: %v", err)
			}
		})
	}
}

// A full Redis still lets players leave and rooms end, which is how its
// memory comes back: the cleanups (a leave, a delete, a stream closed, the
// janitor's closes and sweeps) run out of memory, as functions flagged
// allow-oom and as EVALSHA without the probe, while a join is refused.
// They were refused whole (503) like every mutation: a full Redis kept
// every player in their room and every room open.
func TestFullRedisLetsRoomsEmpty(t *testing.T) {
	for _, scriptsOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("scriptsOnly=%v", scriptsOnly), func(t *testing.T) {
			srv := ownServer(t)
			s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, func(c *store.Config) { c.ScriptsOnly = scriptsOnly })
			ctx := context.Background()
			id := mustCreate(t, s, alice, newRoom()).Room.ID
			mustJoin(t, s, bob, id)
			other := mustCreate(t, s, carol, newRoom()).Room.ID
			redistest.Fill(t, srv.Addr)
			_, err := s.Join(ctx, carol, id)
			wantErr(t, err, rooms.ErrUnavailable)
			if err := s.Leave(ctx, bob, id); err != nil {
				t.Fatalf("a leave out of memory: %v", err)
			}
			if _, err := s.Delete(ctx, carol, other); err != nil {
				t.Fatalf("a delete out of memory: %v", err)
			}
			room, _, err := s.Get(ctx, id, false)
			if err != nil || room.PlayerCount != 1 {
				t.Fatalf("the room after the leave: %d players (%v), want 1", room.PlayerCount, err)
			}
			_, _, err = s.Get(ctx, other, false)
			wantErr(t, err, rooms.ErrRoomNotFound)
			redistest.Unfill(t, srv.Addr)
			mustJoin(t, s, carol, id)
		})
	}
}

// A full Redis keeps renewing the leases of the streams open and the
// instances' registrations: the renewals and the heartbeat only move what
// exists, and they were refused (their first write, a ZADD, is one Redis
// refuses out of memory), so every open stream, room, lobby and personal,
// ended lapsed within a TTL, its client came back to a refusal every 5 s,
// and the janitor took the live instances for dead.
func TestFullRedisKeepsStreamsAlive(t *testing.T) {
	srv := ownServer(t)
	// the users' streams counted, as by default (REALSYNC_MAX_STREAMS_PER_USER)
	s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, func(c *store.Config) { c.Quotas.StreamsPerUser = 4 })
	ctx := context.Background()
	id := mustCreate(t, s, alice, newRoom()).Room.ID
	room, lob := lease(id, alice, "full-room"), lease("", bob, "full-lobby")
	room.PlayerID = open(t, s, room, sse.Cursor{}).PlayerID
	if err := s.OpenLobby(ctx, lob); err != nil {
		t.Fatal(err)
	}
	sess := sse.Session{UserID: carol.ID, Platform: "pc", ID: "full"}
	if _, err := s.Sessions().OpenSession(ctx, sess, sse.Cursor{}, 0); err != nil {
		t.Fatal(err)
	}
	in := self("full-instance", time.Now())
	heartbeat(t, s, in)
	redistest.Fill(t, srv.Addr)
	for range 2 {
		if lost, err := s.RenewStreams(ctx, []sse.Lease{room, lob}); err != nil || len(lost) != 0 {
			t.Fatalf("streams renewed out of memory: lost %v (%v), want none", lost, err)
		}
		if lost, err := s.Sessions().RenewSessions(ctx, []sse.Session{sess}); err != nil || len(lost) != 0 {
			t.Fatalf("sessions renewed out of memory: lost %v (%v), want none", lost, err)
		}
		if renewed, err := s.Fleet().HeartbeatInstance(ctx, in); err != nil || !renewed {
			t.Fatalf("heartbeat out of memory: renewed %v (%v), want a renewal", renewed, err)
		}
	}
	// still refused: what would grow memory
	_, err := s.OpenStream(ctx, lease(id, bob, "full-new"), sse.ReadFrom, sse.Cursor{}, 1000)
	wantErr(t, err, rooms.ErrUnavailable)
}

// A full Redis lets the janitor close idle rooms, which is what gives
// memory back on its own: a visit began by taking the shard's lease with
// SET NX, which Redis refuses out of memory, so no visit ran at all (no
// room closed, no lapsed presence or session swept) until Redis had room.
func TestFullRedisJanitorClosesIdleRooms(t *testing.T) {
	srv := ownServer(t)
	s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, func(c *store.Config) {
		c.Lifecycle = store.Lifecycle{IdleTimeout: 200 * time.Millisecond}
	})
	ctx := context.Background()
	id := mustCreate(t, s, alice, newRoom()).Room.ID
	redistest.Fill(t, srv.Addr)
	var errs []error
	for deadline := time.Now().Add(10 * time.Second); !gone(s, id)(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("an idle room still open after 10 s of janitor visits out of memory (errors: %v)", errs)
		}
		for shard := range 8 {
			if _, err := s.Sweep(ctx, shard, "test", time.Millisecond); err != nil && len(errs) < 3 {
				errs = append(errs, err) // a repair refused out of memory ends a visit: not this test's
			}
			time.Sleep(time.Millisecond) // the lease lapses
		}
	}
	closedWith(t, s, id, "expired")
	redistest.Unfill(t, srv.Addr)
	if bad, err := invariantsCheck(s); err != nil || len(bad) != 0 {
		t.Fatalf("invariants after the room closed out of memory: %v (%v)", bad, err)
	}
}

// A full Redis refuses every HSETNX, even of a field that exists: the
// janitor's every tick re-asserted the layout and stripe records so, and
// each was refused (a warning a tick). They are read first now and
// written only when missing.
func TestFullRedisReadsTheLayoutRecords(t *testing.T) {
	srv := ownServer(t)
	s := openStore(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr})
	ctx := context.Background()
	redistest.Fill(t, srv.Addr)
	if err := s.RefreshStripes(ctx); err != nil {
		t.Errorf("the stripe record, out of memory: %v", err)
	}
	if restored, err := s.CheckMeta(ctx); err != nil || restored {
		t.Errorf("the layout record, out of memory: restored %v, %v", restored, err)
	}
	redistest.Unfill(t, srv.Addr)
}

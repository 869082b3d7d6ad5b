package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/userlog"
)

// sweepAll runs one janitor visit of every shard (lease 1 ms, so each call
// wins it) and adds up the reports.
func sweepAll(tb testing.TB, s *store.Store, total store.Report) {
	tb.Helper()
	ctx := context.Background()
	for shard := range 8 {
		// the lease of an earlier visit by "test" (this helper's, or a
		// test's own sweeper's) goes first, so this visit runs: a 1 ms
		// lease may outlive a sleep on the embedded store, whose clock
		// applies expiries on ticks of 10 ms and more when it is busy
		// (store/internal/conn, embedded.go), and the visit would be
		// skipped (CI run S: an unheld entry left after the last round)
		if err := s.ReleaseJanitorLeases(ctx, "test"); err != nil {
			tb.Fatal(err)
		}
		rep, err := s.Sweep(ctx, shard, "test", time.Millisecond)
		if err != nil {
			tb.Fatal(err)
		}
		for k, n := range rep {
			total[k] += n
		}
	}
}

// sweepUntil sweeps until done says so: at least 10 s and 200 rounds of
// visits of every shard (a machine loaded by other tests makes each round
// slower, not fewer), then it fails.
func sweepUntil(tb testing.TB, s *store.Store, total store.Report, done func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for round := 0; !done(); round++ {
		if round >= 200 && time.Now().After(deadline) {
			bad, _ := invariantsCheck(s)
			tb.Fatalf("not done after %d rounds of janitor visits (did %v; invariants: %v)", round, total, bad)
		}
		sweepAll(tb, s, total)
		time.Sleep(20 * time.Millisecond)
	}
}

func gone(s *store.Store, id string) func() bool {
	return func() bool {
		_, _, err := s.Get(context.Background(), id, false)
		return err != nil
	}
}

// closedWith checks the room's log ends with room_closed for reason.
func closedWith(tb testing.TB, s *store.Store, id, reason string) {
	tb.Helper()
	evs := events(tb, s, id)
	if len(evs) == 0 || evs[len(evs)-1].Type != "room_closed" || evs[len(evs)-1].Reason != reason {
		tb.Fatalf("log ends with %v, want room_closed %s", types(evs), reason)
	}
}

func TestLifecycleClosesRooms(t *testing.T) {
	const short = 300 * time.Millisecond
	cases := []struct {
		name   string
		life   store.Lifecycle
		setup  func(t *testing.T, s *store.Store, id string)
		reason string // the room_closed reason; "" = stays open
		action string // the janitor report's kind
	}{
		{name: "IdleRoomExpires", life: store.Lifecycle{IdleTimeout: short},
			reason: "expired", action: "expired"},
		{name: "ActivityPostponesExpiry", life: store.Lifecycle{IdleTimeout: 2 * time.Second},
			setup: func(t *testing.T, s *store.Store, id string) {
				// a patch every 200 ms for 2.4 s: never idle for 2 s (a
				// step may take 1.8 s on a loaded machine; with a 1 s
				// timeout 0.8 s of delay expired the room mid-test)
				for range 12 {
					time.Sleep(200 * time.Millisecond)
					sweepAll(t, s, store.Report{})
					if _, err := s.PatchState(context.Background(), alice, id, rooms.StatePatch{IfMatch: -1, Set: rooms.State{"k": []byte("1")}}); err != nil {
						t.Fatalf("patch while active: %v", err)
					}
				}
			},
			reason: "expired", action: "expired"},
		{name: "ConnectedRoomStaysOpen", life: store.Lifecycle{IdleTimeout: short},
			setup: func(t *testing.T, s *store.Store, id string) {
				open(t, s, lease(id, alice, "st"), sse.Cursor{})
			}},
		{name: "FinishedRoomClosesAfterRetention", life: store.Lifecycle{FinishedRetention: short},
			setup: func(t *testing.T, s *store.Store, id string) {
				update(t, s, alice, id, rooms.UpdateParams{Status: ptr(rooms.Finished)})
			},
			reason: "finished", action: "finished"},
		{name: "MaxLifetimeClosesActiveRoom", life: store.Lifecycle{MaxLifetime: short, IdleTimeout: time.Hour},
			setup: func(t *testing.T, s *store.Store, id string) {
				open(t, s, lease(id, alice, "st"), sse.Cursor{})
			},
			reason: "expired", action: "lifetime"},
		{name: "NoRuleNoClose", life: store.Lifecycle{LogIdleTrim: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				s := openStoreWith(t, b, func(c *store.Config) { c.Lifecycle = tc.life })
				id := mustCreate(t, s, alice, newRoom()).Room.ID
				mustJoin(t, s, bob, id)
				if tc.setup != nil {
					tc.setup(t, s, id)
				}
				rep := store.Report{}
				if tc.reason == "" {
					time.Sleep(2 * short)
					for range 3 {
						sweepAll(t, s, rep)
					}
					if gone(s, id)() {
						t.Fatalf("room closed (%v); want it open", rep)
					}
					checkInvariants(t, s)
					return
				}
				sweepUntil(t, s, rep, gone(s, id))
				closedWith(t, s, id, tc.reason)
				// the members hear it on their personal streams
				o, err := s.Sessions().OpenSession(context.Background(), sse.Session{UserID: bob.ID, Platform: "pc", ID: "b.1"}, sse.Cursor{}, 10)
				if err != nil || len(o.Replay) != 1 || !strings.Contains(string(o.Replay[0].Data), `"type":"room_closed"`) ||
					!strings.Contains(string(o.Replay[0].Data), `"roomId":"`+id+`"`) || !strings.Contains(string(o.Replay[0].Data), `"reason":"`+tc.reason+`"`) {
					t.Errorf("bob's inbox after the close: %+v %v", o, err)
				}
				if rep[tc.action] != 1 {
					t.Errorf("janitor report %v, want %s: 1", rep, tc.action)
				}
				if mine, _, err := s.MyRooms(context.Background(), bob, nil, rooms.MaxMyRooms); err != nil || len(mine) != 0 {
					t.Errorf("bob's rooms after the close: %v, %v", mine, err)
				}
				checkInvariants(t, s)
			})
		})
	}
}

func TestFinishedRoomIsReadOnly(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		mustJoin(t, s, bob, id)
		mustJoin(t, s, carol, id)
		update(t, s, alice, id, rooms.UpdateParams{Status: ptr(rooms.Finished)})
		before, _, _ := s.Get(ctx, id, false)

		_, err := s.PatchState(ctx, alice, id, rooms.StatePatch{IfMatch: -1, Set: rooms.State{"k": []byte("1")}})
		wantErr(t, err, rooms.ErrRoomFinished)
		_, err = s.SendMessage(ctx, bob, id, rooms.Message{Type: "chat", Data: []byte(`"hi"`)})
		wantErr(t, err, rooms.ErrRoomFinished)
		for _, p := range []rooms.UpdateParams{{Name: ptr("New")}, {Locked: ptr(true)}, {MaxPlayers: ptr(9)},
			{Visibility: ptr(rooms.Private)}, {Attributes: &map[string]any{"map": "x"}}} {
			_, err = s.Update(ctx, alice, id, p)
			wantErr(t, err, rooms.ErrRoomFinished)
		}
		_, err = s.Update(ctx, alice, id, rooms.UpdateParams{Status: ptr(rooms.Waiting)})
		wantErr(t, err, rooms.ErrInvalidTransition)
		// a patch that changes nothing is still fine
		update(t, s, alice, id, rooms.UpdateParams{Name: ptr(before.Name), Status: ptr(rooms.Finished)})
		after, _, _ := s.Get(ctx, id, false)
		if after.Version != before.Version {
			t.Fatalf("refused writes moved the version %d → %d", before.Version, after.Version)
		}
		// leaving and kicking still work
		if err := s.Leave(ctx, bob, id); err != nil {
			t.Fatalf("leave a finished room: %v", err)
		}
		if err := s.Kick(ctx, alice, id, 3); err != nil {
			t.Fatalf("kick from a finished room: %v", err)
		}
		checkInvariants(t, s)
	})
}

// logBytes is what a room's log holds: entry ids, tags and event JSON.
func logBytes(tb testing.TB, s *store.Store, id string) (int, int) {
	tb.Helper()
	entries, err := s.Client().XRange(context.Background(), s.LogKey(id), "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		n += len(e.ID) + len(e.Values["g"].(string)) + len(e.Values["d"].(string))
	}
	return n, len(entries)
}

func TestEventLogIsBoundedInBytes(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		big := []byte(`"` + strings.Repeat("x", 7000) + `"`) // 8 keys of ~7 KB: a 56 KB patch
		set := rooms.State{}
		for i := range 8 {
			set["k"+string(rune('a'+i))] = big
		}
		most, last := 0, 0
		for i := range 40 { // 2.2 MB of patches, 9 × the cap
			if _, err := s.PatchState(ctx, alice, id, rooms.StatePatch{IfMatch: -1, Set: set}); err != nil {
				t.Fatalf("patch %d: %v", i, err)
			}
			n, _ := logBytes(t, s, id)
			if n < last && n > store.DefaultLogMaxBytes*3/4 {
				t.Fatalf("log trimmed from %d to %d bytes: want at most 3/4 of the cap (%d)", last, n, store.DefaultLogMaxBytes*3/4)
			}
			most, last = max(most, n), n
		}
		if most > store.DefaultLogMaxBytes {
			t.Fatalf("log reached %d bytes, cap %d", most, store.DefaultLogMaxBytes)
		}
		n, entries := logBytes(t, s, id)
		if n < store.DefaultLogMaxBytes/2 || entries < 3 {
			t.Fatalf("log holds %d bytes in %d entries: trimmed far below the cap", n, entries)
		}
		// a resume from before the kept log gets a snapshot; from the last
		// kept event a replay
		o := open(t, s, lease(id, alice, "a"), sse.Cursor{Set: true, Version: 2})
		if o.Snapshot == nil {
			t.Fatalf("resume from version 2 replayed %d events; want a snapshot", len(o.Replay))
		}
		evs := events(t, s, id)
		o = open(t, s, lease(id, alice, "b"), sse.Cursor{Set: true, Version: evs[0].Version})
		if o.Snapshot != nil || len(o.Replay) != len(evs)-1 {
			t.Fatalf("resume from the oldest kept event: snapshot %v, %d events; want a replay of %d", o.Snapshot != nil, len(o.Replay), len(evs)-1)
		}
		checkInvariants(t, s)
	})
}

// TestEventLogTrimmedByCount: the log keeps its last LogMaxLen events
// and at most a tenth more, trimmed by the scripts that append (not by
// MAXLEN ~), so the room hash counts it exactly ("ln", "lb"); a room from
// before "ln" (an overestimated "lb") is counted at its next event.
func TestEventLogTrimmedByCount(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) { c.LogMaxLen = 20 })
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		patch := func(i int) {
			t.Helper()
			if _, err := s.PatchState(ctx, alice, id, rooms.StatePatch{IfMatch: -1, Set: rooms.State{"k": []byte(strconv.Itoa(i))}}); err != nil {
				t.Fatalf("patch %d: %v", i, err)
			}
		}
		// counted: the room hash counts the log exactly, the newest
		// event last, and the log holds at least `least` events
		// (all of them while fewer) and at most 22
		least := 20
		counted := func() {
			t.Helper()
			h := s.Client().HMGet(ctx, s.RoomKey(id), "ver", "ln", "lb").Val()
			bytes, n := logBytes(t, s, id)
			if h[1] != strconv.Itoa(n) || h[2] != strconv.Itoa(bytes) {
				t.Fatalf("room hash counts %v entries of %v bytes; the log holds %d of %d", h[1], h[2], n, bytes)
			}
			evs := events(t, s, id)
			if n < least && evs[0].Version != 1 || n > 22 || strconv.FormatInt(evs[len(evs)-1].Version, 10) != h[0] {
				t.Fatalf("log holds %d events, versions %d..%d, room version %v; want %d to 22, the newest last",
					n, evs[0].Version, evs[len(evs)-1].Version, h[0], least)
			}
		}
		// an ordinary event trusts the counts, it does not count the log
		// again: a count made wrong on purpose stays as wrong
		patch(-1)
		s.Client().HIncrBy(ctx, s.RoomKey(id), "lb", 7)
		patch(-2)
		bytes, _ := logBytes(t, s, id)
		if lb := s.Client().HGet(ctx, s.RoomKey(id), "lb").Val(); lb != strconv.Itoa(bytes+7) {
			t.Fatalf("lb %s after an event, want the count it was given moved by the event (%d): the log was counted again", lb, bytes+7)
		}
		s.Client().HIncrBy(ctx, s.RoomKey(id), "lb", -7)
		for i := range 60 {
			patch(i)
			counted()
		}
		// a room from before "ln": its "lb" overestimated the log
		s.Client().HDel(ctx, s.RoomKey(id), "ln", "lv")
		s.Client().HSet(ctx, s.RoomKey(id), "lb", 1<<30)
		patch(60)
		counted()
		// an event of an older version's script (a rolling upgrade): it
		// appends and moves the version, and counts nothing
		v := s.Client().HIncrBy(ctx, s.RoomKey(id), "ver", 1).Val()
		ev := fmt.Sprintf(`{"type":"state","roomId":%q,"version":%d,"ts":"2026-11-28T00:00:00Z","by":0,"set":{}}`, id, v)
		if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.LogKey(id), ID: fmt.Sprint(v, "-0"), Values: []any{"g", "old", "d", ev}}).Err(); err != nil {
			t.Fatal(err)
		}
		patch(61)
		counted()
		// an older version's janitor dropped the idle log: it deletes the
		// log and "lb", and moves no version
		s.Client().Del(ctx, s.LogKey(id))
		s.Client().HDel(ctx, s.RoomKey(id), "lb")
		least = 0
		for i := range 25 {
			patch(100 + i)
			counted()
			if evs := events(t, s, id); i < 22 && len(evs) != i+1 {
				t.Fatalf("%d events after the drop, the log holds %d", i+1, len(evs))
			}
		}
		// (not checkInvariants: it knows only the default length)
	})
}

func TestIdleLogIsDropped(t *testing.T) {
	alongside(t)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) { c.Lifecycle.LogIdleTrim = 200 * time.Millisecond })
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		mustJoin(t, s, bob, id)
		rep := store.Report{}
		sweepUntil(t, s, rep, func() bool { return s.Client().Exists(ctx, s.LogKey(id)).Val() == 0 })
		if rep["trimmed"] != 1 {
			t.Fatalf("report %v, want trimmed: 1", rep)
		}
		checkInvariants(t, s)
		o := open(t, s, lease(id, bob, "b"), sse.Cursor{Set: true, Version: 2})
		if o.Snapshot == nil || o.Snapshot.Version != 3 {
			t.Fatalf("resume after the drop: %+v; want a snapshot at version 3 (the connect)", o)
		}
		// the log starts again with the next event and stays checkable
		if _, err := s.PatchState(ctx, alice, id, rooms.StatePatch{IfMatch: -1, Set: rooms.State{"k": []byte("1")}}); err != nil {
			t.Fatal(err)
		}
		if evs := events(t, s, id); len(evs) != 2 || evs[0].Type != "player_connected" || evs[1].Type != "state" {
			t.Fatalf("log after the drop: %v", types(evs))
		}
		checkInvariants(t, s)
		// the new log is dropped in turn once the room idles again, with
		// no idle timeout to bring the room back to the janitor
		l := lease(id, bob, "b")
		l.PlayerID = o.PlayerID
		if err := s.CloseStream(ctx, l); err != nil {
			t.Fatal(err)
		}
		sweepUntil(t, s, rep, func() bool { return s.Client().Exists(ctx, s.LogKey(id)).Val() == 0 })
		if rep["trimmed"] != 2 {
			t.Fatalf("report %v, want trimmed: 2", rep)
		}
		checkInvariants(t, s)
	})
}

// countKeys lists the keys under the store's prefix on every master.
func countKeys(tb testing.TB, s *store.Store) []string {
	tb.Helper()
	keys, err := rediskeys.Scan(context.Background(), s.Client(), "*"+s.Prefix()+"*")
	if err != nil {
		tb.Fatal(err)
	}
	return keys
}

func TestRepairWalkFixesDrift(t *testing.T) {
	alongside(t)
	eachBackend(t, func(t *testing.T, s *store.Store) {
		// the index scan walks the whole node, whose keys are mostly other
		// tests': a call of 1 000 every 10th visit may need more rounds
		// than the test waits
		s.SetIndexScan(1_000_000, 1)
		ctx := context.Background()
		c := s.Client()
		pub := mustCreate(t, s, alice, newRoom()).Room
		mustJoin(t, s, bob, pub.ID)
		priv := mustCreate(t, s, carol, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
		other := mustCreate(t, s, bob, newRoom(func(r *rooms.NewRoom) { r.Mode = "duel"; r.Region = "eu" })).Room
		checkInvariants(t, s)

		tagOf := func(id string) string { k := s.RoomKey(id); return k[:strings.IndexByte(k, '}')+1] }
		pt, ot := tagOf(pub.ID), tagOf(other.ID)
		ghost := "zz" + strings.Repeat("G", 14) // no such room
		// index entries of a room that is gone, and a room missing from one
		c.ZAdd(ctx, pt+":idx:waiting", redis.Z{Score: 1, Member: ghost})
		c.ZAdd(ctx, pt+":idx:joinable:mode:battle", redis.Z{Score: 1, Member: ghost})
		c.ZRem(ctx, pt+":idx:waiting:mode:battle:region:us-west", pub.ID)
		// a stale fill member (a player count the room no longer has)
		c.ZAdd(ctx, pt+":idx:fill", redis.Z{Member: "099|00000000000000001|" + pub.ID})
		// entries of a mode no room has any more, whose keys the stats do
		// not name (the index scan finds them)
		lost := []string{pt + ":idx:fill:mode:gone:region:eu", pt + ":idx:joinable:mode:gone", pt + ":idx:waiting:region:nowhere"}
		c.ZAdd(ctx, lost[0], redis.Z{Member: "099|00000000000000001|" + ghost})
		c.ZAdd(ctx, lost[1], redis.Z{Score: 1, Member: ghost})
		c.ZAdd(ctx, lost[2], redis.Z{Score: 1, Member: ghost})
		// the user index: bob lost a room, alice got one she is not in
		c.HSet(ctx, pt+":users", "u-bob-x", ghost)
		c.HDel(ctx, pt+":users", bob.ID)
		c.HSet(ctx, ot+":users", alice.ID, other.ID)
		// a code of a room that is gone, and a private room's code lost;
		// a create key of a room that is gone (an older release's close)
		c.HSet(ctx, pt+":codes", "ZZZZZZ", ghost)
		c.HSet(ctx, pt+":ckeys", "0123456789abcdef0123456789abcdef", ghost)
		privCode, _ := c.HGet(ctx, s.RoomKey(priv.ID), "cd").Result()
		c.HDel(ctx, tagOf(priv.ID)+":codes", privCode)
		// stats that drifted, and a room missing from its schedule
		c.HIncrBy(ctx, pt+":stats", "players", 5)
		c.HSet(ctx, ot+":stats", "m:ghost:waiting", 2)
		c.ZRem(ctx, ot+":rooms:due", other.ID)
		if bad, _ := invariantsCheck(s); len(bad) < 8 {
			t.Fatalf("the checker sees only %d problems: %v", len(bad), bad)
		}

		rep := store.Report{}
		sweepUntil(t, s, rep, func() bool {
			bad, err := invariantsCheck(s)
			return err == nil && len(bad) == 0 && c.Exists(ctx, lost...).Val() == 0
		})
		for _, kind := range []string{"repair_index", "repair_user_index", "repair_code", "repair_create_key", "repair_schedule", "repair_stats"} {
			if rep[kind] == 0 {
				t.Errorf("no %s in the report %v", kind, rep)
			}
		}
		// nothing is repaired twice: a further full round finds nothing
		again := store.Report{}
		for range 40 {
			sweepAll(t, s, again)
		}
		if len(again) != 0 {
			t.Errorf("a clean store was repaired again: %v", again)
		}
		j, err := s.JoinByCode(ctx, alice, privCode)
		if err != nil || j.Room.ID != priv.ID {
			t.Fatalf("join by the restored code: %v, %v", j.Room.ID, err)
		}
	})
}

func TestChurnLeavesNoKeys(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) {
			c.Lifecycle = store.Lifecycle{IdleTimeout: 400 * time.Millisecond, FinishedRetention: 200 * time.Millisecond,
				LogIdleTrim: 200 * time.Millisecond}
			c.ClosedLogTTL = time.Second
			c.DisconnectGrace = 200 * time.Millisecond
			c.PresenceTTL = 300 * time.Millisecond
			c.Offline = userlog.Config{TTL: time.Minute}
		})
		ctx := context.Background()
		before := countKeys(t, s)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 6 {
					owner, guest := user(w*100+i), user(w*100+i+50)
					r := newRoom(func(r *rooms.NewRoom) {
						r.Mode = []string{"battle", "duel"}[i%2]
						if i%3 == 0 {
							r.Visibility = rooms.Private
						}
						if w%2 == 0 { // its shard's create key goes with it
							r.Key = fmt.Sprint("create-", i)
						}
					})
					j, err := s.Create(ctx, owner, r)
					if err != nil {
						t.Error(err)
						return
					}
					id := j.Room.ID
					s.Join(ctx, guest, id)
					s.SendMessage(ctx, guest, id, rooms.Message{Type: "chat", Data: []byte(`1`)})
					// the room's keys of keyed messages go with it
					s.SendMessage(ctx, owner, id, rooms.Message{Type: "chat", Data: []byte(`2`), Key: "k-" + id})
					switch i % 6 {
					case 0: // everyone leaves
						s.Leave(ctx, guest, id)
						s.Leave(ctx, owner, id)
					case 1: // the owner closes it
						s.Delete(ctx, owner, id)
					case 2: // finished, then abandoned
						s.Update(ctx, owner, id, rooms.UpdateParams{Status: ptr(rooms.Finished)})
					case 3: // a stream opens and its instance dies (no close)
						s.OpenStream(ctx, lease(id, guest, "dead"), sse.ReadFrom, sse.Cursor{}, 1000)
					case 4: // a stream opens and closes
						o, _ := s.OpenStream(ctx, lease(id, owner, "st"), sse.ReadFrom, sse.Cursor{}, 1000)
						l := lease(id, owner, "st")
						l.PlayerID = o.PlayerID
						s.CloseStream(ctx, l)
					case 5: // simply abandoned
					}
				}
			}()
		}
		wg.Wait()
		if len(countKeys(t, s)) <= len(before) {
			t.Fatal("the churn wrote no keys")
		}
		rep := store.Report{}
		// the room_closed notices of the rooms the janitor closed wait in
		// their members' personal logs, which expire (checked below)
		personal := func(k string) bool { return strings.Contains(k, ":ulog") || strings.Contains(k, ":ubody:") }
		fixed := func(k string) bool {
			return strings.HasSuffix(k, ":meta") || strings.HasSuffix(k, ":clock") || personal(k)
		}
		sweepUntil(t, s, rep, func() bool {
			for _, k := range countKeys(t, s) {
				if !fixed(k) {
					return false
				}
			}
			return true
		})
		after := countKeys(t, s)
		clocks, logs := 0, 0
		for _, k := range after {
			switch {
			case strings.HasSuffix(k, ":clock"):
				clocks++
			case personal(k):
				logs++
				if ttl := s.Client().PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute {
					t.Errorf("%s: TTL %v, want the offline TTL (1m) at most", k, ttl)
				}
			}
		}
		if logs == 0 {
			t.Error("no member of a room the janitor closed was told")
		}
		if len(after)-clocks-logs != len(before) {
			t.Fatalf("keys before %v, after %v", before, after)
		}
		t.Logf("janitor: %v; left: %d clock keys and %v", rep, clocks, before)
	})
}

func TestStreamsPerPlayerAreBounded(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		mustJoin(t, s, bob, id)
		for i := range rooms.MaxStreamsPerPlayer {
			open(t, s, lease(id, alice, "a"+string(rune('0'+i))), sse.Cursor{})
		}
		_, err := s.OpenStream(ctx, lease(id, alice, "one-more"), sse.ReadFrom, sse.Cursor{}, 1000)
		wantErr(t, err, rooms.ErrTooManyStreams)
		open(t, s, lease(id, alice, "a0"), sse.Cursor{}) // a held stream reopens (a resync)
		open(t, s, lease(id, bob, "b"), sse.Cursor{})    // other players are not limited by it
		checkInvariants(t, s)
	})
}

// A Redis out of memory (maxmemory, noeviction) refuses writes: the store
// says unavailable (503), not an internal error, and writes nothing half.
// Reads still answer: a room (GET /v1/rooms/{id}, a stream token's
// membership check), the listing and the stats (Redis refuses every
// command queued in a MULTI when out of memory, reads too: a room read
// there answered 503, an operator's find).
func TestFullRedisIsUnavailable(t *testing.T) {
	srv, err := redistest.StartServer("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	// the users' streams counted, as by default (REALSYNC_MAX_STREAMS_PER_USER)
	s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, func(c *store.Config) { c.Quotas.StreamsPerUser = 4 })
	ctx := context.Background()
	id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.State = rooms.State{"hp": json.RawMessage("10")} })).Room.ID
	mustJoin(t, s, bob, id)
	before, beforeState, err := s.Get(ctx, id, true)
	if err != nil {
		t.Fatal(err)
	}
	// alice has a personal history and a lobby lease (lapsed by the time
	// Redis is full): their scripts' first changes when she opens again
	// (the log's expiry moved, the lapsed lease purged) are commands Redis
	// does not refuse out of memory, and a script that changed something is
	// let write past maxmemory
	sess := sse.Session{UserID: alice.ID, Platform: "pc", ID: "before"}
	if _, err := s.Sessions().OpenSession(ctx, sess, sse.Cursor{}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Sessions().CloseSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenLobby(ctx, lease("", alice, "lobby-before")); err != nil {
		t.Fatal(err)
	}
	if err := s.LapseUserStreams(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	var last error
	for i := range 5000 {
		if _, last = s.Create(ctx, user(i), newRoom()); last != nil {
			break
		}
	}
	wantErr(t, last, rooms.ErrUnavailable)
	// and stays full: memory freed since (a client's buffers) could let
	// the reads below pass for a Redis with room to spare
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	room, state, err := s.Get(ctx, id, true)
	if err != nil || room.Version != before.Version || len(room.Players) != 2 || string(state["hp"]) != string(beforeState["hp"]) {
		t.Fatalf("room read out of memory: %+v %v (%v), want %+v %v", room, state, err, before, beforeState)
	}
	gone := id[:len(id)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(id, "a")]
	_, _, err = s.Get(ctx, gone, false)
	wantErr(t, err, rooms.ErrRoomNotFound)
	if res, err := s.Listing().List(ctx, lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Limit: 10}); err != nil || len(res.Rooms) == 0 {
		t.Fatalf("listing out of memory: %+v (%v)", res, err)
	}
	if _, err := s.Listing().Stats(ctx); err != nil {
		t.Fatalf("stats out of memory: %v", err)
	}
	// a stream records its presence, a write: refused
	_, err = s.OpenStream(ctx, lease(id, alice, "oom"), sse.ReadFrom, sse.Cursor{}, 1000)
	wantErr(t, err, rooms.ErrUnavailable)
	// and so do a personal stream's session and a lobby stream's lease
	_, err = s.Sessions().OpenSession(ctx, sse.Session{UserID: alice.ID, Platform: "pc", ID: "oom"}, sse.Cursor{}, 0)
	wantErr(t, err, rooms.ErrUnavailable)
	wantErr(t, s.OpenLobby(ctx, lease("", alice, "lobby-oom")), rooms.ErrUnavailable)
	checkInvariants(t, s)
}

// verShift is a hook that makes the next n reads of a room's "ver" field
// in a pipeline answer another version, as if a script had changed the
// room between the pipeline's reads.
type verShift struct{ n atomic.Int32 }

func (*verShift) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*verShift) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *verShift) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if hg, ok := c.(*redis.StringCmd); ok && len(c.Args()) == 3 && c.Args()[0] == "hget" && c.Args()[2] == "ver" && h.n.Add(-1) >= 0 {
				v, _ := hg.Int64()
				hg.SetVal(strconv.FormatInt(v+1, 10))
			}
		}
		return err
	}
}

// The room read out of memory (a plain pipeline) checks the version it
// read against the room's version read again after the rest: a change
// between the two is read once more, and a room that changed during both
// reads is unavailable (503), never a mix of two versions.
func TestPlainRoomReadChecksItsVersion(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(t)})
	joined, err := s.Create(ctx, rooms.User{ID: "u-owner", Name: "o"}, rooms.NewRoom{Name: "r", Mode: "m", Region: "eu", MaxPlayers: 4})
	if err != nil {
		t.Fatal(err)
	}
	room := joined.Room
	h := &verShift{}
	s.Client().AddHook(h)
	for _, tc := range []struct {
		shifted int32
		ok      bool
	}{{0, true}, {1, true}, {2, false}} {
		h.n.Store(tc.shifted)
		r, err := s.ReadRoomPlain(ctx, room.ID)
		if tc.ok && (err != nil || r.Version != room.Version) {
			t.Errorf("%d reads changed: %+v %v, want the room at version %d", tc.shifted, r, err, room.Version)
		}
		if !tc.ok && !errors.Is(err, rooms.ErrUnavailable) {
			t.Errorf("%d reads changed: %+v %v, want ErrUnavailable", tc.shifted, r, err)
		}
	}
}

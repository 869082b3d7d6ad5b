package realsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	rs "github.com/realsync/realsync/sdk/go"
)

// Every hand-written method against a real server: a host player creates
// and runs a room, a second player joins, a dedicated server (an API key)
// writes state, messages, changes the status, kicks and closes it.
func TestClientMethods(t *testing.T) {
	eachBackend(t, serverOpts{}, func(t *testing.T, s *server) {
		c := ctx(t)
		host, bob := s.guest(t, "host"), s.guest(t, "bob")
		gs := rs.New(s.url, rs.WithAPIKey(s.keys.all))

		created, err := host.CreateRoom(c, arena("Arena"))
		if err != nil {
			t.Fatal(err)
		}
		id := created.Room.Id
		if created.PlayerId != 1 || created.Room.Name != "Arena" {
			t.Fatalf("created %+v", created)
		}
		joined, err := bob.JoinRoom(c, id)
		if err != nil || joined.PlayerId != 2 {
			t.Fatalf("join: %+v %v", joined, err)
		}
		room, err := gs.GetRoom(c, id)
		if err != nil || room.PlayerCount != 2 || room.Players == nil || len(*room.Players) != 2 {
			t.Fatalf("get: %+v %v", room, err)
		}

		v, err := gs.PatchState(c, id, rs.State{"round": 1, "map": "dust2"})
		if err != nil || v.StateVersion != 1 {
			t.Fatalf("patch: %+v %v", v, err)
		}
		if _, err := gs.PatchStateIf(c, id, 0, rs.State{"round": 2}); !rs.IsCode(err, "VERSION_MISMATCH") || rs.StatusOf(err) != 412 {
			t.Fatalf("stale If-Match: %v", err)
		}
		if v, err = gs.PatchStateIf(c, id, 1, rs.State{"round": 2, "map": nil}); err != nil || v.StateVersion != 2 {
			t.Fatalf("If-Match: %+v %v", v, err)
		}
		sv, err := bob.GetState(c, id)
		if err != nil || sv.StateVersion != 2 || sv.State["round"] != float64(2) || len(sv.State) != 1 {
			t.Fatalf("state: %+v %v", sv, err)
		}

		mv, err := gs.SendMessage(c, id, "announce", map[string]string{"text": "round 2"})
		if err != nil {
			t.Fatal(err)
		}
		// sent again under its key (a retry after a lost answer): applied
		// once, answered as the first run was
		keyed := rs.WithIdempotencyKey(c, "announce-round-2")
		k1, err1 := gs.SendMessage(keyed, id, "announce", map[string]string{"text": "round 2"})
		k2, err2 := gs.SendMessage(keyed, id, "announce", map[string]string{"text": "round 2"})
		if err1 != nil || err2 != nil || k1 != k2 || k1 <= mv {
			t.Fatalf("a keyed message sent twice: versions %d and %d (%v, %v), want one version after %d", k1, k2, err1, err2, mv)
		}
		mv = k1
		if _, err := host.SendMessage(c, id, "whisper", "psst", 2); err != nil {
			t.Fatal(err)
		}
		msgs, err := bob.ListMessages(c, id, 10, 0) // newest first: the whisper, the keyed one once, the first
		if err != nil || len(msgs) != 3 || msgs[1].Version != mv || msgs[1].MessageId == nil || msgs[1].From != 0 ||
			string(msgs[1].Data) != `{"text":"round 2"}` {
			t.Fatalf("messages: %+v %v", msgs, err)
		}
		if older, err := bob.ListMessages(c, id, 10, msgs[0].Version); err != nil || len(older) != 2 || older[0].Version != mv {
			t.Fatalf("messages before %d: %+v %v", msgs[0].Version, older, err)
		}

		list, err := bob.ListRooms(c, &rs.ListRoomsParams{Mode: ptr("battle"), Attr: &map[string]string{"map": "dust2", "rank.gte": "1400"}})
		if err != nil || len(list.Rooms) != 1 || list.Rooms[0].Id != id {
			t.Fatalf("list: %+v %v", list, err)
		}
		if list, err = bob.ListRooms(c, &rs.ListRoomsParams{Attr: &map[string]string{"attr.rank.gte": "1600"}}); err != nil || len(list.Rooms) != 0 {
			t.Fatalf("list filtered out: %+v %v", list, err)
		}
		stats, err := gs.LobbyStats(c)
		if err != nil || stats.Rooms.Waiting != 1 || stats.Players != 2 {
			t.Fatalf("stats: %+v %v", stats, err)
		}

		if err := gs.Kick(c, id, 2, true); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.JoinRoom(c, id); !rs.IsCode(err, "BANNED") {
			t.Fatalf("banned rejoin: %v", err)
		}
		if room, err = gs.SetStatus(c, id, rs.Playing); err != nil || room.Status != rs.Playing {
			t.Fatalf("status: %+v %v", room, err)
		}

		private := arena("Private")
		private.Visibility = ptr(rs.Private)
		p, err := host.CreateRoom(c, private)
		if err != nil || p.Room.InviteCode == nil {
			t.Fatalf("private: %+v %v", p, err)
		}
		carol := s.guest(t, "carol")
		if j, err := carol.JoinByCode(c, *p.Room.InviteCode); err != nil || j.Room.Id != p.Room.Id || j.PlayerId != 2 {
			t.Fatalf("join by code: %+v %v", j, err)
		}
		if err := carol.LeaveRoom(c, p.Room.Id); err != nil {
			t.Fatal(err)
		}
		if err := carol.LeaveRoom(c, p.Room.Id); !rs.IsCode(err, "ROOM_NOT_FOUND") {
			t.Fatalf("leave again: %v", err) // private: not a member sees 404
		}

		q, err := carol.QuickJoin(c, rs.QuickJoinRequest{Mode: "duel", Regions: &[]string{"eu"},
			Create: &struct {
				Attributes  *rs.Attributes  `json:"attributes,omitempty"`
				MaxPlayers  *int            `json:"maxPlayers,omitempty"`
				Name        string          `json:"name"`
				StatePolicy *rs.StatePolicy `json:"statePolicy,omitempty"`
			}{Name: "Duel", MaxPlayers: ptr(2)}})
		if err != nil || !q.Created || q.Room.Mode != "duel" {
			t.Fatalf("quick-join create: %+v %v", q, err)
		}
		if q2, err := bob.QuickJoin(c, rs.QuickJoinRequest{Mode: "duel"}); err != nil || q2.Created || q2.Room.Id != q.Room.Id {
			t.Fatalf("quick-join: %+v %v", q2, err)
		}

		if err := gs.DeleteRoom(c, id); err != nil {
			t.Fatal(err)
		}
		if _, err := gs.GetRoom(c, id); !rs.IsCode(err, "ROOM_NOT_FOUND") {
			t.Fatalf("deleted room: %v", err)
		}
	})
}

// Every error answer is an *Error with the status, the problem code and
// the field errors, found by errors.As, IsCode and StatusOf.
func TestErrors(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	c := ctx(t)
	host, id := s.hostRoom(t, "Arena")
	bob := s.guest(t, "bob")
	if _, err := bob.JoinRoom(c, id); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		call   func() error
		status int
		code   string
		field  string // a field named in Errors, when any
	}{
		{"unknown room", func() error { _, err := host.GetRoom(c, "nope"); return err }, 404, "ROOM_NOT_FOUND", ""},
		{"invalid room", func() error {
			_, err := host.CreateRoom(c, rs.CreateRoomRequest{Name: "x", Mode: "Bad Mode", Region: "eu", MaxPlayers: ptr(500)})
			return err
		}, 422, "VALIDATION_FAILED", "maxPlayers"},
		{"API key on a player route", func() error {
			_, err := rs.New(s.url, rs.WithAPIKey(s.keys.all)).CreateRoom(c, arena("A"))
			return err
		}, 403, "SCOPE_REQUIRED", ""},
		{"API key without the scope", func() error {
			_, err := rs.New(s.url, rs.WithAPIKey(s.keys.reader)).PatchState(c, id, rs.State{"a": 1})
			return err
		}, 403, "SCOPE_REQUIRED", ""},
		{"unknown API key", func() error {
			_, err := rs.New(s.url, rs.WithAPIKey("rsk_unknown")).GetRoom(c, id)
			return err
		}, 401, "UNAUTHENTICATED", ""},
		{"bad token", func() error { _, err := rs.New(s.url, rs.WithToken("junk")).GetRoom(c, id); return err }, 401, "UNAUTHENTICATED", ""},
		{"other player's state key", func() error { _, err := bob.PatchState(c, id, rs.State{"score": 1}); return err }, 403, "STATE_KEY_FORBIDDEN", ""},
		{"not the owner", func() error { _, err := bob.SetStatus(c, id, rs.Playing); return err }, 403, "NOT_OWNER", ""},
		{"kick unknown player", func() error { return host.Kick(c, id, 9, false) }, 404, "PLAYER_NOT_FOUND", ""},
		{"no match", func() error { _, err := bob.QuickJoin(c, rs.QuickJoinRequest{Mode: "nomatch"}); return err }, 404, "NO_MATCH", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var e *rs.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *realsync.Error", err, err)
			}
			if e.Status != tc.status || e.Code != tc.code || !rs.IsCode(err, tc.code) || rs.StatusOf(err) != tc.status || e.Title == "" {
				t.Fatalf("got %+v, want %d %s", e, tc.status, tc.code)
			}
			if tc.field != "" && !hasField(e.Errors, tc.field) {
				t.Fatalf("errors %+v do not name %s", e.Errors, tc.field)
			}
		})
	}
}

func hasField(errs []rs.FieldError, f string) bool {
	for _, e := range errs {
		if e.Field == f {
			return true
		}
	}
	return false
}

// A token source is asked again, with the refused token, after a 401, and
// the request is sent once more (its body too).
func TestTokenSourceRenewsAfter401(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	c := ctx(t)
	g, err := rs.New(s.url).Guest(c, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var calls, refusals atomic.Int32
	src := func(_ context.Context, refused string) (string, error) {
		calls.Add(1)
		switch refused {
		case "":
			return "expired-or-revoked", nil
		case "expired-or-revoked":
			refusals.Add(1)
			return g.Token, nil
		}
		return "", errors.New("refused twice")
	}
	alice := rs.New(s.url, rs.WithTokenSource(src))
	room, err := alice.CreateRoom(c, arena("Renewed"))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || refusals.Load() != 1 || room.Room.Name != "Renewed" {
		t.Fatalf("calls %d, refusals %d, room %+v", calls.Load(), refusals.Load(), room.Room)
	}
	// a source that has nothing better ends with the server's 401
	bad := rs.New(s.url, rs.WithTokenSource(func(context.Context, string) (string, error) { return "junk", nil }))
	if _, err := bad.GetRoom(c, room.Room.Id); !rs.IsCode(err, "UNAUTHENTICATED") {
		t.Fatalf("bad source: %v", err)
	}
}

// An answer that is no problem (a proxy's) is an *Error with its status,
// no code and the body's text.
func TestErrorFromNonProblem(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	_, err := rs.New(srv.URL).GetRoom(ctx(t), "r1")
	var e *rs.Error
	if !errors.As(err, &e) || e.Status != 502 || e.Code != "" || e.Detail != "bad gateway" || e.RetryAfter.Seconds() != 7 {
		t.Fatalf("got %#v", err)
	}
	if b, _ := json.Marshal(e.Errors); string(b) != "null" {
		t.Fatalf("errors %s", b)
	}
}

// Guest renews its token with POST /v1/auth/refresh once it has less than
// five minutes left, and the user (so its rooms) stays the same.
func TestGuestRenewsItsToken(t *testing.T) {
	// the server's clock runs 24 h minus 4 min behind: the tokens it
	// issues (valid 24 h by its clock) have 4 minutes left by ours
	late := func() time.Time { return time.Now().Add(-24*time.Hour + 4*time.Minute) }
	s := newServer(t, redistestEmbedded, serverOpts{clock: late})
	c := ctx(t)
	alice := rs.New(s.url)
	g, err := alice.Guest(c, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if s.refreshes.Load() != 0 {
		t.Fatalf("%d refreshes before any call", s.refreshes.Load())
	}
	room, err := alice.CreateRoom(c, arena("Alice's"))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes for one call", n)
	}
	mine, err := alice.API.MyRoomsWithResponse(c, nil)
	if err != nil || mine.JSON200 == nil || len(mine.JSON200.Rooms) != 1 || mine.JSON200.Rooms[0].Id != room.Room.Id {
		t.Fatalf("the renewed token's user has rooms %s (%v); guest %s", mine.Body, err, g.UserId)
	}
}

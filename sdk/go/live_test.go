package realsync_test

import (
	"encoding/json"
	"testing"

	rs "github.com/realsync/realsync/sdk/go"
)

// A LiveRoom fed a stream's events (through a dropped connection) equals
// the room and state the server answers afterwards.
func TestLiveRoomMatchesServer(t *testing.T) {
	eachBackend(t, serverOpts{}, func(t *testing.T, s *server) {
		c := ctx(t)
		host, bob, carol := s.guest(t, "host"), s.guest(t, "bob"), s.guest(t, "carol")
		gs := rs.New(s.url, rs.WithAPIKey(s.keys.all), fastBackoff)
		req := arena("Live")
		req.State = &rs.State{"map": "dust2", "round": 0}
		created, err := host.CreateRoom(c, req)
		if err != nil {
			t.Fatal(err)
		}
		id := created.Room.Id
		st := gs.Stream(c, id)
		defer st.Close()
		live := &rs.LiveRoom{}
		apply := func(untilVersion int64) {
			t.Helper()
			for !live.Ready || live.Version < untilVersion {
				ev, err := st.Next()
				if err != nil {
					t.Fatal(err)
				}
				if err := live.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		apply(0)
		steps := []func() error{
			func() error { _, err := bob.JoinRoom(c, id); return err },
			func() error { _, err := carol.JoinRoom(c, id); return err },
			func() error { _, err := host.PatchState(c, id, rs.State{"round": 1, "map": nil}); return err },
			func() error { _, err := bob.PatchState(c, id, rs.State{"player_2_ready": true}); return err },
			func() error {
				_, err := host.UpdateRoom(c, id, rs.UpdateRoomRequest{Name: ptr("Renamed"), Locked: ptr(true), MaxPlayers: ptr(6),
					Attributes: &rs.Attributes{"map": "nuke"}})
				return err
			},
			func() error { s.dropStreams(t); return nil },
			func() error { _, err := gs.SendMessage(c, id, "chat", "hi"); return err },
			func() error { return carol.LeaveRoom(c, id) },
			func() error { return host.LeaveRoom(c, id) }, // bob owns it now
			func() error {
				_, err := bob.UpdateRoom(c, id, rs.UpdateRoomRequest{Visibility: ptr(rs.Private), Locked: ptr(false)})
				return err
			},
			func() error { _, err := gs.SetStatus(c, id, rs.Playing); return err },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		room, err := gs.GetRoom(c, id)
		if err != nil {
			t.Fatal(err)
		}
		state, err := gs.GetState(c, id)
		if err != nil {
			t.Fatal(err)
		}
		apply(room.Version)
		if g, w := roomJSON(t, live.Room), roomJSON(t, *room); g != w {
			t.Fatalf("live room\n%s\nserver\n%s", g, w)
		}
		g, _ := json.Marshal(live.State)
		w, _ := json.Marshal(state.State)
		if string(g) != string(w) || live.StateVersion != state.StateVersion || live.Version != room.Version {
			t.Fatalf("live state %s v%d (room v%d), server %s v%d (room v%d)", g, live.StateVersion, live.Version, w, state.StateVersion, room.Version)
		}
	})
}

// roomJSON is r as JSON without updatedAt (not carried by events).
func roomJSON(t *testing.T, r rs.Room) string {
	t.Helper()
	b, _ := json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "updatedAt")
	b, _ = json.MarshalIndent(m, "", " ")
	return string(b)
}

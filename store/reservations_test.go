package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// joinableIDs lists the joinable rooms of the mode and region in fill order.
func joinableIDs(t *testing.T, s *store.Store, mode, region string) []string {
	t.Helper()
	page, err := s.Listing().List(context.Background(), lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Joinable: true,
		Mode: mode, Region: region, Sort: lobby.Fill, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range page.Rooms {
		ids = append(ids, r.ID)
	}
	return ids
}

// Reserved seats count toward maxPlayers for everyone but their users:
// the room leaves the joinable and fill indexes when its seats are all
// taken or held, others are ROOM_FULL, quick-join passes it over; each
// holder takes their seat (by id, even in a private room); only the owner
// or the server reserves, never past maxPlayers; the events count seats
// and name no user.
func TestSeatReservations(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		dave := rooms.User{ID: "u-dave", Name: "dave"}
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = "resv", "eu", 3 })).Room.ID
		_, err := s.ReserveSeats(ctx, bob, id, []string{"u-carol"}, time.Minute)
		wantErr(t, err, rooms.ErrNotMember)
		mustJoin(t, s, dave, id)
		_, err = s.ReserveSeats(ctx, dave, id, []string{"u-carol"}, time.Minute)
		wantErr(t, err, rooms.ErrNotOwner)
		_, err = s.ReserveSeats(ctx, alice, id, []string{"u-bob", "u-carol"}, time.Minute) // 2 + 2 > 3
		wantErr(t, err, rooms.ErrRoomFull)
		if err := s.Leave(ctx, dave, id); err != nil {
			t.Fatal(err)
		}
		res, err := s.ReserveSeats(ctx, alice, id, []string{"u-bob", "u-carol", alice.ID}, time.Minute) // alice: a member, skipped
		if err != nil || res.ReservedSeats != 2 || time.Until(res.ExpiresAt) < 50*time.Second {
			t.Fatalf("reserve: %+v, %v", res, err)
		}
		r, _, _ := s.Get(ctx, id, false)
		if r.ReservedSeats != 2 || r.Joinable() {
			t.Fatalf("room %+v: want 2 reserved seats, not joinable", r)
		}
		if ids := joinableIDs(t, s, "resv", "eu"); len(ids) != 0 {
			t.Fatalf("joinable rooms %v with every seat taken or held", ids)
		}
		_, err = s.Join(ctx, dave, id)
		wantErr(t, err, rooms.ErrRoomFull)
		q, err := s.QuickJoin(ctx, dave, "resv", []string{"eu"}, nil, nil)
		wantErr(t, err, rooms.ErrNoMatch)
		_ = q
		// the server renews one hold: no new seat
		if res, err := s.ReserveSeats(ctx, server, id, []string{"u-bob"}, 2*time.Minute); err != nil || res.ReservedSeats != 2 {
			t.Fatalf("renew: %+v, %v", res, err)
		}
		mustJoin(t, s, bob, id)
		r, _, _ = s.Get(ctx, id, false)
		if r.ReservedSeats != 1 || r.PlayerCount != 2 {
			t.Fatalf("after bob took his seat: %+v", r)
		}
		mustJoin(t, s, carol, id)
		r, _, _ = s.Get(ctx, id, false)
		if r.ReservedSeats != 0 || r.PlayerCount != 3 {
			t.Fatalf("after carol took hers: %+v", r)
		}
		var reserved []json.RawMessage
		for _, e := range events(t, s, id) {
			if e.Type == rooms.EventSeatsReserved {
				reserved = append(reserved, e.Raw)
				var ev rooms.SeatsReservedEvent
				if err := json.Unmarshal(e.Raw, &ev); err != nil || ev.ExpiresAt == "" {
					t.Fatalf("seats_reserved %s: %v", e.Raw, err)
				}
			}
		}
		if len(reserved) != 2 {
			t.Fatalf("seats_reserved events %s, want 2", reserved)
		}

		// a private room: the holder joins by id, without the code
		priv := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room.ID
		if _, err := s.ReserveSeats(ctx, alice, priv, []string{"u-bob"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		_, err = s.Join(ctx, carol, priv)
		wantErr(t, err, rooms.ErrRoomNotFound)
		mustJoin(t, s, bob, priv)
	})
}

// A public room with a seat held moves in the fill indexes as players come
// and go (its member counts seats taken or reserved): listed once, and
// nothing left in any index once it is gone (a tester's find: the member
// moved only with the player count, so a join after a reservation left a
// second member, which outlived the room and broke quick-join of its mode).
func TestHeldSeatsMoveTheFillEntry(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		dave := rooms.User{ID: "u-dave", Name: "dave"}
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = "held", "eu", 6 })).Room.ID
		if _, err := s.ReserveSeats(ctx, alice, id, []string{"u-friend"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
		mustJoin(t, s, dave, id)
		checkInvariants(t, s)
		if ids := joinableIDs(t, s, "held", "eu"); len(ids) != 1 || ids[0] != id {
			t.Fatalf("joinable rooms %v, want %s once", ids, id)
		}
		if err := s.Leave(ctx, dave, id); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
		if _, err := s.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
		if ids := joinableIDs(t, s, "held", "eu"); len(ids) != 0 {
			t.Fatalf("joinable rooms %v after the room is gone", ids)
		}
		qj, err := s.QuickJoin(ctx, bob, "held", []string{"eu"}, nil, nil)
		if !errors.Is(err, rooms.ErrNoMatch) {
			t.Fatalf("quick-join after the room is gone: %+v %v, want ErrNoMatch", qj, err)
		}
	})
}

// A hold that expires is dropped by the janitor's next look at the room:
// reservation_expired, the seats free again (the room back in the
// joinable index), and the room's keys all go when it closes.
func TestSeatReservationsExpire(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = "resx", "eu", 2 })).Room.ID
		if _, err := s.ReserveSeats(ctx, alice, id, []string{"u-bob"}, 30*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if ids := joinableIDs(t, s, "resx", "eu"); len(ids) != 0 {
			t.Fatalf("joinable %v while the last seat is held", ids)
		}
		time.Sleep(60 * time.Millisecond)
		sweepUntil(t, s, store.Report{}, func() bool {
			r, _, _ := s.Get(ctx, id, false)
			return r.ReservedSeats == 0
		})
		evs := events(t, s, id)
		last := evs[len(evs)-1]
		var ev rooms.ReservationExpiredEvent
		if err := json.Unmarshal(last.Raw, &ev); err != nil || last.Type != rooms.EventReservationExpired || ev.Seats != 1 || ev.ReservedSeats != 0 {
			t.Fatalf("last event %s, want reservation_expired of 1 seat", last.Raw)
		}
		if ids := joinableIDs(t, s, "resx", "eu"); len(ids) != 1 || ids[0] != id {
			t.Fatalf("joinable %v after the hold expired, want [%s]", ids, id)
		}
		_, err := s.Join(ctx, bob, id) // bob's hold is gone; the seat is free for anyone
		if err != nil {
			t.Fatal(err)
		}
		// a hold left when the room closes goes with it
		if _, err := s.ReserveSeats(ctx, alice, id, []string{"u-carol"}, time.Minute); err == nil {
			t.Fatal("reserved a seat in a full room")
		}
		if err := s.Leave(ctx, bob, id); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReserveSeats(ctx, alice, id, []string{"u-carol"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		for _, k := range countKeys(t, s) {
			for _, rk := range s.RoomKeys(id) {
				if k == rk && k != s.LogKey(id) { // the log stays a while for streams (closed TTL)
					t.Fatalf("key %s left after the room closed", k)
				}
			}
		}
	})
}

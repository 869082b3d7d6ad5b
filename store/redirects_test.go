package store_test

import (
	"context"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
)

// A node that keeps answering MOVED (during a failover the nodes disagree
// on a slot's owner for a few seconds, and go-redis' redirects run out)
// makes a listing's pipeline unavailable (503), not an internal error
// (500, "MOVED 4750 127.0.0.1:47106": an operator's find); once the nodes
// agree, it lists again.
func TestMovedListingIsUnavailable(t *testing.T) {
	addrs, proxies := redistest.StartProxiedCluster(t, 3)
	s := openStore(t, redistest.Backend{Name: "proxied cluster", ClusterAddrs: addrs})
	ctx := context.Background()
	id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Mode = "moving" })).Room.ID
	// one joinable index of one shard: a pipeline of one command, which
	// the proxy answers alone
	q := lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Joinable: true, Mode: "moving", Region: "us-west", Limit: 10}
	for _, p := range proxies {
		p.RefuseEvery(":mode:moving:", "-MOVED 1 "+p.Addr)
	}
	_, err := s.Listing().List(ctx, q)
	for _, p := range proxies {
		p.RefuseEvery("", "")
	}
	wantErr(t, err, rooms.ErrUnavailable)
	res, err := s.Listing().List(ctx, q)
	if err != nil || len(res.Rooms) != 1 || res.Rooms[0].ID != id {
		t.Fatalf("listing once the nodes agree: %+v (%v), want room %s", res, err, id)
	}
}

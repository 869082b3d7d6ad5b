package tickets_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
)

// A create whose queueing was cut after Redis ran it (the request's
// deadline ends the call while the reply is on its way: redisx.Bound, on
// a client with ContextTimeoutEnabled; or a reply lost) does not know
// whether its ticket searches: it keeps its users' claims, so that they
// cannot queue a second searching ticket over the one that may be queued
// (ErrTicketActive; a claim whose ticket never came frees itself after
// InFlight). Before, the create released the claims on any error of the
// queueing, and the user's next create queued a second ticket next to the
// first. Through a proxy that holds the queueing's reply past the
// create's deadline, standalone and on a Cluster.
func TestCreateCutAfterQueueingKeepsItsClaims(t *testing.T) {
	standalone := []*redistest.Proxy{redistest.StartProxy(t, strings.TrimPrefix(redistest.StandaloneURL(t), "redis://"))}
	backends := []struct {
		b       redistest.Backend
		proxies []*redistest.Proxy
	}{{redistest.Backend{Name: "proxied", URL: "redis://" + standalone[0].Addr}, standalone}}
	if !testing.Short() {
		addrs, proxies := redistest.StartProxiedCluster(t, 3)
		backends = append(backends, struct {
			b       redistest.Backend
			proxies []*redistest.Proxy
		}{redistest.Backend{Name: "proxied cluster", ClusterAddrs: addrs}, proxies})
	}
	for _, be := range backends {
		t.Run(be.b.Name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t, be.b, matchmaking.RuleSet{})
			p := matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}}
			// the scripts once, so that Redis knows them (a held NOSCRIPT
			// reply ran nothing)
			warm, err := e.svc.Create(ctx, player("warm"), p)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.svc.Cancel(ctx, player("warm"), warm.ID); err != nil {
				t.Fatal(err)
			}
			var held []<-chan struct{}
			for _, px := range be.proxies { // the mode's queue key is in the queueing's call only
				h, release := px.HoldReplyTo(":mm:q:duel")
				held = append(held, h)
				t.Cleanup(release)
				t.Cleanup(func() { px.HoldReplyTo("") })
			}
			cut, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if _, err := e.svc.Create(cut, player("alice"), p); !errors.Is(err, rooms.ErrUnavailable) {
				t.Fatalf("create cut after its queueing was sent: %v, want %v", err, rooms.ErrUnavailable)
			}
			if !redistest.AnyHeld(held, 10*time.Second) {
				t.Fatal("the queueing never reached Redis")
			}
			for _, px := range be.proxies {
				px.HoldReplyTo("")
			}
			if tk, err := e.svc.Create(ctx, player("alice"), p); !errors.Is(err, matchmaking.ErrTicketActive) {
				t.Fatalf("create over a ticket that may be queued: %+v %v, want %v", tk, err, matchmaking.ErrTicketActive)
			}
		})
	}
}

package store_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// onMasters runs f on every master of c (c itself when standalone), at
// once.
func onMasters(t *testing.T, c redis.UniversalClient, f func(c *redis.Client) error) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return f(c) })
	case *redis.Client:
		err = f(c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The mutations run as functions of the library on Redis 7 (standalone and
// every Cluster master) and as scripts on the embedded store; a node that
// lost the library (a node added later, a flush) gets it back from the
// first mutation that runs there, in a transaction (join) or not (patch,
// leave), and everything keeps its invariants. With ScriptsOnly the
// scripts run everywhere.
func TestMutationsRunAsFunctions(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		for _, scriptsOnly := range []bool{false, true} {
			name := b.Name
			if scriptsOnly {
				name += "/scripts-only"
			}
			t.Run(name, func(t *testing.T) {
				s := openStoreWith(t, b, func(c *store.Config) { c.ScriptsOnly = scriptsOnly })
				want := b.Name != "embedded" && !scriptsOnly
				if s.UsesFunctions() != want {
					t.Fatalf("functions %v, want %v", s.UsesFunctions(), want)
				}
				ctx := context.Background()
				r := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.StatePolicy = rooms.PolicyOpen })).Room
				if want {
					onMasters(t, s.Client(), func(c *redis.Client) error {
						if err := c.FunctionDelete(ctx, store.LibraryName()).Err(); err != nil && err.Error() != "ERR Library not found" {
							return err
						}
						return nil
					})
				}
				if _, err := s.Join(ctx, bob, r.ID); err != nil {
					t.Fatalf("join on a node without the library: %v", err)
				}
				if want {
					onMasters(t, s.Client(), func(c *redis.Client) error {
						if err := c.FunctionDelete(ctx, store.LibraryName()).Err(); err != nil && err.Error() != "ERR Library not found" {
							return err
						}
						return nil
					})
				}
				if _, err := s.PatchState(ctx, bob, r.ID, rooms.StatePatch{Set: rooms.State{"a": []byte("1")}, IfMatch: rooms.NoIfMatch}); err != nil {
					t.Fatalf("patch on a node without the library: %v", err)
				}
				if err := s.Leave(ctx, bob, r.ID); err != nil {
					t.Fatal(err)
				}
				got, st, err := s.Get(ctx, r.ID, true)
				if err != nil || len(got.Players) != 1 || string(st["a"]) != "1" || got.Version != 4 {
					t.Fatalf("room after join, patch, leave: %+v %v (%v)", got, st, err)
				}
				if want {
					var loaded atomic.Int64
					onMasters(t, s.Client(), func(c *redis.Client) error {
						libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: store.LibraryName()}).Result()
						loaded.Add(int64(len(libs)))
						return err
					})
					if loaded.Load() == 0 {
						t.Fatal("the library was not loaded again")
					}
				}
				checkInvariants(t, s)
			})
		}
	}
}

// Quick-join runs as a function of the library where the mutations do
// (its pick, then the join or create, behind the prelude defined once),
// and as EVALSHA with the store told to run scripts only: after a SCRIPT
// FLUSH, only the latter loads the script on the node.
func TestQuickJoinRunsAsAFunction(t *testing.T) {
	b := redistest.Backends(t)[0] // standalone
	for _, scriptsOnly := range []bool{false, true} {
		s := openStoreWith(t, b, func(c *store.Config) { c.ScriptsOnly = scriptsOnly })
		ctx := context.Background()
		if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for i, u := range []rooms.User{alice, bob} { // creates, then joins
			q, err := s.QuickJoin(ctx, u, "qf", []string{"eu"}, nil, quickRoom("qf", "eu", 4))
			if err != nil || q.Created != (i == 0) {
				t.Fatalf("scripts only %v, quick-join %d: created %v (%v)", scriptsOnly, i, q.Created, err)
			}
		}
		loaded, err := s.Client().ScriptExists(ctx, store.QuickJoinSHA()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if loaded[0] != scriptsOnly {
			t.Fatalf("scripts only %v: quick_join loaded as a script %v", scriptsOnly, loaded[0])
		}
		checkInvariants(t, s)
	}
}

// A Redis user that may not load functions (ACL -function) gets the
// scripts with EVALSHA: the store opens and works as before.
func TestFunctionsRefusedByACL(t *testing.T) {
	ctx := context.Background()
	b, _ := aclServer(t, nil, "app", "~*", "&*", "+@all", "-function")
	s := openStore(t, b)
	if s.UsesFunctions() {
		t.Fatal("functions in use without the right to load them")
	}
	r := mustCreate(t, s, alice, newRoom()).Room
	if _, err := s.Join(ctx, bob, r.ID); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, s)
}

// A renewal whose script cannot be loaded (here the load refused; a load
// that timed out behind a busy pool, in a tester's run) says why, not the
// NOSCRIPT that asked for the load.
func TestRenewalErrorNamesTheFailedLoad(t *testing.T) {
	ctx := context.Background()
	srv := ownServer(t)
	proxy := redistest.StartProxy(t, srv.Addr)
	s := openStoreWith(t, redistest.Backend{Name: "proxied", URL: "redis://" + proxy.Addr},
		func(c *store.Config) { c.Quotas.StreamsPerUser = 4 }) // the users' stream leases renewed
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	// every call of the renewal meets NOSCRIPT (or no function)
	if err := errors.Join(admin.ScriptFlush(ctx).Err(), admin.FunctionFlush(ctx).Err()); err != nil {
		t.Fatal(err)
	}
	proxy.RefuseEvery("load", "-ERR the test refuses loads") // SCRIPT LOAD, FUNCTION LOAD
	_, err := s.Sessions().RenewStreams(ctx, []sse.Lease{{UserID: "u1", Stream: "s1"}})
	proxy.RefuseEvery("", "")
	if err == nil || strings.Contains(err.Error(), "NOSCRIPT") || !strings.Contains(err.Error(), "the test refuses loads") {
		t.Fatalf("renewal error %v, want the load's refusal", err)
	}
}

// An ACL user without a channel of the shards' form (Redis 7 gives a new
// user none), or without their keys ({<prefix>:…}), is refused at Init,
// Redis' NOPERM said, which realsyncd waits out: with it, every write
// answered 500 (its script could not publish) while the instance was
// ready, and without the keys the instance stopped once connected. With
// both it opens.
func TestInitChecksTheUsersAccess(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		rules []string
		want  string
	}{
		{"no channels", []string{"resetchannels", "~*", "+@all"}, "NOPERM"},
		{"no shard keys", []string{"resetchannels", "~acl:*", "&*", "+@all"}, "NOPERM"},
		{"shard keys read only", []string{"resetchannels", "~acl:*", "%R~{acl:*", "&*", "+@all"}, "NOPERM"},
		{"as README says", []string{"resetchannels", "~acl:*", "~{acl:*", "&{acl:*", "+@all"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := aclServer(t, nil, "app", c.rules...)
			s, err := store.Open(ctx, store.Config{RedisURL: b.URL, Prefix: "acl", Shards: 4})
			if err == nil {
				defer s.Close()
			}
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Init: %v, want %q", err, c.want)
			}
		})
	}
}

package tickets_test

import (
	"embed"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
)

func TestMain(m *testing.M) { redistest.Main(m) }

//go:embed lua/*.lua
var luaFiles embed.FS

// env is one backend's stores and tickets service.
type env struct {
	rooms   *store.Store
	tickets *tickets.Store
	svc     *matchmaking.Service
	cfg     matchmaking.Config
}

// open opens a store with a prefix of its own on b, and the tickets
// service over it with rules rs.
func open(tb testing.TB, b redistest.Backend, rs matchmaking.RuleSet, mut ...func(*matchmaking.Config)) env {
	tb.Helper()
	return openQuotas(tb, b, store.Quotas{}, rs, mut...)
}

// openQuotas is open on a store with the room quotas q.
func openQuotas(tb testing.TB, b redistest.Backend, q store.Quotas, rs matchmaking.RuleSet, mut ...func(*matchmaking.Config)) env {
	tb.Helper()
	return openStore(tb, b, store.Config{Quotas: q}, rs, mut...)
}

// shards is how many shards openStore's stores have.
const shards = 8

// openStore is open on a store of cfg, its backend, prefix and shards
// set here.
func openStore(tb testing.TB, b redistest.Backend, sc store.Config, rs matchmaking.RuleSet, mut ...func(*matchmaking.Config)) env {
	tb.Helper()
	sc.RedisURL, sc.ClusterAddrs, sc.Prefix, sc.Shards = b.URL, b.ClusterAddrs, redistest.Prefix(tb), shards
	s := storetest.Open(tb, sc)
	ts := tickets.New(s.Base(), s.UserLogs(), s.Renewals())
	cfg := matchmaking.Config{Queue: ts, Rules: rs, Grace: time.Minute}
	for _, m := range mut {
		m(&cfg)
	}
	svc, err := matchmaking.NewService(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return env{rooms: s, tickets: ts, svc: svc, cfg: cfg}
}

func mustRules(tb testing.TB, src string) matchmaking.RuleSet {
	tb.Helper()
	rs, err := matchmaking.ParseRules([]byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

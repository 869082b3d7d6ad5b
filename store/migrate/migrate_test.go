package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/schema1"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/holdings"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/migrate"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Data written by the schema-1 release (both of its player record formats,
// the zset user index) is refused by Open; Migrate upgrades it, resumes an
// interrupted run, does nothing the second time; then the store serves the
// rooms as before (players, joinedAt, my rooms) and keeps working on them,
// and every invariant holds.
func TestMigrateFromSchema1(t *testing.T) {
	for _, b := range redistest.Backends(t)[:2] { // the embedded store keeps no data to upgrade
		t.Run(b.Name, func(t *testing.T) { migrateFromSchema1(t, b) })
	}
}

func migrateFromSchema1(t *testing.T, b redistest.Backend) {
	ctx := context.Background()
	cfg := config(t, b)
	s := openPlain(t, cfg)
	c := s.Client()
	dave := rooms.User{ID: "u-dave", Name: `dave "the <brave>"`}
	r1 := create(t, s, alice, newRoom(), bob, dave)
	r2 := create(t, s, carol, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private; r.Mode = "duel" }), alice)
	r3 := create(t, s, bob, newRoom(func(r *rooms.NewRoom) { r.Region = "eu" }), alice, carol)
	ids := []string{r1, r2, r3}
	before := map[string]rooms.Room{}
	var err error
	for _, id := range ids {
		before[id], _, err = s.Get(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := c.HGet(ctx, roomKey(cfg, r3)+":players", "1").Val()
	if err := schema1.Downgrade(ctx, c, cfg.Prefix); err != nil {
		t.Fatal(err)
	}
	// An interrupted run left one record and one user converted already.
	tag := roomKey(cfg, r3)[:strings.Index(roomKey(cfg, r3), "}")+1]
	c.HSet(ctx, roomKey(cfg, r3)+":players", "1", rec)
	c.HSet(ctx, tag+":users", bob.ID, r3)
	c.ZRem(ctx, tag+":idx:users", bob.ID+"\t"+r3)
	const records, entries = 3 + 2 + 3 - 1, 3 + 2 + 3 - 1

	if _, err := store.Open(ctx, cfg); !errors.Is(err, store.ErrLayout) || !strings.Contains(err.Error(), "realsyncd migrate") {
		t.Fatalf("open on schema 1: %v, want ErrLayout saying to migrate", err)
	}
	m, err := newStore(t, cfg).Migrate(ctx, migrate.Options{DryRun: true, Log: quiet})
	if err != nil || m.From != 1 || m.To != 1 || len(m.Steps) != store.PlainSchema-1 || m.Steps[0].Changed != records+entries {
		t.Fatalf("dry run: %+v %v, want 1→1 counting %d changes", m, err, records+entries)
	}
	if got := c.HGet(ctx, cfg.Prefix+":meta", "schema").Val(); got != "1" {
		t.Fatalf("the dry run wrote schema %q", got)
	}

	// A running instance holds a janitor lease: nothing is written.
	c.Set(ctx, tag+":janitor", "inst-1", 2*time.Second)
	short := migrate.Options{LeaseWatch: 300 * time.Millisecond, Log: quiet}
	if _, err := newStore(t, cfg).Migrate(ctx, short); !errors.Is(err, migrate.ErrInstancesRunning) {
		t.Fatalf("migrate beside an instance: %v", err)
	}
	c.Del(ctx, tag+":janitor")

	c.HSet(ctx, cfg.Prefix+":meta", "schema", "1to2") // as an interrupted run leaves it
	if _, err := store.Open(ctx, cfg); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("open during a migration: %v", err)
	}
	m, err = newStore(t, cfg).Migrate(ctx, short)
	if err != nil || m.From != 1 || m.To != store.PlainSchema || m.Steps[0].Changed != records+entries {
		t.Fatalf("migrate: %+v %v", m, err)
	}
	if m, err = newStore(t, cfg).Migrate(ctx, short); err != nil || m.From != store.PlainSchema || len(m.Steps) != 0 {
		t.Fatalf("second run: %+v %v, want nothing to do", m, err)
	}

	s2 := open(t, cfg)
	for _, id := range ids {
		got, _, err := s2.Get(ctx, id, false)
		if err != nil || !reflect.DeepEqual(got.Players, before[id].Players) {
			t.Errorf("room %s after migrating: %v\n got %+v\nwant %+v", id, err, got.Players, before[id].Players)
		}
	}
	wantMine := map[rooms.User][]string{alice: {r1, r2, r3}, bob: {r1, r3}, carol: {r2, r3}, dave: {r1}}
	for u, want := range wantMine {
		mine, _, err := s2.MyRooms(ctx, u, nil, rooms.MaxMyRooms)
		var got []string
		for _, j := range mine {
			got = append(got, j.Room.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s's rooms: %v %v, want %v", u.ID, got, err, want)
		}
	}
	if _, err := s2.Join(ctx, rooms.User{ID: "u-erin", Name: "erin"}, r1); err != nil {
		t.Fatal(err)
	}
	if err := s2.Leave(ctx, bob, r1); err != nil {
		t.Fatal(err)
	}
	if err := s2.Leave(ctx, alice, r2); err != nil {
		t.Fatal(err)
	}
	if r, _, err := s2.Get(ctx, r1, false); err != nil || r.PlayerCount != 3 || r.Players[2].Name != "erin" {
		t.Errorf("room after join and leave: %+v %v", r, err)
	}
	if n, err := c.Exists(ctx, tag+":idx:users").Result(); err != nil || n != 0 {
		t.Errorf("schema 1's user index is still there (%d, %v)", n, err)
	}
	bad, err := invariants.Check(ctx, c, cfg.Prefix)
	if err != nil || len(bad) > 0 {
		t.Fatalf("invariants: %v %v", bad, err)
	}
}

// create makes a room of owner with members joined (by code to a private
// room), and returns its id.
func create(t *testing.T, s *store.Store, owner rooms.User, p rooms.NewRoom, members ...rooms.User) string {
	t.Helper()
	j, err := s.Create(context.Background(), owner, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range members {
		var err error
		if p.Visibility == rooms.Private {
			_, err = s.JoinByCode(context.Background(), u, j.Room.InviteCode)
		} else {
			_, err = s.Join(context.Background(), u, j.Room.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return j.Room.ID
}

var quiet = slog.New(slog.DiscardHandler)

var (
	alice = rooms.User{ID: "u-alice", Name: "alice"}
	bob   = rooms.User{ID: "u-bob", Name: "bob"}
	carol = rooms.User{ID: "u-carol", Name: "carol"}
)

// newRoom is a public room of 4 seats, changed by mut.
func newRoom(mut ...func(*rooms.NewRoom)) rooms.NewRoom {
	r := rooms.NewRoom{Name: "Arena", Mode: "battle", Region: "us-west", MaxPlayers: 4, Visibility: rooms.Public,
		Attributes: map[string]any{"map": "dust2"}, State: rooms.State{}, StatePolicy: rooms.PolicyOwner}
	for _, m := range mut {
		m(&r)
	}
	return r
}

// roomKey is the hash key of room id (a store of cfg's prefix and shards).
func roomKey(cfg store.Config, id string) string {
	shard, _ := layout.RoomShard(id, cfg.Shards)
	return layout.New(layout.NewTags(cfg.Prefix, cfg.Shards), false, false).Room(shard, id) // plain: openPlain
}

// config is a store's configuration on backend b: a key prefix of the
// test's own, 8 shards.
func config(t *testing.T, b redistest.Backend) store.Config {
	return store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: 8}
}

// open is a store of cfg that checked the data (Open), closed when the
// test ends.
func open(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	s := storetest.Open(t, cfg)
	return s
}

// openPlain is open on a deployment of store.PlainSchema (plain shard
// tags, as every deployment made before SchemaVersion): the data the
// steps convert is older still, so its tags are plain.
func openPlain(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	if err := newStore(t, cfg).Client().HSet(context.Background(), cfg.Prefix+":meta", "shards", cfg.Shards, "schema", store.PlainSchema).Err(); err != nil {
		t.Fatal(err)
	}
	return open(t, cfg)
}

// newStore is a store that has not checked the data (for Migrate).
func newStore(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	s, err := store.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Migrate on a prefix with no data does nothing and writes nothing.
func TestMigrateNothing(t *testing.T) {
	cfg := store.Config{RedisURL: redistest.StandaloneURL(t), Prefix: redistest.Prefix(t), Shards: 4}
	m, err := newStore(t, cfg).Migrate(context.Background(), migrate.Options{Log: quiet})
	if err != nil || m.From != 0 || len(m.Steps) != 0 {
		t.Fatalf("%+v %v", m, err)
	}
	c := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(cfg.RedisURL, "redis://")})
	defer c.Close()
	if n := c.Exists(context.Background(), cfg.Prefix+":meta").Val(); n != 0 {
		t.Fatal("migrate created the meta hash")
	}
}

// Schema 2 kept a user's log meta and cursors at "<log>:meta" and
// "<log>:cur", so the log of the user "<id>:cur" was <id>'s cursors.
// Migrate renames them (TTLs kept), leaves a log whose user id ends so,
// and the personal stream then resumes where its platform was.
func TestMigrateFromSchema2(t *testing.T) {
	for _, b := range redistest.Backends(t)[:2] { // the embedded store keeps no data to upgrade
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := config(t, b)
			s := openPlain(t, cfg)
			c := s.Client()
			ann, bo := "u-ann", "u-bo:meta"
			for i := range 2 {
				for _, uid := range []string{ann, bo} {
					if _, err := s.UserLogs().Send(ctx, uid, []byte(fmt.Sprintf(`{"type":"message","n":%d}`, i))); err != nil {
						t.Fatal(err)
					}
				}
			}
			ss := sse.Session{UserID: ann, Platform: "pc", ID: "s1"}
			o, err := s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 10)
			if err != nil || len(o.Replay) != 2 {
				t.Fatalf("open: %+v %v", o, err)
			}
			second := o.Replay[1].Seq
			if err := s.Sessions().Delivered(ctx, ss, o.Tag, o.Replay[0].Seq); err != nil {
				t.Fatal(err)
			}
			if err := s.Sessions().CloseSession(ctx, ss); err != nil {
				t.Fatal(err)
			}
			// back to schema 2's names
			renamed := 0
			for _, uid := range []string{ann, bo} {
				k := s.UserLogs().KeysOf(uid)
				for from, to := range map[string]string{k.Meta: k.Log + ":meta", k.Cursors: k.Log + ":cur"} {
					if c.Exists(ctx, from).Val() == 1 {
						if err := c.Rename(ctx, from, to).Err(); err != nil {
							t.Fatal(err)
						}
						renamed++
					}
				}
			}
			c.HSet(ctx, cfg.Prefix+":meta", "schema", "2")
			if _, err := store.Open(ctx, cfg); !errors.Is(err, store.ErrLayout) {
				t.Fatalf("open on schema 2: %v, want ErrLayout", err)
			}
			short := migrate.Options{LeaseWatch: 300 * time.Millisecond, Log: quiet}
			m, err := newStore(t, cfg).Migrate(ctx, short)
			if err != nil || m.From != 2 || m.To != store.PlainSchema || len(m.Steps) != 1 || m.Steps[0].Changed != renamed || renamed != 3 {
				t.Fatalf("migrate: %+v %v, want %d keys renamed (3)", m, err, renamed)
			}
			if m, err = newStore(t, cfg).Migrate(ctx, short); err != nil || len(m.Steps) != 0 {
				t.Fatalf("second run: %+v %v", m, err)
			}
			s2 := open(t, cfg)
			for _, uid := range []string{ann, bo} {
				k := s2.UserLogs().KeysOf(uid)
				if typ := c.Type(ctx, k.Log).Val(); typ != "stream" {
					t.Errorf("%s's log %s is a %s", uid, k.Log, typ)
				}
				if ttl := c.PTTL(ctx, k.Meta).Val(); ttl <= 0 {
					t.Errorf("%s's meta %s: TTL %v", uid, k.Meta, ttl)
				}
			}
			o, err = s2.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 10)
			if err != nil || len(o.Replay) != 1 || o.Replay[0].Seq != second {
				t.Fatalf("open after migrating: %+v %v, want the one event pc was not delivered", o, err)
			}
		})
	}
}

// A user id may hold "}" (players.CheckUserIDs allows it): the user's
// holdings hash "{p:s}:held:x}:ulog:y:meta" is a hash ending in ":meta"
// that a pattern "{p:*}:ulog:*" matches: the step must leave it (a
// reviewer's find: it was renamed away, and the user's quota with it).
func TestMigrateV2LeavesOtherKeysAlone(t *testing.T) {
	for _, b := range redistest.Backends(t)[:2] {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := config(t, b)
			cfg.Quotas = store.Quotas{RoomsOwned: 3}
			s := openPlain(t, cfg)
			u := rooms.User{ID: "x}:ulog:y:meta", Name: "x"}
			create(t, s, u, newRoom())
			held := holdings.New(holdings.Config{Base: s.Base()}).Key(u.ID)
			before := s.Client().HGetAll(ctx, held).Val()
			if len(before) == 0 {
				t.Fatal("no holdings written")
			}
			s.Client().HSet(ctx, cfg.Prefix+":meta", "schema", "2")
			m, err := newStore(t, cfg).Migrate(ctx, migrate.Options{LeaseWatch: 300 * time.Millisecond, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			after := s.Client().HGetAll(ctx, held).Val()
			if len(after) == 0 {
				t.Fatalf("migration (%+v) renamed away the holdings of user %q: before %v, after %v", m, u.ID, before, after)
			}
		})
	}
}

// Package store implements the RealSync domain stores on Redis: the rooms,
// run as the rooms' Lua library (one script per mutation, their typed
// descriptors and replies: store/internal/roomlua), and what writes or
// repairs rooms (lifecycle, the janitor's tasks), on one client path for
// standalone Redis, Redis Cluster and the embedded in-process store
// (store/internal/conn). How a room is kept (keys, ids, placement, the
// key-schema version) is store/internal/layout; the listing is
// store/listing; other concepts have packages of their own (quickjoin,
// roomstreams, sessions, holdings, userlog, tickets, webhooks, instances,
// feed, janitor, repair, and migrate: the key-schema migrations behind
// Store.Migrate), which New wires together.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/holdings"
	"github.com/realsync/realsync/store/instances"
	"github.com/realsync/realsync/store/internal/batch"
	"github.com/realsync/realsync/store/internal/conn"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
	"github.com/realsync/realsync/store/janitor"
	"github.com/realsync/realsync/store/listing"
	"github.com/realsync/realsync/store/migrate"
	"github.com/realsync/realsync/store/quickjoin"
	"github.com/realsync/realsync/store/repair"
	"github.com/realsync/realsync/store/roomstreams"
	"github.com/realsync/realsync/store/sessions"
	"github.com/realsync/realsync/store/userlog"
)

// SchemaVersion is the version of the key schema new deployments record:
// their shards' hash tags spread evenly over the slots. An instance also
// serves PlainSchema's data, whose tags stay plain; it refuses to start on
// data of any other schema (Init: ErrLayout), and Migrate upgrades older
// data to PlainSchema. Its history: layout.SchemaVersion.
const SchemaVersion = layout.SchemaVersion

// PlainSchema is the key schema of the deployments made before
// SchemaVersion: served as they are, their shards' tags "{<prefix>:<shard>}"
// (layout.PlainTags).
const PlainSchema = layout.PlainSchema

// DefaultLogMaxBytes is the default byte cap of a room's event log.
const DefaultLogMaxBytes = 256 << 10

// MaxShards is the most shards a deployment may have: a room id carries
// its shard in two base-36 digits.
const MaxShards = layout.MaxShards

// Config says where Redis is and how keys are laid out.
type Config struct {
	// RedisURL is a redis:// or rediss:// URL of a standalone Redis.
	RedisURL string
	// ClusterAddrs are seed nodes of a Redis Cluster; they win over RedisURL.
	ClusterAddrs []string
	// Neither set: an embedded in-process store (memory only).

	// ReadFromReplicas routes a Cluster's browsing reads (lists, stats)
	// to replicas; see ReplicaReads. Only with ClusterAddrs;
	// "" is off.
	ReadFromReplicas ReplicaReads

	// ReadTimeout bounds the wait for each reply from Redis; default 2 s
	// (conn.ReadTimeout). With RedisURL, the URL's read_timeout wins. The
	// embedded store's calls wait conn.EmbeddedReadTimeout.
	ReadTimeout time.Duration

	// Prefix starts every key; default "rs".
	Prefix string
	// Shards is the number of hash-tag shards, fixed for a deployment's
	// lifetime; default 16, at most 1296.
	Shards int
	// LogMaxLen caps each room's event log: the scripts that append trim
	// it to this length once it holds a tenth more (at most 100 more);
	// default 1000.
	LogMaxLen int
	// WebhookOutboxLen, when > 0, turns webhooks on: every room event and
	// user status change also enters its shard's webhook outbox (a stream
	// capped near this length, MAXLEN ~) in the script that makes it
	// (delivered by store/webhooks). 0: off, no cost.
	WebhookOutboxLen int
	// LogMaxBytes caps each room's event log in bytes (ids, tags and event
	// JSON); default 256 KiB. Past it the oldest events are dropped down to
	// 3/4 of it, so a room of large patches keeps fewer events.
	LogMaxBytes int
	// ClosedLogTTL keeps a closed room's log readable; default 5m.
	ClosedLogTTL time.Duration
	// PresenceTTL is how long a stream's presence lease lives unless its
	// instance renews it (every third of it); default 15s. It is also the
	// lifetime of an instance's registration (store/instances).
	PresenceTTL time.Duration
	// DisconnectGrace is how long a player who had a stream may stay
	// without one before removal; 0 never removes.
	DisconnectGrace time.Duration
	// ConnectGrace, when > 0, is how long a player who joins a room (by
	// create, join, invite code or quick-join) may take to open a stream of
	// it: one who opened none by then is removed by the janitor
	// (player_left, reason disconnected; Report kind
	// "presence_unconnected"), so a client that joined and never connected
	// (a page unloaded mid-join) holds no seat. 0 (the zero value) never
	// does: players who only use REST (bots, turn-based clients) stay.
	ConnectGrace time.Duration
	// PresenceDebounce delays player_disconnected after a player's last
	// stream closes: a stream opened within it cancels the announcement, so
	// a reconnect or a flapping client emits no presence events. The
	// janitor announces it once the window passed (within a janitor pass
	// after). A user's status debounces the same way: a platform whose
	// last personal stream's session closes stays shown for it, so the
	// user goes offline (user_offline) only if no session opens meanwhile
	// (sessions.Config.Debounce). 0 (the zero value) announces at once.
	PresenceDebounce time.Duration
	// Quotas bound the rooms and streams one user holds; zero: no limits.
	Quotas Quotas
	// Lifecycle closes idle, finished and old rooms; zero values switch
	// each rule off, except LogIdleTrim, which defaults to 1m (negative:
	// never).
	Lifecycle Lifecycle
	// JanitorActions, when set, is told what each janitor visit did (kind
	// as in Report, count), for metrics.
	JanitorActions func(kind string, n int)
	// Metrics observes script runs and Redis failures; none when nil. One
	// that implements BatchMetrics also observes batches.
	Metrics Metrics

	// Batch, when set, sends concurrent script runs bound for the same node
	// in one pipeline (store/internal/batch); nil: each its own round trip.
	Batch *Batching

	// Stripes spreads the rooms of a (mode, region) over K shards
	// (store/internal/layout/stripes.go); zero value: K = 1, one shard per pair.
	Stripes Stripes
	// SessionPolicy says what a personal stream's new session does to an
	// open one of the same user and platform (store/sessions); default
	// players.PolicyReplace.
	SessionPolicy players.Policy
	// Offline bounds each user's personal log, which is also the user's
	// offline inbox (store/userlog): REALSYNC_OFFLINE_MAX and
	// REALSYNC_OFFLINE_TTL; zero values: the package's defaults.
	Offline userlog.Config

	// ScriptsOnly runs the mutation scripts with EVALSHA even where Redis
	// has Functions (store/internal/roomlua/library.go): for measuring one against the other.
	ScriptsOnly bool
}

// Store is the Redis implementation of the room and lobby stores. Safe for
// concurrent use.
type Store struct {
	// the room event streams' side (sse.Source): OpenStream, CloseStream,
	// RenewStreams, Log, Versions, OpenLobby, CloseLobby (store/roomstreams)
	*roomstreams.Streams

	conn     *conn.Clients         // every connection to Redis (store/internal/conn)
	client   redis.UniversalClient // conn.Client
	reads    redis.UniversalClient // conn.Reads: browsing reads; nil: client
	renewals redis.UniversalClient // conn.Renewals: the lease renewals' own connections (presence, sessions, matchmaker modes)
	keys     layout.Keys
	tags     *layout.Tags // keys' and base's: their scheme set by Init (checkMeta)
	schema   atomic.Int32 // the key schema recorded, adopted by Init (checkMeta); 0 before
	shards   int
	pubcmd   string // conn.PubCmd
	// runner runs every script (FCALL of the library's mutations where
	// loaded, store/internal/roomlua/library.go)
	runner      *redisx.Runner
	base        *redisx.Base       // what the store's concept packages share
	renewalBase *redisx.Base       // base on renewals (EVALSHA only: no renewal script is a mutation)
	ulog        *userlog.Log       // the personal logs
	held        *holdings.Holdings // the room quotas
	sess        *sessions.Sessions // personal streams' sessions, status, a user's open streams
	fleet       *instances.Registry
	janitor     *janitor.Janitor // the upkeep's schedule and leases (store/janitor)
	scriptsOnly bool
	env         roomlua.Env // what the room scripts' scopes are built from
	outboxLen   int         // webhook outbox MAXLEN ~; 0: webhooks off
	places      *placeCache
	metrics     Metrics

	presenceTTL, grace time.Duration
	debounce           time.Duration
	quotas             Quotas
	life               Lifecycle
	janitorActions     func(kind string, n int)
	repairs            *repair.Walks        // the repair walk (store/repair)
	quick              *quickjoin.QuickJoin // QuickJoin (store/quickjoin)
	batch              *batch.Batcher       // nil: no batching
	stripes            *layout.Placement
	list               *listing.Index
	readBatch          *batch.Batcher // the reader client's; nil: no batching or no reader client
	bound              time.Duration  // conn.Bound: each call's own deadline; 0: none (embedded)
	guard              guard          // what the janitor last found wrong with Redis (guard.go)
}

var (
	_ rooms.Store = (*Store)(nil)
	_ sse.Source  = (*Store)(nil)
)

// ErrLayout says Redis holds data laid out for another deployment: another
// shard count or key-schema version. It is a configuration error, never an
// outage: retrying cannot help. (The same value as layout.ErrLayout, which
// store/migrate returns too.)
var ErrLayout = layout.ErrLayout

// Open is New then Init: a store connected to Redis whose layout was
// checked. Errors: as New and Init.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Init(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// New builds a store without reaching Redis (the embedded store is started
// in-process). Errors are configuration errors: a bad shard count or URL.
// Call Init before anything else.
func New(cfg Config) (*Store, error) {
	cfg = withDefaults(cfg)
	if cfg.Shards < 1 || cfg.Shards > MaxShards {
		return nil, fmt.Errorf("shards must be 1..%d, got %d", MaxShards, cfg.Shards)
	}
	if err := cfg.Offline.Check(); err != nil {
		return nil, err
	}
	if k := cfg.Stripes.Max(); k > cfg.Shards {
		return nil, fmt.Errorf("mode stripes must be 1..shards (%d), got %d", cfg.Shards, k)
	}
	tags := layout.NewTags(cfg.Prefix, cfg.Shards)
	s := &Store{keys: layout.New(tags, cfg.Quotas.RoomsOwned > 0 || cfg.Quotas.RoomsJoined > 0, true), tags: tags, shards: cfg.Shards, places: newPlaceCache(100_000),
		presenceTTL: cfg.PresenceTTL, grace: cfg.DisconnectGrace, debounce: cfg.PresenceDebounce, quotas: cfg.Quotas, life: cfg.Lifecycle,
		janitorActions: cfg.JanitorActions, scriptsOnly: cfg.ScriptsOnly,
		outboxLen: cfg.WebhookOutboxLen}
	logArgs := [2]string{strconv.Itoa(cfg.LogMaxLen) + " " + strconv.Itoa(cfg.LogMaxBytes), strconv.Itoa(int(cfg.ClosedLogTTL.Seconds()))}
	if s.outboxLen > 0 {
		logArgs[0] += " " + strconv.Itoa(s.outboxLen)
	}
	if ms := cfg.ConnectGrace.Milliseconds(); ms > 0 {
		logArgs[1] += " " + strconv.FormatInt(ms, 10)
	}
	s.stripes = layout.NewPlacement(s.keys, s.shards, cfg.Stripes)
	c, err := conn.Open(conn.Config{RedisURL: cfg.RedisURL, ClusterAddrs: cfg.ClusterAddrs, ReadFromReplicas: cfg.ReadFromReplicas, ReadTimeout: cfg.ReadTimeout})
	if err != nil {
		return nil, err
	}
	s.conn, s.client, s.reads, s.renewals, s.pubcmd, s.bound = c, c.Client, c.Reads, c.Renewals, c.PubCmd, c.Bound
	s.env = roomlua.Env{Keys: s.keys, PubCmd: s.pubcmd, LogArgs: logArgs, Outbox: s.outboxLen > 0}
	s.runner = redisx.NewRunner(s.client, roomlua.Library)
	s.base = &redisx.Base{Client: s.client, Runner: s.runner, Prefix: cfg.Prefix, Shards: s.shards, Tags: tags, PubCmd: s.pubcmd, Bound: redisx.Bound(s.bound)}
	if c.Slots != nil {
		s.base.Replicas = c.Slots.Replicas
	}
	s.renewalBase = &redisx.Base{Client: s.renewals, Runner: redisx.NewRunner(s.renewals, nil), Prefix: cfg.Prefix, Shards: s.shards, Tags: tags, PubCmd: s.pubcmd}
	s.ulog = userlog.New(s.base, cfg.Offline, layout.EventTag)
	s.held = holdings.New(holdings.Config{Base: s.base, Owned: cfg.Quotas.RoomsOwned, Joined: cfg.Quotas.RoomsJoined, Rooms: heldRooms{s}})
	s.sess = sessions.New(sessions.Config{Base: s.base, Renewals: s.renewalBase, Logs: s.ulog, TTL: s.presenceTTL, Policy: cfg.SessionPolicy, Debounce: cfg.PresenceDebounce,
		StreamsPerUser: cfg.Quotas.StreamsPerUser, Outbox: s.keys.WebhookOutbox, OutboxLen: s.outboxLen})
	s.repairs = repair.New(repair.Config{Base: s.base, Keys: s.keys, Stripes: s.stripes, Room: s.repairRoom})
	s.quick = quickjoin.New(quickjoin.Config{Client: s.client, Runner: s.runner, Keys: s.keys, Shards: s.shards, Stripes: s.stripes,
		Env: s.env, Held: s.held, Repairs: s.repairs, Join: s.joinPicked, Create: s.create, NewRoom: s.newRoom, UserRooms: s.userRooms,
		Read: func(ctx context.Context, shard int, id string) (rooms.Room, error) {
			r, _, err := s.readRoom(ctx, shard, id, false)
			return r, err
		}})
	s.Streams = roomstreams.New(roomstreams.Config{Client: s.client, Runner: s.runner, Renewals: s.renewalBase.Runner,
		Keys: s.keys, Shards: s.shards, Env: s.env, Sessions: s.sess, TTL: s.presenceTTL, Grace: s.grace, Debounce: s.debounce,
		RunThenRead: func(ctx context.Context, call redisx.Call, shard int, id string) (*redis.Cmd, func() (rooms.Room, rooms.State, error), error) {
			r, err := s.runThenRead(ctx, call, shard, id, true)
			return r.cmd, func() (rooms.Room, rooms.State, error) { return s.decodeRead(id, r.read) }, err
		}})
	s.janitor = s.newJanitor()
	s.fleet = instances.New(s.base, s.presenceTTL, s.janitor.Release)
	s.list = listing.New(s.client, s.reads, s.keys, s.shards, s.stripes)
	if s.bound > 0 { // first hook: a batch's pipeline, made by the batcher's, is bounded too
		s.client.AddHook(redisx.Bound(s.bound))
		if s.reads != nil {
			s.reads.AddHook(redisx.Bound(s.bound))
		}
	}
	if cfg.Batch != nil { // next hook: the others see a batch once, as a pipeline
		var observe func(string, int)
		if m, ok := cfg.Metrics.(BatchMetrics); ok {
			observe = m.RedisBatch
		}
		s.batch = batch.New(s.client, *cfg.Batch, observe)
		s.client.AddHook(s.batch)
		if s.reads != nil { // browsing reads batch apart: their batches go where they would
			s.readBatch = batch.New(s.reads, *cfg.Batch, observe)
			s.reads.AddHook(s.readBatch)
		}
	}
	// then: a call whose dial failed sent again after the pool's breaker
	// had time to close (what is really sent: a batch once)
	s.client.AddHook(&redisx.Redial{})
	if s.reads != nil {
		s.reads.AddHook(&redisx.Redial{})
	}
	s.observe(cfg.Metrics)
	return s, nil
}

// Init checks that Redis answers, and records (first start) or checks the
// deployment's shard count and schema version, then records its stripe
// configuration and reads every recorded one (RefreshStripes). Errors: rooms.ErrUnavailable
// when Redis cannot be reached (try again later), ErrLayout when its data
// belongs to another layout (a mismatch is never a silent re-layout).
// Init may be called again after an error.
func (s *Store) Init(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return redisx.Wrap(err)
	}
	if err := s.notAClusterNode(ctx); err != nil {
		return err
	}
	if !s.scriptsOnly {
		if err := s.runner.LoadLibrary(ctx); err != nil {
			return redisx.Wrap(err)
		}
	}
	if _, err := s.checkMeta(ctx); err != nil {
		return err
	}
	if err := s.checkAccess(ctx); err != nil {
		return err
	}
	return s.RefreshStripes(ctx)
}

// checkAccess asks Redis for what an ACL user may lack beyond what Init
// read so far (the layout record, a key of the plain form <prefix>:…): a
// write of a key of the shards' form ({<prefix>:…}, a DEL of one never
// written) and a publish on a channel of
// that form, which Redis 7 gives a new user none of. Without the channel
// every write failed (500: its script cannot publish) and every stream
// waited on its subscription while the instance was ready; without the
// keys it stopped once connected (an operations tester's finds). Redis'
// NOPERM is returned: realsyncd waits it out as a wrong password.
func (s *Store) checkAccess(ctx context.Context) error {
	// never written, and the channel has no subscriber; a DEL, as a
	// read-only key pattern passes a read
	probe := s.keys.Tag(0) + ":access"
	if err := s.client.Del(ctx, probe).Err(); err != nil {
		return redisx.Wrap(err)
	}
	return redisx.Wrap(s.client.Do(ctx, s.pubcmd, probe, "").Err())
}

func withDefaults(cfg Config) Config {
	if cfg.Prefix == "" {
		cfg.Prefix = "rs"
	}
	if cfg.SessionPolicy == "" {
		cfg.SessionPolicy = players.PolicyReplace
	}
	if cfg.Shards == 0 {
		cfg.Shards = 16
	}
	if cfg.LogMaxLen == 0 {
		cfg.LogMaxLen = 1000
	}
	if cfg.LogMaxBytes == 0 {
		cfg.LogMaxBytes = DefaultLogMaxBytes
	}
	if cfg.ClosedLogTTL == 0 {
		cfg.ClosedLogTTL = 5 * time.Minute
	}
	if cfg.PresenceTTL == 0 {
		cfg.PresenceTTL = 15 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = conn.ReadTimeout
	}
	switch {
	case cfg.Lifecycle.LogIdleTrim == 0:
		cfg.Lifecycle.LogIdleTrim = DefaultLogIdleTrim
	case cfg.Lifecycle.LogIdleTrim < 0:
		cfg.Lifecycle.LogIdleTrim = 0
	}
	return cfg
}

// Embedded reports whether the store runs in-process, keeping data in
// memory only.
func (s *Store) Embedded() bool { return s.conn.Embedded != nil }

// Close releases the connections and stops the embedded store. Script
// runs already queued for a batch are sent and answered first.
func (s *Store) Close() error {
	if s.batch != nil {
		s.batch.Close()
	}
	if s.readBatch != nil {
		s.readBatch.Close()
	}
	return s.conn.Close()
}

// Base is the client, script runner and key layout the store's concept
// packages (store/...) are built on.
func (s *Store) Base() *redisx.Base { return s.base }

// Renewals is Base on connections of their own (a small pool per node,
// store/internal/conn), for leases that must be renewed in time while the
// requests queue for Base's pool: the streams' and sessions' leases, the
// matchmaker's mode leases (tickets.New). Its runner runs EVALSHA only.
func (s *Store) Renewals() *redisx.Base { return s.renewalBase }

// Client is the underlying client, for tests and tools that read Redis
// directly.
func (s *Store) Client() redis.UniversalClient { return s.client }

// notAClusterNode refuses a standalone client (REALSYNC_REDIS_URL) whose
// server is a node of a Redis Cluster (ErrLayout: waiting cannot fix it).
// A node that does not serve every slot answers MOVED for the others,
// each call a 503; even one that serves them all (a one-node Cluster, a
// managed service's single shard) refuses the batcher's transactions,
// which a standalone client fills with several shards' scripts
// (CROSSSLOT). REALSYNC_REDIS_CLUSTER_ADDRS takes one node as well. It
// asks what breaks: a transaction over keys of four shards, which a
// Cluster node refuses (CROSSSLOT, or CLUSTERDOWN, MOVED) whatever the
// ACL user may ask of INFO or CLUSTER (the store's keys are all the check
// needs), as does a proxy that spreads multi-key commands over shards but
// not transactions; any other error reply passes (the store's own calls
// say more); a network error is returned (Init is tried again).
func (s *Store) notAClusterNode(ctx context.Context) error {
	c, ok := s.client.(*redis.Client)
	if !ok {
		return nil
	}
	var cmds []*redis.IntCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 4 {
			cmds = append(cmds, p.Exists(ctx, layout.PlainTag(s.keys.Prefix(), i)+":probe"))
		}
		return nil
	})
	errs := []error{err}
	for _, cmd := range cmds {
		errs = append(errs, cmd.Err())
	}
	for _, e := range errs {
		for _, refusal := range []string{"CROSSSLOT ", "CLUSTERDOWN ", "MOVED ", "ASK "} {
			if e != nil && strings.HasPrefix(e.Error(), refusal) {
				return fmt.Errorf("%w: REALSYNC_REDIS_URL names a node of a Redis Cluster (%s); name its nodes (one is enough) in REALSYNC_REDIS_CLUSTER_ADDRS instead",
					ErrLayout, strings.TrimSpace(refusal))
			}
		}
	}
	if err != nil && !serverError(err) {
		return fmt.Errorf("the Cluster-mode check (a transaction of EXISTS): %w", redisx.Wrap(err))
	}
	return nil
}

// checkMeta records the store's shard count and schema version in the
// meta hash where they are missing (HSETNX: the first instance's start,
// or a running instance's janitor after Redis lost its data, see
// guardLayout), then checks the recorded ones against the store's. It
// reads first and writes only a missing field: the janitor calls it every
// tick, and a full Redis (maxmemory, noeviction) refuses every HSETNX,
// even of a field that exists. restored reports that a field was missing
// and this call wrote it.
//
// The schema recorded says the shards' tags (layout.SchemeOf): the
// store's first call (Init's) adopts it, setting the tags' scheme before
// anything uses them, and later calls require it. The schema a store
// records: the one it adopted; before that (a first start) SchemaVersion,
// spread tags, unless plain-tagged data of the prefix is found
// (plainDataFound: a deployment whose record alone was lost), then
// PlainSchema. (Not caught: Redis lost everything, a PlainSchema
// instance still runs, and a store starts in the second before that
// instance's janitor restores the record: the new store records
// SchemaVersion, and the running one turns unready, see guardLayout.)
// Errors: ErrLayout on a mismatch or a schema this release does not
// serve, rooms.ErrUnavailable (also when the record vanished between the
// writes and the read).
func (s *Store) checkMeta(ctx context.Context) (restored bool, err error) {
	key := s.keys.Meta()
	got, err := s.client.HMGet(ctx, key, "shards", "schema").Result()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	adopted := int(s.schema.Load())
	if got[0] == nil || got[1] == nil {
		want := [2]int{s.shards, adopted}
		if got[1] == nil && adopted == 0 {
			want[1] = SchemaVersion
			if plain, err := s.plainDataFound(ctx); err != nil {
				return false, err
			} else if plain {
				want[1] = PlainSchema
			}
		}
		for i, name := range []string{"shards", "schema"} {
			if got[i] != nil {
				continue
			}
			set, err := s.client.HSetNX(ctx, key, name, want[i]).Result()
			if err != nil {
				return restored, redisx.Wrap(err)
			}
			restored = restored || set
		}
		if got, err = s.client.HMGet(ctx, key, "shards", "schema").Result(); err != nil {
			return restored, redisx.Wrap(err)
		}
		if got[0] == nil || got[1] == nil {
			// gone since the HSETNX: Redis lost its data right then (a
			// FLUSHALL, a restart); not a record that disagrees
			return restored, fmt.Errorf("%w: the layout record %s vanished while it was checked", rooms.ErrUnavailable, key)
		}
	}
	if got[0] != strconv.Itoa(s.shards) {
		return restored, fmt.Errorf("%w: redis holds data for %v shards; this instance is configured for %d (REALSYNC_SHARDS is fixed for a deployment's lifetime)",
			ErrLayout, got[0], s.shards)
	}
	v, err := strconv.Atoi(fmt.Sprint(got[1]))
	scheme, served := layout.SchemeOf(v)
	switch {
	case err != nil || !served:
		return restored, fmt.Errorf("%w: redis holds data of key schema %v; this instance serves schemas %d and %d%s",
			ErrLayout, got[1], PlainSchema, SchemaVersion, migrate.Hint(fmt.Sprint(got[1])))
	case adopted != 0 && v != adopted:
		return restored, fmt.Errorf("%w: redis holds data of key schema %d (%s shard tags); this instance serves the deployment's schema %d (%s), as it found it at its start",
			ErrLayout, v, scheme, adopted, s.tags.Scheme())
	case adopted == 0:
		s.tags.Use(scheme)
		s.schema.Store(int32(v))
	}
	return restored, nil
}

// plainDataFound reports whether any shard holds, under its plain tag
// (layout.PlainTag), a key a PlainSchema deployment keeps while it has
// data: above all the shard's clock, which the first room created in the
// shard writes and nothing removes, then the lifecycle schedule, the user
// index, the stats, the invite codes, the online users, the webhook
// outbox and the janitor lease. One EXISTS a shard, pipelined: a look
// over the whole keyspace for plain-tagged keys would find more (a
// deployment that never had a room, only users' logs) but cost a walk of
// every key of a Redis shared with others, at every new deployment's
// first start.
func (s *Store) plainDataFound(ctx context.Context) (bool, error) {
	cmds := make([]*redis.IntCmd, s.shards)
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range s.shards {
			tag := layout.PlainTag(s.keys.Prefix(), i)
			cmds[i] = p.Exists(ctx, tag+":clock", tag+":rooms:due", tag+":users", tag+":stats", tag+":codes",
				tag+":online", tag+":webhooks", tag+":janitor")
		}
		return nil
	})
	if err != nil {
		return false, redisx.Wrap(err)
	}
	for _, c := range cmds {
		if c.Val() > 0 {
			return true, nil
		}
	}
	return false, nil
}

// ShardTagScheme names the scheme of the shards' hash tags the store
// uses: "spread" (SchemaVersion) or "plain" (PlainSchema, and before Init).
func (s *Store) ShardTagScheme() string { return s.tags.Scheme().String() }

// Schema is the key schema the store serves (as Init found it recorded,
// or recorded it): PlainSchema or SchemaVersion; 0 before Init.
func (s *Store) Schema() int { return int(s.schema.Load()) }

// Fleet is the instance registry of the store's deployment
// (store/instances); what a deregistered or lapsed instance held here, the
// shards' janitor leases, the janitor releases (janitor.Janitor.Release,
// which the registry calls).
func (s *Store) Fleet() *instances.Registry { return s.fleet }

// Sessions returns the player layer's per-user state (store/sessions):
// personal streams' sessions, online status, following, parties, a
// user's open streams. It implements sse.UserSource, players.Inbox,
// players.Store and players.PartyStore.
func (s *Store) Sessions() *sessions.Sessions { return s.sess }

// Listing returns the rooms' listing (store/listing): the lobby's index
// (lobby.Index) and the lobby stream's source (sse.LobbySource).
func (s *Store) Listing() *listing.Index { return s.list }

// UserLogs returns the personal logs (store/userlog), for the concept
// packages that send personal events (tickets' match_found).
func (s *Store) UserLogs() *userlog.Log { return s.ulog }

// serverError reports whether err is the server's answer (an error reply:
// NOPERM, ERR ...), not a failure to get one.
func serverError(err error) bool {
	_, ok := errors.AsType[redis.Error](err)
	return ok
}

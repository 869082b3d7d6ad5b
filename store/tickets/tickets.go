// Package tickets keeps matchmaking tickets in Redis (the Redis side of
// matchmaking.Queue and matchmaking.Notifier): one script per step, a
// mode's queue, schedule, pending matches and lease in the mode's slot
// (so a pass, region fallback included, is one atomic script), a user's
// active-ticket claim in the user's slot.
//
// Keys ("{p:s}" the shard's tag):
//
//	{p:m}:mm:tk             hash: every ticket of the modes of shard m
//	                        (<id> as created, <id>:g group key, <id>:s state,
//	                        u:<userId> the user's active ticket: ticket_create)
//	{p:m}:mm:q:<mode>       zset id → rating: the searching tickets
//	{p:m}:mm:sched:<mode>   zset id → ms: expiry (searching), end of grace (final)
//	{p:m}:mm:pend:<mode>    hash match id → JSON: matches whose room is not made
//	                        or whose users are not all told (ticket_commit)
//	{p:m}:mm:lease:<mode>   string: the matcher holding the mode (PX)
//	{p:m}:mm:bf:<mode>      hash room id → JSON: the mode's rooms to backfill
//	                        (expires an hour after its last write)
//	{p:m}:mm:modes          zset mode → ms: the shard's modes with tickets
//	                        (until the latest ticket's grace could end,
//	                        listed by its create); a mode leaves once a
//	                        pass finds it with no ticket or pending match
//	                        and its time is past (modes_forget)
//	{p:u}:mm:u:<userId>     string: the user's active ticket (PX: TTL + grace)
//	{p:m}:mm:synced         string: written by a commit on its room's master,
//	                        for the commit to wait for its replicas (PX 10 s;
//	                        match_synced)
//
// Every key empties itself: a ticket's fields go when its grace ends
// (the pass's schedule sweep), so the hash, queue and schedule vanish with
// the last; a pending record with its match's room; leases and claims
// expire; a mode leaves the modes once a pass finds it empty.
package tickets

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/userlog"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"
)

var (
	//go:embed lua/ticket_user.lua
	userLua string
	//go:embed lua/ticket_create.lua
	createLua string
	//go:embed lua/ticket_cancel.lua
	cancelLua string
	//go:embed lua/ticket_pass.lua
	passLua string
	//go:embed lua/ticket_assign.lua
	assignLua string
	//go:embed lua/ticket_commit.lua
	commitLua string
	//go:embed lua/matcher_lease.lua
	leaseLua string
	//go:embed lua/ticket_requeue.lua
	requeueLua string
	//go:embed lua/modes_forget.lua
	forgetLua string
	//go:embed lua/match_synced.lua
	syncedLua string

	userScript    = redisx.Plain("ticket_user", userLua)
	createScript  = redisx.Plain("ticket_create", createLua)
	cancelScript  = redisx.Plain("ticket_cancel", cancelLua)
	passScript    = redisx.Plain("ticket_pass", passLua)
	assignScript  = redisx.Plain("ticket_assign", assignLua)
	commitScript  = redisx.Plain("ticket_commit", commitLua)
	leaseScript   = redisx.Plain("matcher_lease", leaseLua)
	requeueScript = redisx.Plain("ticket_requeue", requeueLua)
	forgetScript  = redisx.Plain("modes_forget", forgetLua)
	syncedScript  = redisx.Plain("match_synced", syncedLua)
)

// Store keeps tickets on b's Redis, in b's key layout; match_found goes
// to the users' personal logs.
type Store struct {
	b      *redisx.Base
	logs   *userlog.Log
	leases *redisx.Base // Lease and DropLease; never nil
	commit Durability
	// following is the key of the set of the users a user follows
	// (WithFollowing; nil: a party's match_found is the server's)
	following func(uid string) string
	// waiting bounds the commits waiting for replicas at once (commitWaits)
	waiting *semaphore.Weighted
	mu      sync.Mutex
	// short is, for each master (by address) whose writes (commits of a
	// mode's matches, users' match_found) came back short of their
	// replicas since the last one acknowledged, since when (Durability)
	short map[string]shortMaster
	// listed is the shards whose lists Modes reads at every call
	// (WithModes), live[sh] nonzero those whose list was last read with a
	// mode in it, or to which Add listed one since (the seq of the
	// marking, from 1: a read that began before it does not unmark it, and
	// a read's own mark is its seq, which a later empty read unmarks); listedAll
	// is when Modes last read every shard's (listAllEvery, listAllIdle);
	// all under mu.
	listed    []int
	live      []uint64
	seq       uint64
	listedAll time.Time
}

var (
	_ matchmaking.Queue    = (*Store)(nil)
	_ matchmaking.Notifier = (*Store)(nil)
)

// shortMaster is a master whose writes came back short of their
// replicas: since when, when one last waited the whole wait, and when
// the last came back short (a shortness older than Hold is over: the
// master failed over, or its writes stopped).
type shortMaster struct {
	since, full, last time.Time
}

// commitWaits bounds the writes of an instance waiting for replicas at
// once (Durability: commits and match_found): each holds a pooled
// connection of its master, which the requests share, while it waits, up
// to REALSYNC_MATCH_COMMIT_WAIT when a replica does not acknowledge, and
// the matcher completes 16 matches at once, each telling 16 users at
// once. With replicas in sync a wait is a round trip; with one short, a
// look (commitLook) but for one whole wait a second per master.
const commitWaits = 4

// Durability is what a match's commit waits for before any of its users
// is told (Commit): Replicas of the Redis Cluster master of its mode's
// slot (at most as many as the Cluster's layout lists for it) must
// acknowledge it within Wait (WAIT), or the commit is held: it reports
// matchmaking.ErrCommitNotReplicated and no one is told (a repair commits
// again). Redis replicates asynchronously: without it, a master that
// fails over after the commit but before its replica had it loses the
// match, its tickets go back to the queue and are matched again, and
// users told of the first match are told of a second (docs/OPERATIONS.md,
// "What Redis Cluster can lose"). Replicas 0, or no Cluster: not waited
// for. Each user's match_found waits alike for the replicas of the
// user's master (MatchFound): short of them the match is held after its
// commit, its tickets not assigned, and a repair tells the user again
// (sent once: the log that kept it logs nothing) and waits again; a
// failover that lost the event has it logged on the new master.
//
// A master whose writes came back short waits only a look (commitLook)
// for the next ones (of every slot it serves), but for one a second that
// waits the whole Wait, until one is acknowledged; once its writes have
// been short for Hold, they are told all the same (a commit ok, with
// ErrCommitNotReplicated; a notice ErrToldUnreplicated): a replica that
// is listed but never catches up (a resynchronization that fails, a
// replication link refused) holds matches back for Hold at most, not
// until an operator comes.
type Durability struct {
	Replicas int
	Wait     time.Duration
	Hold     time.Duration
}

// DefaultDurability is REALSYNC_MATCH_COMMIT_REPLICAS and
// REALSYNC_MATCH_COMMIT_WAIT's defaults (one replica, within half a
// second: a replica in sync acknowledges within a round trip) and a hold
// of 10 s.
var DefaultDurability = Durability{Replicas: 1, Wait: 500 * time.Millisecond, Hold: 10 * time.Second}

// commitLook is how long a write waits for the replicas of a master
// whose writes came back short (Durability): a look, for whether they
// caught up.
const commitLook = 10 * time.Millisecond

// New keeps tickets with b's client and layout, and sends match_found to
// logs (the store's: store.Store.UserLogs). The mode leases (Lease,
// DropLease) run on leases (the store's: store.Store.Renewals, connections
// of their own): a matcher renews its lease while its round's calls, a
// few hundred at once, and every request queue for b's pool, and a
// renewal that waited behind them could come after the lease's TTL. nil:
// on b.
func New(b *redisx.Base, logs *userlog.Log, leases *redisx.Base) *Store {
	return &Store{b: b, logs: logs, leases: cmp.Or(leases, b), commit: DefaultDurability,
		waiting: semaphore.NewWeighted(commitWaits), short: map[string]shortMaster{}, live: make([]uint64, b.Shards), seq: 1}
}

// WithModes has Modes read the lists of the shards of modes (and shard
// 0's, the one list of older releases) at every call, for a deployment
// whose tickets may be of those modes only (REALSYNC_MODES), and every
// shard's once a minute (listAllEvery) instead of once a second
// (listAllIdle). None: every shard's at the next call.
func (s *Store) WithModes(modes []string) *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed, s.listedAll = nil, time.Time{}
	if len(modes) > 0 {
		s.listedAll = time.Now()
		s.listed = []int{0}
		for _, m := range modes {
			s.listed = append(s.listed, s.modeShard(m))
		}
		slices.Sort(s.listed)
		s.listed = slices.Compact(s.listed)
	}
	return s
}

// WithDurability has s's commits wait as d says (New's: DefaultDurability).
func (s *Store) WithDurability(d Durability) *Store {
	s.commit = d
	return s
}

// WithFollowing sets key, the key of the set of the users a user follows
// (in the user's slot), and returns s: a party member's match_found from
// a leader the member does not follow is then counted among the
// strangers' events of the member's log, never refused
// (userlog.Once.Counted), so that tickets naming a user cannot push the
// events of the users they follow out of it (matchmaking.Inboxes refuses
// such a ticket once the share is full).
func (s *Store) WithFollowing(key func(uid string) string) *Store {
	s.following = key
	return s
}

// modeShard is the shard whose slot holds mode's queue.
func (s *Store) modeShard(mode string) int {
	h := fnv.New32a()
	h.Write([]byte("mm\x00" + mode))
	return int(h.Sum32() % uint32(s.b.Shards))
}

const idShardLen, idRandLen = 2, 14

// NewID implements matchmaking.Queue: "<mode's shard, base 36, 2
// chars><14 base-62 chars>", random, or of seed's SHA-256.
func (s *Store) NewID(mode, seed string) string {
	sh := strconv.FormatInt(int64(s.modeShard(mode)), 36)
	if len(sh) < idShardLen {
		sh = "0" + sh
	}
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b strings.Builder
	b.WriteString(sh)
	if seed != "" {
		sum := sha256.Sum256([]byte(seed))
		for _, c := range sum[:idRandLen] {
			b.WriteByte(alphabet[int(c)%len(alphabet)])
		}
		return b.String()
	}
	for range idRandLen {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b.WriteByte(alphabet[n.Int64()])
	}
	return b.String()
}

// idShard is the shard of ticket id; false for an id this deployment
// never issued.
func (s *Store) idShard(id string) (int, bool) {
	if len(id) != idShardLen+idRandLen {
		return 0, false
	}
	n, err := strconv.ParseInt(id[:idShardLen], 36, 32)
	if err != nil || n < 0 || int(n) >= s.b.Shards || strings.ToLower(id[:idShardLen]) != id[:idShardLen] {
		return 0, false
	}
	for _, c := range id[idShardLen:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return 0, false
		}
	}
	return int(n), true
}

func (s *Store) tickets(shard int) string       { return s.b.Tag(shard) + ":mm:tk" }
func (s *Store) queue(mode string) string       { return s.b.Tag(s.modeShard(mode)) + ":mm:q:" + mode }
func (s *Store) schedule(mode string) string    { return s.b.Tag(s.modeShard(mode)) + ":mm:sched:" + mode }
func (s *Store) pending(mode string) string     { return s.b.Tag(s.modeShard(mode)) + ":mm:pend:" + mode }
func (s *Store) lease(mode string) string       { return s.b.Tag(s.modeShard(mode)) + ":mm:lease:" + mode }
func (s *Store) backfill(mode string) string    { return s.b.Tag(s.modeShard(mode)) + ":mm:bf:" + mode }
func (s *Store) modes(shard int) string         { return s.b.Tag(shard) + ":mm:modes" }
func (s *Store) userKey(uid string) string      { return s.b.Tag(s.b.UserShard(uid)) + ":mm:u:" + uid }
func (s *Store) modeTickets(mode string) string { return s.tickets(s.modeShard(mode)) }
func (s *Store) synced(shard int) string        { return s.b.Tag(shard) + ":mm:synced" }

// status reads a script's reply: its status and the rest.
func status(res any, err error) (string, []any, error) {
	if err != nil {
		return "", nil, redisx.Wrap(err)
	}
	arr, ok := res.([]any)
	if !ok || len(arr) == 0 {
		return "", nil, fmt.Errorf("store: unexpected reply %v", res)
	}
	st, _ := arr[0].(string)
	return st, arr[1:], nil
}

// Claim implements matchmaking.Queue with one script.
func (s *Store) Claim(ctx context.Context, uid, ticketID, replace string, ttl time.Duration) (matchmaking.Held, error) {
	st, rest, err := status(s.b.Runner.Run(ctx, userCall{key: s.userKey(uid), op: "claim", id: ticketID,
		replace: replace, ms: ttl.Milliseconds()}).Result())
	if err != nil || st != "HELD" {
		return matchmaking.Held{}, err
	}
	id, _ := rest[0].(string)
	return matchmaking.Held{ID: id, At: ms(rest[1])}, nil
}

// Release implements matchmaking.Queue with one script.
func (s *Store) Release(ctx context.Context, uid, ticketID string) error {
	_, _, err := status(s.b.Runner.Run(ctx, userCall{key: s.userKey(uid), op: "release", id: ticketID}).Result())
	return err
}

// record is a ticket as created (the hash's <id> field).
type record struct {
	Mode       string         `json:"mode"`
	Regions    []string       `json:"regions"`
	Rating     float64        `json:"rating"`
	Attributes map[string]any `json:"attributes"`
	UserID     string         `json:"userId"`
	Name       string         `json:"name,omitempty"`
	Party      []string       `json:"party"`
}

// state is a ticket's state (the hash's <id>:s field, the scripts').
type state struct {
	St  string `json:"st"`
	Cr  int64  `json:"cr"`
	Ex  int64  `json:"ex"`
	Fin int64  `json:"fin"`
	Mid string `json:"mid"`
	Reg string `json:"reg"`
	Tm  int    `json:"tm"`
	Mat int64  `json:"mat"`
	Rm  string `json:"rm"`
	Su  int64  `json:"su"`
}

// Add implements matchmaking.Queue with one script.
func (s *Store) Add(ctx context.Context, t matchmaking.Ticket, g matchmaking.GroupKey, ttl, grace time.Duration, maxQueue int) (matchmaking.Ticket, error) {
	rec, err := json.Marshal(record{Mode: t.Mode, Regions: t.Regions, Rating: t.Rating, Attributes: t.Attributes,
		UserID: t.UserID, Name: t.Name, Party: t.PartyUserIDs})
	if err != nil {
		return t, fmt.Errorf("store: ticket: %w", err)
	}
	gk, err := json.Marshal(g)
	if err != nil {
		return t, fmt.Errorf("store: ticket: %w", err)
	}
	st, rest, err := status(s.b.Runner.Run(ctx, createCall{tickets: s.modeTickets(t.Mode), schedule: s.schedule(t.Mode),
		queue: s.queue(t.Mode), modes: s.modes(s.modeShard(t.Mode)), id: t.ID, record: string(rec), group: string(gk),
		mode: t.Mode, rating: t.Rating, ms: ttl.Milliseconds(), grace: grace.Milliseconds(), maxQueue: maxQueue}).Result())
	if err != nil {
		return t, err
	}
	switch st {
	case "QUEUE_FULL":
		return t, fmt.Errorf("%w (%d tickets)", matchmaking.ErrQueueFull, maxQueue)
	case "EXISTS":
		return t, matchmaking.ErrTicketExists
	case "ACTIVE": // its claim was lost (ticket_create)
		uid, _ := rest[0].(string)
		other, _ := rest[1].(string)
		return t, fmt.Errorf("user %s has an active ticket, %s: %w", uid, other, matchmaking.ErrTicketActive)
	}
	s.mark(s.modeShard(t.Mode))
	t.Status = matchmaking.Searching
	t.CreatedAt, t.ExpiresAt = ms(rest[0]), ms(rest[1])
	return t, nil
}

// ms reads a reply's milliseconds as a time.
func ms(v any) time.Time {
	var n int64
	switch x := v.(type) {
	case string:
		n, _ = strconv.ParseInt(x, 10, 64)
	case int64:
		n = x
	}
	return time.UnixMilli(n).UTC()
}

// Get implements matchmaking.Queue.
func (s *Store) Get(ctx context.Context, id string) (matchmaking.Ticket, error) {
	sh, ok := s.idShard(id)
	if !ok {
		return matchmaking.Ticket{}, matchmaking.ErrTicketNotFound
	}
	vals, err := s.b.Client.HMGet(ctx, s.tickets(sh), id, id+":s").Result()
	if err != nil {
		return matchmaking.Ticket{}, redisx.Wrap(err)
	}
	rs, _ := vals[0].(string)
	ss, _ := vals[1].(string)
	if rs == "" || ss == "" {
		return matchmaking.Ticket{}, matchmaking.ErrTicketNotFound
	}
	var rec record
	var st state
	if err := json.Unmarshal([]byte(rs), &rec); err != nil {
		return matchmaking.Ticket{}, fmt.Errorf("store: ticket %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(ss), &st); err != nil {
		return matchmaking.Ticket{}, fmt.Errorf("store: ticket %s state: %w", id, err)
	}
	t := matchmaking.Ticket{ID: id, Mode: rec.Mode, Regions: rec.Regions, Rating: rec.Rating, Attributes: rec.Attributes,
		UserID: rec.UserID, Name: rec.Name, PartyUserIDs: rec.Party, Status: matchmaking.Status(st.St),
		CreatedAt: time.UnixMilli(st.Cr).UTC(), ExpiresAt: time.UnixMilli(st.Ex).UTC(),
		MatchID: st.Mid, RoomID: st.Rm, Region: st.Reg, Team: st.Tm}
	if st.Mat > 0 {
		t.MatchedAt = time.UnixMilli(st.Mat).UTC()
	}
	if st.Su > 0 {
		t.SeatHeldUntil = time.UnixMilli(st.Su).UTC()
	}
	return t, nil
}

// Cancel implements matchmaking.Queue with one script.
func (s *Store) Cancel(ctx context.Context, t matchmaking.Ticket, grace time.Duration) (matchmaking.Status, bool, error) {
	st, rest, err := status(s.b.Runner.Run(ctx, cancelCall{tickets: s.modeTickets(t.Mode), schedule: s.schedule(t.Mode),
		queue: s.queue(t.Mode), id: t.ID, grace: grace.Milliseconds()}).Result())
	switch {
	case err != nil:
		return "", false, err
	case st == "NOT_FOUND":
		return "", false, matchmaking.ErrTicketNotFound
	case st == "FINAL":
		final, _ := rest[0].(string)
		return matchmaking.Status(final), false, nil
	}
	return matchmaking.Cancelled, true, nil
}

// pendingRecord is a pending match as ticket_pass records it.
type pendingRecord struct {
	ID      string  `json:"id"`
	Mode    string  `json:"mode"`
	Region  string  `json:"region"`
	At      int64   `json:"at"`
	Rating  float64 `json:"rating"`
	Eq      string  `json:"eq"`
	Room    string  `json:"room"`
	Told    string  `json:"told"`
	Tickets []struct {
		ID    string   `json:"id"`
		Users []string `json:"users"`
		Team  int      `json:"team"`
		Cr    int64    `json:"cr"`
	} `json:"tickets"`
}

func decodeMatch(raw string) (matchmaking.Match, error) {
	var p pendingRecord
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return matchmaking.Match{}, fmt.Errorf("store: pending match: %w", err)
	}
	m := matchmaking.Match{ID: p.ID, Mode: p.Mode, Region: p.Region, At: time.UnixMilli(p.At).UTC(),
		RoomID: p.Room, Rating: p.Rating, EqKey: p.Eq, Told: p.Told}
	for _, t := range p.Tickets {
		m.Tickets = append(m.Tickets, matchmaking.MatchedTicket{ID: t.ID, Users: t.Users, Team: t.Team,
			CreatedAt: time.UnixMilli(t.Cr).UTC()})
	}
	return m, nil
}

// Pass implements matchmaking.Queue with one script: one call, however
// large the queue, bounded by p.Budget (a cut pass's Next names the ticket
// the next call starts at).
func (s *Store) Pass(ctx context.Context, mode string, r matchmaking.Rules, p matchmaking.PassParams) (matchmaking.Pass, error) {
	c := passCall{tickets: s.modeTickets(mode), schedule: s.schedule(mode), queue: s.queue(mode), pending: s.pending(mode),
		backfill: s.backfill(mode), r: r, grace: p.Grace.Milliseconds(), walk: p.Walk, sweep: p.Sweep, mode: mode,
		prefix: mode + "-" + strings.ToLower(rand.Text()[:12]) + "-", from: p.From, budget: p.Budget.OrDefault()}
	if !p.Now.IsZero() {
		c.now = strconv.FormatInt(p.Now.UnixMilli(), 10)
	}
	_, rest, err := status(s.b.Runner.Run(ctx, c).Result())
	if err != nil {
		return matchmaking.Pass{}, err
	}
	if len(rest) < 4 {
		return matchmaking.Pass{}, fmt.Errorf("store: unexpected ticket_pass reply %v", rest)
	}
	n, _ := rest[0].(int64)
	next, _ := rest[1].(string)
	cut, _ := rest[2].(string)
	left, _ := rest[3].(int64)
	out := matchmaking.Pass{Expired: int(n), Next: next, Cut: cut, Left: int(left)}
	for _, v := range rest[4:] {
		raw, _ := v.(string)
		m, err := decodeMatch(raw)
		if err != nil {
			return out, err
		}
		out.Matches = append(out.Matches, m)
	}
	return out, nil
}

// Pending implements matchmaking.Queue.
func (s *Store) Pending(ctx context.Context, mode string) ([]matchmaking.Match, error) {
	vals, err := s.b.Client.HVals(ctx, s.pending(mode)).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	var out []matchmaking.Match
	for _, raw := range vals {
		m, err := decodeMatch(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Assign implements matchmaking.Queue with one script.
func (s *Store) Assign(ctx context.Context, m matchmaking.Match, roomID string, seatsUntil time.Time) (bool, error) {
	_, rest, err := status(s.b.Runner.Run(ctx, assignCall{tickets: s.modeTickets(m.Mode), pending: s.pending(m.Mode),
		match: m.ID, room: roomID, until: seatsUntil.UnixMilli(), ids: ticketIDs(m)}).Result())
	if err != nil {
		return false, err
	}
	if len(rest) < 2 {
		return false, fmt.Errorf("store: unexpected ticket_assign reply %v", rest)
	}
	ended, _ := rest[1].(int64)
	return ended == 1, nil
}

// Commit implements matchmaking.Queue with one script (after the room's
// sync, below), then waits for the replicas Durability asks for
// (durably): short of them, it holds
// the match (false, ErrCommitNotReplicated), but for a master whose
// writes have been short for Durability.Hold (true, and the error).
//
// First, the room's master: Commit waits alike for its replicas to have
// every write it took so far, the room's and its seats' among them
// (roomReplicated), and holds the match short of them, or when a match no
// one was told of finds its room gone there: else a failover of that
// master could lose the room of a match its users were told of, and no
// repair would make it again (a chaos tester's find: 14 matches' rooms
// lost with a master whose replication was cut).
func (s *Store) Commit(ctx context.Context, m matchmaking.Match, roomID string) (bool, error) {
	notReplicated := func(err error) error { return fmt.Errorf("%w: %w", matchmaking.ErrCommitNotReplicated, err) }
	var roomShort error
	if anyway, err := s.roomReplicated(ctx, roomID, m.Told == ""); err != nil {
		if errors.Is(err, errRoomNotThere) {
			return false, notReplicated(err) // held: a repair makes the room again
		}
		if lack := (*redisx.ShortOfReplicasError)(nil); !errors.As(err, &lack) {
			return false, redisx.Wrap(err)
		} else if !anyway {
			return false, notReplicated(err)
		}
		roomShort = notReplicated(err)
	}
	res, anyway, err := s.durably(ctx, commitCall{pending: s.pending(m.Mode), match: m.ID, room: roomID, ids: ticketIDs(m)},
		func(res any) bool { st, _, _ := status(res, nil); return st == "OK" })
	if lack := (*redisx.ShortOfReplicasError)(nil); errors.As(err, &lack) {
		return anyway, notReplicated(err)
	}
	st, _, err := status(res, err)
	if err == nil && st == "OK" && roomShort != nil {
		return true, roomShort // told all the same: the room's master short for too long
	}
	return st == "OK", err
}

// syncedTTL is how long a shard's sync key (roomReplicated) outlives its
// last write: a write to wait on, not a record.
const syncedTTL = 10 * time.Second

// roomReplicated waits, as a commit does (durably), for the replicas of
// the master of room roomID's slot to have every write that master took
// so far: it writes the shard's sync key (match_synced.lua) and waits for
// that write. With check, the room must be there (a match no one was told
// of: OpenMatchRoom has just made or found it), or it is
// errRoomNotThere: the call, sent again to a promoted replica (MOVED, a
// WAIT ended by the failover), found the room lost with the old master.
// It runs when the mode's master is the room's too: that master's failover
// during the commit's wait would run the commit again on a replica that
// kept the pass, from before the room, and lost the room. Nothing is
// written nor waited for when no commit waits (Durability, a client other
// than a Cluster's) or when the layout lists no replica of that master.
// Short of the replicas it is a *redisx.ShortOfReplicasError, anyway true
// once that master's writes have been short for Hold.
func (s *Store) roomReplicated(ctx context.Context, roomID string, check bool) (anyway bool, err error) {
	shard, ok := layout.RoomShard(roomID, s.b.Shards)
	if !ok || s.commit.Replicas <= 0 || s.b.Replicas == nil {
		return false, nil
	}
	key := s.synced(shard)
	if s.b.Replicas(layout.Slot(key)) == 0 {
		return false, nil // none to wait for: RunReplicated would only write
	}
	reply, anyway, err := s.durably(ctx, syncedCall{key: key, room: layout.RoomKey(s.b.Tag(shard), roomID), ttl: syncedTTL, check: check},
		func(reply any) bool { st, _, _ := status(reply, nil); return st == "OK" })
	if st, _, serr := status(reply, err); serr == nil && st == "GONE" {
		return false, fmt.Errorf("%w: room %s", errRoomNotThere, roomID)
	}
	return anyway, err
}

// errRoomNotThere is a match's room missing from its master at the
// commit (roomReplicated): lost in a failover.
var errRoomNotThere = errors.New("store: the match's room is not on its master")

// durably runs call on the master of its first key's slot, then waits
// for the replicas Durability asks for (redisx.RunReplicated), at most
// commitWaits calls of s at once. wrote says from the reply whether the
// call wrote what is waited for: only then does an acknowledgement end
// the master's shortness, and does a wait short of the replicas count
// (*redisx.ShortOfReplicasError; else the reply and no error). A master
// whose writes came back short waits only a look (commitLook), but for
// one a second that waits the whole Wait, until one is acknowledged;
// anyway is true once its writes have been short for Hold: the caller
// acts on them all the same. Shortness is the master's, not the slot's:
// one replica down makes one whole wait a second, whatever the slots
// (modes' queues, users' logs) its master serves.
func (s *Store) durably(ctx context.Context, call redisx.Call, wrote func(reply any) bool) (reply any, anyway bool, err error) {
	var master string // "": not waited for
	if s.commit.Replicas > 0 && s.b.Replicas != nil {
		if err := s.waiting.Acquire(ctx, 1); err != nil {
			return nil, false, redisx.Wrap(redisx.GaveUp(err))
		}
		defer s.waiting.Release(1)
		keys, _ := call.KeysArgs()
		master = s.b.MasterAddr(ctx, keys[0])
	}
	wait := s.commit.Wait
	now := time.Now()
	s.mu.Lock()
	if st, short := s.short[master]; short && now.Sub(st.last) >= s.commit.Hold {
		delete(s.short, master) // stale: a whole wait, and afresh if short
	} else if short && now.Sub(st.full) < time.Second {
		wait = min(wait, commitLook)
	} else if short {
		st.full = now // a whole wait a second: a replica slower than a look may be back
		s.short[master] = st
	}
	s.mu.Unlock()
	reply, acked, err := s.b.RunReplicated(ctx, call, s.commit.Replicas, wait)
	var lack *redisx.ShortOfReplicasError
	if !errors.As(err, &lack) {
		if err == nil && acked && wrote(reply) {
			s.mu.Lock()
			delete(s.short, master)
			s.mu.Unlock()
		}
		return reply, false, err
	}
	if !wrote(reply) {
		return reply, false, nil // nothing written: nothing to wait for
	}
	now = time.Now()
	s.mu.Lock()
	st, short := s.short[lack.Addr] // the master it ran on (a failover in between: afresh)
	if !short || now.Sub(st.last) >= s.commit.Hold {
		st = shortMaster{since: now, full: now}
	}
	st.last = now
	s.short[lack.Addr] = st
	for addr, o := range s.short { // masters short no longer written to, failed over
		if now.Sub(o.last) >= s.commit.Hold && now.Sub(o.last) >= time.Minute {
			delete(s.short, addr)
		}
	}
	s.mu.Unlock()
	return reply, now.Sub(st.since) >= s.commit.Hold, err
}

// ticketIDs is the ids of m's tickets.
func ticketIDs(m matchmaking.Match) []string {
	ids := make([]string, len(m.Tickets))
	for i, t := range m.Tickets {
		ids[i] = t.ID
	}
	return ids
}

// Requeue implements matchmaking.Queue with one script: the barred
// tickets first, the script bars the first len(barred) from the room.
func (s *Store) Requeue(ctx context.Context, m matchmaking.Match, barred []string, grace time.Duration) ([]string, error) {
	ids := make([]string, 0, len(m.Tickets))
	for _, t := range m.Tickets {
		if slices.Contains(barred, t.ID) {
			ids = append(ids, t.ID)
		}
	}
	nbarred := len(ids)
	for _, t := range m.Tickets {
		if !slices.Contains(barred, t.ID) {
			ids = append(ids, t.ID)
		}
	}
	st, rest, err := status(s.b.Runner.Run(ctx, requeueCall{tickets: s.modeTickets(m.Mode), schedule: s.schedule(m.Mode),
		queue: s.queue(m.Mode), pending: s.pending(m.Mode), backfill: s.backfill(m.Mode), match: m.ID, room: m.RoomID,
		grace: grace.Milliseconds(), barred: nbarred, ids: ids}).Result())
	if err != nil {
		return nil, err
	}
	if st == "TOLD" {
		return nil, matchmaking.ErrMatchTold
	}
	var back []string
	for _, v := range rest[min(1, len(rest)):] {
		id, _ := v.(string)
		back = append(back, id)
	}
	return back, nil
}

// backfillTTL: the backfill rooms of a mode go this long after its last
// pass (each pass renews it) or write: a mode without tickets that long
// forgets its rooms, which then take no backfill.
const backfillTTL = time.Hour

// BackfillRooms implements matchmaking.Queue.
func (s *Store) BackfillRooms(ctx context.Context, mode string) ([]matchmaking.BackfillRoom, error) {
	all, err := s.b.Client.HGetAll(ctx, s.backfill(mode)).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]matchmaking.BackfillRoom, 0, len(all))
	for id, raw := range all {
		var r matchmaking.BackfillRoom
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return nil, fmt.Errorf("store: backfill room %s: %w", id, err)
		}
		r.ID = id
		out = append(out, r)
	}
	return out, nil
}

// PutBackfill implements matchmaking.Queue.
func (s *Store) PutBackfill(ctx context.Context, mode string, r matchmaking.BackfillRoom) error {
	key := s.backfill(mode)
	if r.Free < 0 {
		return redisx.Wrap(s.b.Client.HDel(ctx, key, r.ID).Err())
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = s.b.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, r.ID, raw)
		p.PExpire(ctx, key, backfillTTL)
		return nil
	})
	return redisx.Wrap(err)
}

// Lease implements matchmaking.Queue with one script.
func (s *Store) Lease(ctx context.Context, mode, holder string, ttl time.Duration) (bool, error) {
	st, _, err := status(s.leases.Runner.Run(ctx, leaseCall{key: s.lease(mode), op: "take", holder: holder, ms: ttl.Milliseconds()}).Result())
	return st == "OK", err
}

// Renew implements matchmaking.Queue with one script.
func (s *Store) Renew(ctx context.Context, mode, holder string, ttl time.Duration) (bool, error) {
	st, _, err := status(s.leases.Runner.Run(ctx, leaseCall{key: s.lease(mode), op: "renew", holder: holder, ms: ttl.Milliseconds()}).Result())
	return st == "OK", err
}

// DropLease implements matchmaking.Queue with one script.
func (s *Store) DropLease(ctx context.Context, mode, holder string) error {
	_, _, err := status(s.leases.Runner.Run(ctx, leaseCall{key: s.lease(mode), op: "drop", holder: holder}).Result())
	return err
}

// Modes implements matchmaking.Queue: every shard's list once a second
// (listAllIdle), and in between the lists of the shards whose last read
// listed a mode or to which this Store's Add listed one since (WithModes:
// those and the lists of its modes' shards; every shard's once a
// minute), each read on its own, modesReads at once. A mode that another
// instance's Add listed on a shard with none is thus listed here within a
// second; by the instance that queued its ticket (whose matcher takes its
// lease), at once. A shard whose list could not be read (its
// master down, hanging or cut off: its read ends with ctx) leaves its
// modes out, with an error that says so; the others' are listed (nil
// when none could be read). One pipeline would not do: go-redis fails the
// whole of a Cluster pipeline once ctx ends during a node's retry, the
// replies already read included. Shard 0's key is the one list of
// instances from before the lists were per shard (every mode's), read as
// shard 0's: a rolling upgrade loses none of the modes it lists.
func (s *Store) Modes(ctx context.Context) ([]string, error) {
	shards, began := s.shardsToList()
	if len(shards) == 0 {
		return []string{}, nil
	}
	lists := make([][]string, len(shards))
	errs := make([]error, len(shards))
	sem := make(chan struct{}, modesReads)
	var wg sync.WaitGroup
	for i, sh := range shards {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			lists[i], errs[i] = s.modesOf(ctx, sh)
		})
	}
	wg.Wait()
	s.lived(shards, lists, errs, began)
	out := []string{}
	var unread []int
	var first error
	for i, err := range errs {
		if err != nil {
			unread, first = append(unread, shards[i]), cmp.Or(first, err)
			continue
		}
		out = append(out, lists[i]...)
	}
	if len(unread) == len(shards) {
		return nil, redisx.Wrap(first)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(unread) > 0 {
		return out, fmt.Errorf("store: the modes of shards %v unread: %w", unread, redisx.Wrap(first))
	}
	return out, nil
}

// modesOf reads shard sh's list of modes with redisx.Read: the batcher's
// read lane sends the lists bound for one node together (a lone ZRANGE
// would go alone, a round trip per shard at every tick), each with its
// own reply and error.
func (s *Store) modesOf(ctx context.Context, sh int) ([]string, error) {
	var list *redis.StringSliceCmd
	if err := redisx.Read(ctx, s.b.Client, func(p redis.Pipeliner) { list = p.ZRange(ctx, s.modes(sh), 0, -1) }); err != nil {
		return nil, err
	}
	return list.Val(), nil
}

// modesReads is how many shards' lists Modes reads at once.
const modesReads = 16

// listAllEvery is how often Modes reads every shard's list when WithModes
// narrowed them: a mode taken out of REALSYNC_MODES while it had tickets
// or pending matches, on a shard no mode listed has, is still passed (its
// tickets ended, its matches repaired), at least that often.
const listAllEvery = time.Minute

// listAllIdle is how often Modes reads every shard's list otherwise: the
// lists of the shards with no mode are read that often, not at every
// tick of every instance's matcher (4 a second: at 1 296 shards, 5 184
// reads a second an instance with nothing queued).
const listAllIdle = time.Second

// shardsToList is the shards whose lists Modes reads now, sorted, and the
// seq they are read from (lived).
func (s *Store) shardsToList() (shards []int, began uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	every := listAllIdle
	if s.listed != nil {
		every = listAllEvery
	}
	if time.Since(s.listedAll) < every {
		for sh, at := range s.live {
			if at != 0 || slices.Contains(s.listed, sh) {
				shards = append(shards, sh)
			}
		}
		return shards, s.seq
	}
	s.listedAll = time.Now()
	shards = make([]int, s.b.Shards)
	for sh := range shards {
		shards[sh] = sh
	}
	return shards, s.seq
}

// mark has Modes read shard sh's list at every call until a read finds it
// without a mode: Add listed one there.
func (s *Store) mark(sh int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.live[sh] = s.seq
}

// lived records what Modes read from shards (from seq began): a list with
// a mode marks its shard, an empty one unmarks it unless it was marked
// since the read began; an unread one stays as it was.
func (s *Store) lived(shards []int, lists [][]string, errs []error, began uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, sh := range shards {
		switch {
		case errs[i] != nil:
		case len(lists[i]) > 0:
			s.live[sh] = max(s.live[sh], began)
		case s.live[sh] <= began:
			s.live[sh] = 0
		}
	}
}

// Forget implements matchmaking.Queue with one script on the mode's
// shard's list, and one on shard 0's for a mode of another shard (an
// instance from before the lists were per shard may have listed it
// there): until is the later of the two times.
func (s *Store) Forget(ctx context.Context, mode string) (time.Time, error) {
	var until time.Time
	for _, sh := range slices.Compact([]int{s.modeShard(mode), 0}) {
		_, rest, err := status(s.b.Runner.Run(ctx, forgetCall{key: s.modes(sh), mode: mode}).Result())
		if err != nil {
			return time.Time{}, err
		}
		if len(rest) == 0 {
			continue
		}
		at, _ := rest[0].(string)
		ms, err := strconv.ParseFloat(at, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("store: unexpected modes_forget reply %v", rest)
		}
		if at := time.UnixMilli(int64(ms)); at.After(until) {
			until = at
		}
	}
	return until, nil
}

// Searching implements matchmaking.Queue.
func (s *Store) Searching(ctx context.Context, mode string) (int, error) {
	n, err := s.b.Client.ZCard(ctx, s.queue(mode)).Result()
	return int(n), redisx.Wrap(err)
}

// MatchFound implements matchmaking.Notifier with one script: the event
// is logged on the user's personal stream and published, so a stream
// open now gets it at once, one opened later (within the log's TTL, on
// each platform: its offline inbox) by replay. It is sent once per user
// and match id: the user's log remembers the match as it remembers a
// message's Idempotency-Key (matchFoundKey, for rooms.MessageKeyWindow,
// among its last rooms.MessageKeysKept keys), so a repair of a match
// whose first completion told the user (or is telling them: the script
// is atomic) logs nothing again. Past that window, or once the user's log
// forgot the key among as many newer ones, a repeat is sent again.
//
// The send waits for the replicas of the user's master as a commit does
// (Durability, durably): short of them it returns
// matchmaking.ErrNoticeNotReplicated (the event stands on the master
// alone, published already: a repair sends it again, which logs nothing
// when the master kept it, and waits again), or, for a master whose
// writes have been short for Hold, matchmaking.ErrToldUnreplicated.
func (s *Store) MatchFound(ctx context.Context, uid string, e matchmaking.MatchFound) error {
	now := time.Now()
	var short error
	once := userlog.Once{Key: matchFoundKey(e.MatchID), Digest: "match_found", AtMs: now.UnixMilli(),
		Window: rooms.MessageKeyWindow, Kept: rooms.MessageKeysKept, Renew: true}
	if s.following != nil && e.Leader != "" && e.Leader != uid {
		once.From, once.Following, once.Counted = e.Leader, s.following(uid), true
	}
	ev := players.MatchFoundEvent{UserEventHeader: players.NewHeader(players.EventMatchFound, uid, now),
		TicketID: e.TicketID, MatchID: e.MatchID, RoomID: e.RoomID, Mode: e.Mode, Region: e.Region, Team: e.Team}
	if !e.SeatHeldUntil.IsZero() {
		ev.SeatHeldUntil = players.Timestamp(e.SeatHeldUntil)
	}
	_, err := s.logs.SendEventOnceBy(ctx, uid, ev,
		once,
		func(ctx context.Context, call redisx.Call) (any, error) {
			// a send writes, its key known or not (Renew)
			reply, anyway, err := s.durably(ctx, call, func(any) bool { return true })
			if lack := (*redisx.ShortOfReplicasError)(nil); !errors.As(err, &lack) {
				return reply, redisx.Wrap(err)
			} else if !anyway {
				return reply, fmt.Errorf("%w: %w", matchmaking.ErrNoticeNotReplicated, err)
			}
			short = fmt.Errorf("%w: %w", matchmaking.ErrToldUnreplicated, err)
			return reply, nil
		})
	if err != nil {
		return err
	}
	return short
}

// matchFoundKey is the key a user's log remembers match id's match_found
// by, among the keys of the messages sent to the user ("<Idempotency-Key>
// <sender>", the Idempotency-Key visible ASCII): it starts with a space,
// which no message's key does. The window and cap are the messages'
// (rooms.MessageKeyWindow, rooms.MessageKeysKept): the user's key sets
// are forgotten by the window of the send that last wrote them.
func matchFoundKey(id string) string { return " match_found " + id }

package store_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// recorder is a store.Metrics that remembers what it was told.
type recorder struct {
	mu      sync.Mutex
	scripts map[string]int // "<script> <outcome>"
	errors  map[string]int // by op
	slowest time.Duration
	zero    int // script calls of no duration
}

var _ store.Metrics = (*recorder)(nil)

func newRecorder() *recorder { return &recorder{scripts: map[string]int{}, errors: map[string]int{}} }

func (r *recorder) ScriptCall(script, outcome string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts[script+" "+outcome]++
	r.slowest = max(r.slowest, d)
	if d <= 0 {
		r.zero++
	}
}

func (r *recorder) RedisError(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors[op]++
}

// take returns what was recorded since the last take.
func (r *recorder) take() (scripts, errors map[string]int, zero int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	scripts, errors, zero = r.scripts, r.errors, r.zero
	r.scripts, r.errors, r.zero = map[string]int{}, map[string]int{}, 0
	return scripts, errors, zero
}

func openObserved(t *testing.T, b redistest.Backend, m store.Metrics) *store.Store {
	t.Helper()
	s := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(t), Shards: 8, Metrics: m})
	return s
}

// Every script run is recorded once under its file's name with the status
// it answered, whether it ran alone (Script.Run) or in the transaction
// that reads the room, and also when Redis had forgotten it (NOSCRIPT is
// no outcome: the run after it is).
func TestMetricsRecordScriptRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		rec := newRecorder()
		s := openObserved(t, b, rec)
		ctx := context.Background()
		r := mustCreate(t, s, alice, newRoom(func(n *rooms.NewRoom) { n.MaxPlayers = 2 })).Room
		mustJoin(t, s, bob, r.ID)
		if _, err := s.Join(ctx, carol, r.ID); !errors.Is(err, rooms.ErrRoomFull) {
			t.Fatalf("join of a full room: %v", err)
		}
		if _, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"a": []byte("1")}, IfMatch: 7}); !errors.Is(err, rooms.ErrVersionMismatch) {
			t.Fatalf("patch with a stale If-Match: %v", err)
		}
		if _, err := s.OpenStream(ctx, sse.Lease{Room: r.ID, UserID: bob.ID, Stream: "s1"}, sse.ReadFrom, sse.Cursor{}, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RenewStreams(ctx, []sse.Lease{{Room: r.ID, UserID: bob.ID, PlayerID: 2, Stream: "s1"}}); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"room_create OK": 1, "room_join OK": 1, "room_join ROOM_FULL": 1,
			"state_patch VERSION_MISMATCH": 1, "stream_open OK": 1, "presence_renew OK": 1}
		scripts, errs, zero := rec.take()
		if !maps.Equal(scripts, want) || len(errs) != 0 || zero != 0 {
			t.Errorf("recorded %v, errors %v, %d without duration; want %v and none", scripts, errs, zero, want)
		}
		if b.Name == "embedded" {
			return // miniredis has no SCRIPT FLUSH
		}
		flushScripts(t, s)
		if err := s.Leave(ctx, bob, r.ID); err != nil { // Script.Run: EVALSHA, NOSCRIPT, EVAL
			t.Fatal(err)
		}
		flushScripts(t, s)
		mustJoin(t, s, carol, r.ID) // in MULTI/EXEC: NOSCRIPT, SCRIPT LOAD, again
		want = map[string]int{"player_remove OK": 1, "room_join OK": 1}
		if scripts, errs, _ = rec.take(); !maps.Equal(scripts, want) || len(errs) != 0 {
			t.Errorf("after SCRIPT FLUSH: recorded %v, errors %v; want %v and none", scripts, errs, want)
		}
	})
}

// A Redis that went away makes scripts "unavailable" and counts each
// failed command or transaction once.
func TestMetricsRecordRedisErrors(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rec := newRecorder()
	s := openObserved(t, redistest.Backend{Name: "own", URL: "redis://" + srv.Addr}, rec)
	r := mustCreate(t, s, alice, newRoom()).Room
	rec.take()
	srv.Stop()
	ctx := context.Background()
	if _, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"a": []byte("1")}, IfMatch: rooms.NoIfMatch}); !errors.Is(err, rooms.ErrUnavailable) {
		t.Fatalf("patch without Redis: %v", err)
	}
	if _, _, err := s.Get(ctx, r.ID, false); !errors.Is(err, rooms.ErrUnavailable) {
		t.Fatalf("get without Redis: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.PatchState(canceled, alice, r.ID, rooms.StatePatch{Set: rooms.State{"a": []byte("1")}, IfMatch: rooms.NoIfMatch}); !errors.Is(err, context.Canceled) {
		t.Fatalf("patch with its context ended: %v", err)
	}
	scripts, errs, _ := rec.take()
	// the patch is an FCALL of the library (Redis 7 has Functions), and
	// the read a transaction: each sent once, its dial refused (Redial
	// sends again only to a node that accepts a connection, and the
	// store's own resend skips a failed dial: redisx.Redialed); the one
	// whose context had ended is not sent at all (redisx.NeverSent), so
	// neither a script call nor a Redis error
	wantScripts := map[string]int{"state_patch unavailable": 1}
	if wantErrs := map[string]int{"fcall": 1, "multi": 1}; !maps.Equal(scripts, wantScripts) || !maps.Equal(errs, wantErrs) {
		t.Errorf("recorded %v and errors %v; want %v and %v", scripts, errs, wantScripts, wantErrs)
	}
}

package store_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// lostReply makes the next transaction that runs a script lose its reply
// after Redis ran it, as a read timeout or a request deadline does when
// Redis answers late: the script's writes happen, the caller sees an error.
type lostReply struct{ armed atomic.Bool }

func (h *lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		hasScript := false
		if len(cmds) == 0 || cmds[0].Name() != "multi" {
			return err // a pipeline, such as a batch of single script runs (REALSYNC_TEST_REDIS_BATCH)
		}
		for _, c := range cmds {
			if strings.EqualFold(c.Name(), "evalsha") || strings.EqualFold(c.Name(), "eval") || strings.EqualFold(c.Name(), "fcall") {
				hasScript = true
			}
		}
		if hasScript && h.armed.CompareAndSwap(true, false) {
			timeout := &net.OpError{Op: "read", Net: "tcp", Err: context.DeadlineExceeded}
			for _, c := range cmds {
				c.SetErr(timeout)
			}
			return timeout
		}
		return err
	}
}

// A join whose reply is lost after its script ran leaves the user in the
// room: the store keeps the reservation (only a refusal the script
// answered drops it), so the holdings never under-count and the user is
// never in more rooms than the quota.
func TestLostJoinReplyKeepsHolding(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := quotaInstances(t, b, store.Quotas{RoomsJoined: 2})
			hook := &lostReply{}
			s.Client().AddHook(hook)
			var ids []string
			for i := range 3 {
				j, err := s.Create(ctx, user(100+i), spread(i))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, j.Room.ID)
			}
			u := user(1)
			if _, err := s.Join(ctx, u, ids[0]); err != nil {
				t.Fatal(err)
			}
			hook.armed.Store(true)
			if _, err := s.Join(ctx, u, ids[1]); err == nil {
				t.Fatal("the lost reply was not lost")
			}
			if got := reality(t, s, u); len(got) != 2 {
				t.Fatalf("after the lost reply u is in %v, want 2 rooms", got)
			}
			_, err := s.Join(ctx, u, ids[2])
			if got := reality(t, s, u); len(got) > 2 {
				t.Fatalf("u is in %d rooms with RoomsJoined 2 (third join: %v); holdings %v", len(got), err, holdings(t, s, u))
			}
			if !errors.Is(err, rooms.ErrJoinedRoomsLimit) {
				t.Fatalf("third join: %v, want ErrJoinedRoomsLimit", err)
			}
		})
	}
}

// A user whose holdings key expired (an hour without a create or join)
// and who is at the limit gets a rebuilt key from a refused reservation:
// that key must expire like every other.
func TestRefusedSeedKeyExpires(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := quotaInstances(t, b, store.Quotas{RoomsJoined: 2})
			var ids []string
			for i := range 3 {
				j, err := s.Create(ctx, user(200+i), spread(i))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, j.Room.ID)
			}
			u := user(2)
			for _, id := range ids[:2] {
				if _, err := s.Join(ctx, u, id); err != nil {
					t.Fatal(err)
				}
			}
			key := s.HoldingsKey(u.ID)
			if err := s.Client().Del(ctx, key).Err(); err != nil { // as when it expired
				t.Fatal(err)
			}
			if _, err := s.Join(ctx, u, ids[2]); !errors.Is(err, rooms.ErrJoinedRoomsLimit) {
				t.Fatalf("join past the limit: %v", err)
			}
			ttl, err := s.Client().PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 {
				t.Fatalf("holdings key %s rebuilt by a refused join has PTTL %v: it never expires", key, ttl)
			}
		})
	}
}

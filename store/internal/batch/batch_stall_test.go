package batch

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// A call does not queue behind a batch that has been out longer than
// stalledBatch (a node that stopped answering): run says errStalled and
// leaves the call to go alone; behind a batch out a moment, it queues.
func TestBatchStalledLaneLetsCallsGoAlone(t *testing.T) {
	b := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Config{}, nil)
	l := b.lane(laneScript, "n", false)
	c, _, ok := newCall([]redis.Cmder{redis.NewCmd(context.Background(), "evalsha", "x", 0)}, callScript)
	if !ok {
		t.Fatal("not a batchable call")
	}
	b.mu.Lock()
	l.sentAt, l.busy = time.Now().Add(-2*stalledBatch), true
	b.mu.Unlock()
	if err := b.run(context.Background(), l, c); err != errStalled {
		t.Fatalf("behind a stalled batch: %v, want errStalled", err)
	}
	if len(l.pending) != 0 || c.state.Load() != callWaiting {
		t.Fatalf("the call was queued (%d pending) or answered (%d)", len(l.pending), c.state.Load())
	}
	b.mu.Lock()
	l.sentAt = time.Now()
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.run(ctx, l, c); err == errStalled || len(l.pending) != 1 {
		t.Fatalf("behind a batch just sent: %v with %d pending, want it queued (and given up with ctx)", err, len(l.pending))
	}
}

// A call whose caller gives up while it waits in its lane's queue is
// dropped, and its error says it was never sent (redisx.NeverSent: a
// quota reserved for it is released), besides being the context's.
func TestBatchAbandonedCallSaysNeverSent(t *testing.T) {
	b := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Config{}, nil)
	l := b.lane(laneScript, "n", false)
	c, _, ok := newCall([]redis.Cmder{redis.NewCmd(context.Background(), "evalsha", "x", 0)}, callScript)
	if !ok {
		t.Fatal("not a batchable call")
	}
	b.mu.Lock()
	l.sentAt, l.busy = time.Now(), true // a batch out: the call queues behind it
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := b.run(ctx, l, c)
	if !redisx.NeverSent(err) || !errors.Is(err, context.DeadlineExceeded) || !redisx.NeverSent(c.cmds[0].Err()) {
		t.Fatalf("given up in the queue: %v (command: %v), want the context's error, never sent", err, c.cmds[0].Err())
	}
	if c.state.Load() != callAbandoned {
		t.Fatalf("call state %d, want abandoned", c.state.Load())
	}
	if b.send(l, []*call{c}) != nil || c.state.Load() != callAbandoned {
		t.Fatal("an abandoned call was sent")
	}
}

// A call of the client's own bound never shares a batch with a patient
// one (redisx.Patient, a stream's opening): a batch waits for a node until
// its callers' latest deadline, so against a node that accepts and never
// answers, the short call would wait out the patient one's bound. Both
// come within one Window; the short one must be answered, with its own
// deadline's error, before the patient one's deadline.
func TestBatchKeepsPatientCallsApart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() { // a hung node: it takes connections and answers nothing
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer client.Close()
	b := New(client, Config{Window: 200 * time.Millisecond}, nil)
	client.AddHook(b)
	defer b.Close()

	bg := context.Background()
	pctx, pcancel := context.WithTimeout(redisx.Patient(bg, 3*time.Second), 3*time.Second)
	defer pcancel()
	patient := make(chan error, 1)
	go func() { patient <- client.EvalSha(pctx, "x", nil).Err() }()
	// the patient call waits in its lane's window when the short one comes
	for deadline := time.Now().Add(5 * time.Second); ; {
		b.mu.Lock()
		queued := 0
		for _, l := range b.lanes {
			queued += len(l.pending)
		}
		b.mu.Unlock()
		if queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the patient call never queued")
		}
		time.Sleep(time.Millisecond)
	}
	sctx, scancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer scancel()
	err = client.EvalSha(sctx, "x", nil).Err()
	if !timedOut(err) {
		t.Fatalf("the short call against a hung node: %v, want its deadline's error", err)
	}
	if pend, _ := pctx.Deadline(); !time.Now().Before(pend) {
		t.Fatal("the short call was answered at the patient one's deadline: they left in one batch")
	}
	if perr := <-patient; perr == nil {
		t.Fatal("the patient call against a hung node succeeded")
	}
}

package fleet

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Config is what Join needs.
type Config struct {
	Registry Registry
	// Self describes this instance; its Streams and HeartbeatAt are ignored.
	Self Instance
	// Streams counts this instance's open streams at each heartbeat; nil
	// reports 0.
	Streams func() int
	// Every is the heartbeat interval: a third of the registry's TTL. A
	// heartbeat is bounded by it, and one that failed is tried again every
	// fifth of it (retryShare) until one succeeds. Waiting the whole
	// interval, two failures in a row left the third heartbeat at the
	// registration's expiry; unbounded, a heartbeat held up by a Cluster
	// moving the registry's slot waited 10 s unlogged (a resharding
	// tester's find: both instances lapsed, and others may reap a lapsed
	// instance, releasing what it holds).
	Every time.Duration
	Log   *slog.Logger
	// after is time.After when nil; tests record the waits (export_test.go)
	after func(time.Duration) <-chan time.Time
}

// retryShare: a failed heartbeat is tried again after Every/retryShare.
const retryShare = 5

// Member keeps one instance registered until Leave.
type Member struct {
	cfg   Config
	stop  chan struct{}
	done  chan struct{}
	leave sync.Once
}

// Join registers cfg.Self at once, returning the registry's error if that
// fails, then renews the registration every cfg.Every (a failed renewal
// every cfg.Every/retryShare until one succeeds) until Leave. Each
// heartbeat also reaps the registrations of other instances that lapsed,
// so a dead instance's leftovers are released within one interval of its
// lapse while any instance runs.
func Join(ctx context.Context, cfg Config) (*Member, error) {
	if cfg.Every <= 0 {
		return nil, errors.New("fleet: heartbeat interval must be positive")
	}
	if cfg.Streams == nil {
		cfg.Streams = func() int { return 0 }
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.after == nil {
		cfg.after = time.After
	}
	m := &Member{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := cfg.Registry.HeartbeatInstance(ctx, m.self()); err != nil {
		return nil, err
	}
	go m.run()
	return m, nil
}

func (m *Member) self() Instance {
	in := m.cfg.Self
	in.Streams = m.cfg.Streams()
	in.HeartbeatAt = time.Time{}
	return in
}

func (m *Member) run() {
	defer close(m.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-m.stop
		cancel() // a heartbeat stuck on an unreachable Redis ends with Leave
	}()
	wait := m.cfg.Every
	for {
		select {
		case <-m.stop:
			return
		case <-m.cfg.after(wait):
		}
		began, every := time.Now(), m.cfg.Every
		// a beat is bounded by the interval: one held up (a Redis Cluster
		// moving the registry's slot: the beat waited 10 s, then found its
		// registration lapsed) fails, is logged and is tried again
		bctx, cancel := context.WithTimeout(ctx, m.cfg.Every)
		if !m.beat(bctx) {
			every /= retryShare
		}
		cancel()
		// counted from the beat's start, as a ticker would: a slow
		// heartbeat does not push the next one later
		wait = max(every-time.Since(began), 0)
	}
}

// leaving: ctx was cancelled by Leave (a beat's own deadline is logged).
func leaving(ctx context.Context) bool { return errors.Is(ctx.Err(), context.Canceled) }

// beat renews this instance and reaps the lapsed ones; false when the
// renewal failed.
func (m *Member) beat(ctx context.Context) bool {
	log := m.cfg.Log
	renewed, renewErr := m.cfg.Registry.HeartbeatInstance(ctx, m.self())
	switch {
	case renewErr != nil && !leaving(ctx):
		log.Warn("fleet: heartbeat", "err", renewErr)
	case renewErr == nil && !renewed:
		// Redis was unreachable for longer than the TTL, or a slow heartbeat
		// came too late: others may already have reaped this instance.
		log.Warn("fleet: this instance's registration had lapsed; registered again", "instance", m.cfg.Self.ID)
	}
	reaped, err := m.cfg.Registry.ReapInstances(ctx)
	if err != nil && !leaving(ctx) {
		log.Warn("fleet: reaping lapsed instances", "err", err)
	}
	for _, id := range reaped {
		log.Info("fleet: an instance's registration lapsed; released what it held", "instance", id)
	}
	return renewErr == nil
}

// Leave stops the heartbeat and removes the registration at once, within
// ctx. Later calls do nothing and return nil.
func (m *Member) Leave(ctx context.Context) error {
	var err error
	m.leave.Do(func() {
		close(m.stop)
		<-m.done
		err = m.cfg.Registry.DeregisterInstance(ctx, m.cfg.Self.ID)
	})
	return err
}

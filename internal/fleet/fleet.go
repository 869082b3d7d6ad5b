// Package fleet is the registry of running realsyncd instances. Each
// instance registers itself with a heartbeat (its id, address, version,
// start time and open streams) that lapses unless renewed; the live
// registrations can be listed, and a lapsed one (the instance died or lost
// Redis) is reaped, releasing what that instance held. fleet knows nothing
// of Redis or HTTP: the store implements Registry.
package fleet

import (
	"context"
	"time"
)

// Instance is one registered instance.
type Instance struct {
	// ID is the instance's name: the hub's (sse.Hub.Instance), which also
	// starts its streams' presence lease names and is the value of the
	// janitor leases it holds.
	ID string
	// Addr is the host:port the instance is reached at.
	Addr string
	// Version is the build's version (module version or VCS revision).
	Version string
	// StartedAt is when the instance started (its own clock).
	StartedAt time.Time
	// HeartbeatAt is when the registry last heard from it (the registry's
	// clock); set by the registry.
	HeartbeatAt time.Time
	// Streams is the number of open room and lobby event streams at the
	// last heartbeat.
	Streams int
	// Settings is a digest of the settings every instance must share (the
	// matchmaking rules as read, the modes and regions allowed, the party
	// consent): instances whose digests differ match and check alike
	// tickets differently; "" from a release that reports none.
	Settings string
}

// Registry records the live instances. Registrations last a TTL of the
// registry's own (the presence TTL), measured on the registry's clock.
type Registry interface {
	// HeartbeatInstance registers self, or renews its registration, for
	// one TTL; renewed reports whether it was still registered (false the
	// first time, and after a lapse). self.HeartbeatAt is ignored.
	HeartbeatInstance(ctx context.Context, self Instance) (renewed bool, err error)
	// DeregisterInstance removes id's registration at once and releases
	// what it held.
	DeregisterInstance(ctx context.Context, id string) error
	// ReapInstances removes the registrations that lapsed, releases what
	// those instances held, and returns their ids. Safe to run on every
	// instance at once: each lapsed id is reaped once.
	ReapInstances(ctx context.Context) ([]string, error)
	// Instances returns the live registrations, sorted by StartedAt (then
	// ID), reaping the lapsed ones first.
	Instances(ctx context.Context) ([]Instance, error)
}

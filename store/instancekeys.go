package store

// The instance registry's keys share one hash tag of their own,
// "{<prefix>:instances}", so one script registers, renews or reaps an
// instance atomically on a Cluster too (apart from the room shards).

func (k keys) instancesTag() string { return "{" + k.prefix + ":instances}" }

// liveInstances is the registry's sorted set: instance id → expiry of its
// registration (ms, Redis clock).
func (k keys) liveInstances() string { return k.instancesTag() + ":live" }

// instance is the hash of one registered instance (see
// lua/instance_heartbeat.lua for its fields).
func (k keys) instance(id string) string { return k.instancesTag() + ":i:" + id }

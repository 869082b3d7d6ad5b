// Package redisx is the Redis plumbing every store package shares: the
// client and key layout (Base), scripts and their typed descriptors
// (Script, Call), the runner that sends them (Runner: FCALL of a Functions
// library where loaded, else EVALSHA, EVAL on NOSCRIPT), and the one
// translation of Redis failures into the domain's (Wrap: a transport
// failure is rooms.ErrUnavailable, 503).
//
// A concept lives in its own package under store/ (store/idempotency is
// the smallest example): its Lua in its own lua/ folder, embedded and
// declared with Plain; one descriptor per script (a struct of named keys
// and arguments whose KeysArgs lays them out in the order the Lua header
// documents), checked against the Lua by scripttest.CheckCalls; its keys
// built from Base.Tag of the shard whose slot holds them (UserShard for a
// user's own keys), so every script touches one hash slot; its type made
// by New(b *redisx.Base), which cmd/ wires with the root store's Base.
package redisx

package redisx

import (
	"context"
	"slices"
	"strconv"
)

// RenewBatch is the most leases one renewal script extends: a script
// blocks Redis while it runs, and 10 000 leases in one would hold every
// other client (and the events they publish) for tens of milliseconds.
const RenewBatch = 256

// RenewCall is a lease renewal script's descriptor (presence_renew,
// userstreams_renew): KEYS[i] holds member ARGV[i+1], extended by TTLMs
// (ARGV[1]); the script answers the 1-based positions of the members whose
// lease was lost.
type RenewCall struct {
	Sc      *Script
	Keys    []string
	Members []string
	TTLMs   int64
}

func (c RenewCall) Script() *Script { return c.Sc }
func (c RenewCall) KeysArgs() ([]string, []any) {
	args := make([]any, 0, 1+len(c.Members))
	args = append(args, c.TTLMs)
	for _, m := range c.Members {
		args = append(args, m)
	}
	return c.Keys, args
}

// RenewByUser renews leases held in their users' slots: one script (call
// builds it) per user shard and RenewBatch items, all sent in one pipeline
// (users' keys lie in other slots than rooms'; renewing twice is harmless,
// so RunAll may send it again after a node lacked a script). Each script answers the 1-based
// positions in its batch of the items whose lease was lost; RenewByUser
// returns those items, and the first error when a script failed (the other
// scripts' answers still count).
func RenewByUser[T any](ctx context.Context, b *Base, items []T, user func(T) string, call func(shard int, batch []T) Call) ([]T, error) {
	byShard := map[int][]T{}
	for _, it := range items {
		sh := b.UserShard(user(it))
		byShard[sh] = append(byShard[sh], it)
	}
	var calls []Call
	var batches [][]T
	for sh, all := range byShard {
		for batch := range slices.Chunk(all, RenewBatch) {
			calls, batches = append(calls, call(sh, batch)), append(batches, batch)
		}
	}
	cmds, runErr := b.Runner.RunAll(ctx, calls) // each command holds its error
	var lost []T
	var first error
	for i, cmd := range cmds {
		res, err := cmd.Result()
		if err != nil {
			if first == nil {
				first = Wrap(err)
			}
			continue
		}
		for _, j := range res.([]any) {
			lost = append(lost, batches[i][Int(j)-1])
		}
	}
	if first != nil && runErr != nil {
		// the run's own: a script load that failed (its commands hold
		// only the NOSCRIPT that asked for it), or the pipeline's
		first = Wrap(runErr)
	}
	return lost, first
}

// Int reads an integer reply, or a string holding one (HGET in Lua); 0
// for anything else.
func Int(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

package tickets

import (
	"strconv"
	"time"

	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/store/internal/redisx"
)

// The descriptors of lua/: each lays its script's KEYS and ARGV out in the
// order its header lists them.

// userCall is ticket_user.lua.
type userCall struct {
	key, op, id, replace string
	ms                   int64
}

func (userCall) Script() *redisx.Script { return userScript }
func (c userCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.op, c.id, c.replace, c.ms}
}

// createCall is ticket_create.lua.
type createCall struct {
	tickets, schedule, queue, modes string
	id, record, group, mode         string
	rating                          float64
	ms, grace                       int64
	maxQueue                        int
}

func (createCall) Script() *redisx.Script { return createScript }
func (c createCall) KeysArgs() ([]string, []any) {
	return []string{c.tickets, c.schedule, c.queue, c.modes}, []any{c.id, c.record, c.group, c.rating, c.ms, c.maxQueue,
		c.mode, c.grace}
}

// cancelCall is ticket_cancel.lua.
type cancelCall struct {
	tickets, schedule, queue, id string
	grace                        int64
}

func (cancelCall) Script() *redisx.Script { return cancelScript }
func (c cancelCall) KeysArgs() ([]string, []any) {
	return []string{c.tickets, c.schedule, c.queue}, []any{c.id, c.grace}
}

// passCall is ticket_pass.lua.
type passCall struct {
	tickets, schedule, queue, pending string
	backfill                          string
	r                                 matchmaking.Rules
	grace                             int64
	walk, sweep                       int
	prefix, mode                      string
	now                               string // "": Redis's clock
	from                              string // where the walk starts
	budget                            matchmaking.PassBudget
}

func (passCall) Script() *redisx.Script { return passScript }
func (c passCall) KeysArgs() ([]string, []any) {
	w := c.r.Window
	teamCap := c.r.TeamSize
	if teamCap == 0 {
		teamCap = c.r.MaxPlayers
	}
	backfill := ""
	if c.r.Backfill {
		backfill = strconv.FormatInt(backfillTTL.Milliseconds(), 10)
	}
	return []string{c.tickets, c.schedule, c.queue, c.pending, c.backfill}, []any{c.r.Teams, teamCap, c.r.Size(), c.r.Needed(),
		w.Start, w.Step, time.Duration(w.Every).Milliseconds(), w.Max, time.Duration(c.r.RegionFallback).Milliseconds(),
		c.grace, c.walk, c.prefix, c.mode, c.sweep, c.now, backfill, c.from, MaxBarred,
		c.budget.Try, c.budget.Work}
}

// MaxBarred is the most rooms a ticket is barred from (a ticket's "nb",
// the rooms that refused its users): a ticket with so many is backfilled
// no more, only matched anew, so the list never grows past it.
const MaxBarred = 16

// assignCall is ticket_assign.lua.
type assignCall struct {
	tickets, pending, match, room string
	until                         int64 // ms, 0: not known
	ids                           []string
}

func (assignCall) Script() *redisx.Script { return assignScript }
func (c assignCall) KeysArgs() ([]string, []any) {
	args := []any{c.match, c.room, max(c.until, 0)}
	for _, id := range c.ids {
		args = append(args, id)
	}
	return []string{c.tickets, c.pending}, args
}

// commitCall is ticket_commit.lua.
type commitCall struct {
	pending, match, room string
	ids                  []string
}

func (commitCall) Script() *redisx.Script { return commitScript }
func (c commitCall) KeysArgs() ([]string, []any) {
	args := []any{c.match, c.room}
	for _, id := range c.ids {
		args = append(args, id)
	}
	return []string{c.pending}, args
}

// syncedCall is match_synced.lua.
type syncedCall struct {
	key, room string
	ttl       time.Duration
	check     bool // the room must be there
}

func (syncedCall) Script() *redisx.Script { return syncedScript }
func (c syncedCall) KeysArgs() ([]string, []any) {
	check := "0"
	if c.check {
		check = "1"
	}
	return []string{c.key, c.room}, []any{c.ttl.Milliseconds(), check}
}

// forgetCall is modes_forget.lua.
type forgetCall struct {
	key, mode string
}

func (forgetCall) Script() *redisx.Script { return forgetScript }
func (c forgetCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.mode}
}

// leaseCall is matcher_lease.lua.
type leaseCall struct {
	key, op, holder string
	ms              int64
}

func (leaseCall) Script() *redisx.Script { return leaseScript }
func (c leaseCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.op, c.holder, c.ms}
}

// requeueCall is ticket_requeue.lua.
type requeueCall struct {
	tickets, schedule, queue, pending, backfill string
	match, room                                 string
	grace                                       int64
	barred                                      int // the first barred of ids are barred from room
	ids                                         []string
}

func (requeueCall) Script() *redisx.Script { return requeueScript }
func (c requeueCall) KeysArgs() ([]string, []any) {
	args := []any{c.match, c.room, c.grace, c.barred, MaxBarred}
	for _, id := range c.ids {
		args = append(args, id)
	}
	return []string{c.tickets, c.schedule, c.queue, c.pending, c.backfill}, args
}

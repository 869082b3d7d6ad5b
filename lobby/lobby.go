// Package lobby lists public rooms: filters, sort orders and cursors that
// never repeat or skip a room that stays in the result set. It knows
// nothing of HTTP or Redis; the Index does the reading.
package lobby

import (
	"context"

	"github.com/realsync/realsync/rooms"
)

// Sort is a listing order.
type Sort string

// Newest lists by createdAt descending, Oldest ascending; Fill (joinable
// rooms only) by playerCount descending, then oldest first.
const (
	Newest Sort = "newest"
	Oldest Sort = "oldest"
	Fill   Sort = "fill"
)

// Listing limits. With attribute filters a request reads at most
// ScanBudget index entries from Redis (each at most once) and the rooms of
// at most as many; past it the page comes back short, with a cursor to
// continue. A listing that merges more than ScanBudget/2 indexes (shards ×
// statuses) reads at least one entry of each, up to two.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	ScanBudget   = 1000
)

// Position is a room's place in a sort order: its index score (createdAt
// in µs, unique within a shard) and its id to break ties across shards;
// with Fill, Key is its fill index entry, compared as a string.
type Position struct {
	Score int64
	ID    string
	Key   string
}

// Query is a validated listing request.
type Query struct {
	Statuses []rooms.Status
	Joinable bool   // only waiting, unlocked, not-full rooms (Statuses is waiting)
	Mode     string // "" for any
	Region   string // "" for any
	Sort     Sort
	Limit    int
	After    *Position // resume strictly after this position
	// Attrs keep only rooms whose attributes match every filter.
	Attrs []rooms.AttrFilter
}

// Result is one page read from the index.
type Result struct {
	// Rooms are the page's rooms still public and matching, without players.
	Rooms []rooms.Room
	// Last is the position of the page's last index entry (even if its room
	// vanished meanwhile); the next page starts after it.
	Last Position
	// More reports whether entries follow Last.
	More bool
}

// Index reads public rooms in sort order.
type Index interface {
	// List returns up to q.Limit rooms after q.After in q.Sort order, merged
	// across shards, reading O(shards × statuses × Limit) index entries;
	// with attribute filters (q.Attrs), at most ScanBudget.
	List(ctx context.Context, q Query) (Result, error)
	// Stats returns the counts, reading O(shards) small hashes.
	Stats(ctx context.Context) (Stats, error)
}

// Stats are live counts over every room, public or private.
type Stats struct {
	Rooms   map[rooms.Status]int
	Players int
	// Modes and Regions count waiting and playing rooms.
	Modes   map[string]map[rooms.Status]int
	Regions map[string]map[rooms.Status]int
}

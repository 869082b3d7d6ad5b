package rooms

import (
	"context"
	"errors"
)

// ErrNoMatch: quick-join found no room to join and was not asked to create
// one.
var ErrNoMatch = errors.New("no joinable room matches")

// MaxQuickJoinRegions bounds the regions a quick-join tries.
const MaxQuickJoinRegions = 10

// QuickJoinParams is a quick-join request as the client sent it.
type QuickJoinParams struct {
	Mode    string   `json:"mode" validate:"slug"`
	Regions []string `json:"regions" validate:"omitnil,min=1,max=10,unique,dive,slug"`
	// Create, when given, is the room to create in Regions[0] when nothing
	// can be joined.
	Create *QuickCreate `json:"create"`
}

// QuickCreate is the room quick-join creates: a create request without
// mode and region (they come from the quick-join), visibility (public) and
// state.
type QuickCreate struct {
	Name        string         `json:"name" validate:"min=1,max=64,nocontrol"`
	MaxPlayers  *int           `json:"maxPlayers" validate:"omitnil,min=1,max=100"`
	Attributes  map[string]any `json:"attributes" validate:"max=16,dive,keys,attrkey,endkeys,attrvalue"`
	StatePolicy *StatePolicy   `json:"statePolicy" validate:"omitnil,oneof=owner open"`
}

// QuickJoined is the answer to a quick-join.
type QuickJoined struct {
	Joined
	Created bool
}

// Matchmaker joins the best room of a bucket atomically.
type Matchmaker interface {
	// QuickJoin returns a room of mode in one of regions (all regions when
	// empty) that u is already in, else joins the best joinable public room
	// (regions in order; fullest, then oldest), else creates create (when
	// not nil) in regions[0], never while a joinable room of that mode and
	// region exists. ErrNoMatch when there is nothing to join or create.
	QuickJoin(ctx context.Context, u User, mode string, regions []string, create *NewRoom) (QuickJoined, error)
}

// QuickJoin validates p and quick-joins on behalf of u.
func (s *Service) QuickJoin(ctx context.Context, u User, p QuickJoinParams) (QuickJoined, error) {
	errs := structErrors(s.validate, p)
	if p.Create != nil && len(p.Regions) == 0 {
		errs.add("regions", "is required with create (the room is created in regions[0])")
	}
	if err := errs.err(); err != nil {
		return QuickJoined{}, err
	}
	var create *NewRoom
	if c := p.Create; c != nil {
		r := newRoom(CreateParams{Name: c.Name, Mode: p.Mode, Region: p.Regions[0], MaxPlayers: c.MaxPlayers,
			Attributes: c.Attributes, StatePolicy: c.StatePolicy}, State{})
		create = &r
	}
	q, err := s.store.QuickJoin(ctx, u, p.Mode, p.Regions, create)
	q.Room = ViewFor(q.Room, u)
	return q, err
}

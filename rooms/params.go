package rooms

import (
	"bytes"
	"encoding/json"
)

// CreateParams is a create request as the client sent it; nil means
// absent. Create folds its Name (foldName) before checking it.
type CreateParams struct {
	Name        string         `json:"name" validate:"min=1,max=64,name,shows"`
	Mode        string         `json:"mode" validate:"slug"`
	Region      string         `json:"region" validate:"slug"`
	MaxPlayers  *int           `json:"maxPlayers" validate:"omitnil,seats"`
	Visibility  *Visibility    `json:"visibility" validate:"omitnil,oneof=public private"`
	Attributes  map[string]any `json:"attributes" validate:"max=16,dive,keys,attrkey,endkeys,attrvalue,attrtext"`
	State       State          `json:"state"`
	StatePolicy *StatePolicy   `json:"statePolicy" validate:"omitnil,oneof=owner open"`
	// Key is the create's Idempotency-Key, if any (not of the body: the
	// API sets it): see NewRoom.Key.
	Key string `json:"-"`
}

// NewRoom is a validated create request with its defaults applied and its
// state values compacted.
type NewRoom struct {
	Name        string
	Mode        string
	Region      string
	MaxPlayers  int
	Visibility  Visibility
	Attributes  map[string]any
	State       State
	StatePolicy StatePolicy
	// Key is the create's Idempotency-Key, if any. The room's id derives
	// from it, the creator and the rest of the create, so the same create
	// run again under the key after its first run's answer was lost (its
	// instance died and the key's claim lapsed, or Redis did not answer in
	// time: 503) answers the room the first run made while the creator is
	// in it, instead of making a second; once the creator left it, or it
	// closed, the run makes a new room. Another body under the key is
	// another room.
	Key string `json:"-"`
}

// UpdateParams are the owner's changes to a room; nil means unchanged.
// Attributes, when present, replaces the whole map. Update folds Name
// (foldName) before checking it and hands the store the folded name.
type UpdateParams struct {
	Name       *string         `json:"name" validate:"omitnil,min=1,max=64,name,shows"`
	Status     *Status         `json:"status" validate:"omitnil,oneof=waiting playing finished"`
	Locked     *bool           `json:"locked"`
	MaxPlayers *int            `json:"maxPlayers" validate:"omitnil,seats"`
	Visibility *Visibility     `json:"visibility" validate:"omitnil,oneof=public private"`
	Attributes *map[string]any `json:"attributes" validate:"omitnil,max=16,dive,keys,attrkey,endkeys,attrvalue,attrtext"`
}

// Empty reports whether the update changes nothing.
func (p UpdateParams) Empty() bool {
	return p.Name == nil && p.Status == nil && p.Locked == nil && p.MaxPlayers == nil &&
		p.Visibility == nil && p.Attributes == nil
}

// StatePatch is a validated merge patch: Set holds compacted values to write,
// Del the keys to delete, IfMatch the expected stateVersion or -1. Set and
// Del are disjoint and Del repeats no key (statePatch builds both from one
// map): the store counts the state's keys and bytes from them.
type StatePatch struct {
	Set     State
	Del     []string
	IfMatch int64
}

// Empty reports whether the patch neither sets nor deletes.
func (p StatePatch) Empty() bool { return len(p.Set) == 0 && len(p.Del) == 0 }

// compact rewrites every value of s as one-line JSON, so that events built
// from it stay one line and sizes count the same bytes everywhere.
func compact(s State) (State, error) {
	out := make(State, len(s))
	for k, v := range s {
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, err
		}
		out[k] = buf.Bytes()
	}
	return out, nil
}

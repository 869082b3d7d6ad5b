package eventschema

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// Checker validates event payloads against openapi.yaml's event schemas
// (with the schemas they refer to: Room, State, ...), so a payload that
// passes is one every SDK generated from the spec can read.
type Checker struct {
	room, lobby, user *openapi3.Schema
}

// NewChecker loads the spec (the bytes of openapi.yaml).
func NewChecker(spec []byte) (*Checker, error) {
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("eventschema: loading the spec: %w", err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("eventschema: the spec: %w", err)
	}
	c := &Checker{}
	for name, dst := range map[string]**openapi3.Schema{RoomUnion: &c.room, LobbyUnion: &c.lobby, UserUnion: &c.user} {
		ref := doc.Components.Schemas[name]
		if ref == nil || ref.Value == nil {
			return nil, fmt.Errorf("eventschema: the spec has no schema %s", name)
		}
		*dst = ref.Value
	}
	return c, nil
}

// Room checks the data of a room stream's event.
func (c *Checker) Room(data []byte) error { return visit(c.room, data) }

// Lobby checks the data of a lobby stream's event.
func (c *Checker) Lobby(data []byte) error { return visit(c.lobby, data) }

// User checks the data of a personal stream's event.
func (c *Checker) User(data []byte) error { return visit(c.user, data) }

func visit(s *openapi3.Schema, data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.VisitJSON(v, openapi3.MultiErrors())
}

// Type is the "type" of an event's data ("" when it has none).
func Type(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	json.Unmarshal(data, &e)
	return e.Type
}

// Fields returns, for each event type of a stream (RoomUnion or
// LobbyUnion) in the spec, the JSON names of its data's fields; a field
// whose schema is an object of named properties (player, message,
// changes) also lists them as "<field>.<name>". For checking hand-written
// SDK event types against the contract.
func Fields(spec []byte, union string) (map[string]map[string]bool, error) {
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		return nil, err
	}
	u := doc.Components.Schemas[union]
	if u == nil || u.Value == nil || u.Value.Discriminator == nil {
		return nil, fmt.Errorf("eventschema: the spec has no union %s", union)
	}
	out := map[string]map[string]bool{}
	for typ, ref := range u.Value.Discriminator.Mapping {
		name := ref.Ref[len("#/components/schemas/"):]
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			return nil, fmt.Errorf("eventschema: %s: no schema %s", union, name)
		}
		f := map[string]bool{}
		for p, ps := range s.Value.Properties {
			f[p] = true
			if ps.Ref != "" && ps.Value != nil && len(ps.Value.Properties) > 0 && ps.Value.AdditionalProperties.Has != nil && !*ps.Value.AdditionalProperties.Has {
				for q := range ps.Value.Properties {
					f[p+"."+q] = true
				}
			}
		}
		out[typ] = f
	}
	return out, nil
}

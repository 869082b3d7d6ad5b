package api_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/rooms"
)

// The spec states the limits the domain enforces, each from its one
// source (rooms' constants): every maxPlayers property has maximum
// rooms.MaxPlayersLimit and minimum 1, and a message's recipients at most
// rooms.MaxRecipients.
func TestSpecStatesTheDomainLimits(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(realsync.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	var walk func(where string, s *openapi3.Schema)
	walk = func(where string, s *openapi3.Schema) {
		for name, p := range s.Properties {
			if p.Value == nil {
				continue
			}
			if name == "maxPlayers" && p.Ref == "" && where != "RoomChanges" {
				seen++
				if p.Value.Max == nil || *p.Value.Max != rooms.MaxPlayersLimit || p.Value.Min == nil || *p.Value.Min != 1 {
					t.Errorf("%s.maxPlayers: minimum %v maximum %v, want 1 and %d", where, p.Value.Min, p.Value.Max, rooms.MaxPlayersLimit)
				}
			}
			if p.Ref == "" {
				walk(where+"."+name, p.Value)
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s.Value)
	}
	if seen < 3 {
		t.Fatalf("found %d maxPlayers properties in the spec, want Room, CreateRoomRequest, UpdateRoomRequest, ...", seen)
	}
	to := doc.Components.Schemas["MessageRequest"].Value.Properties["to"].Value
	if to.MaxItems == nil || *to.MaxItems != rooms.MaxRecipients {
		t.Errorf("MessageRequest.to maxItems %v, want %d", to.MaxItems, rooms.MaxRecipients)
	}
}

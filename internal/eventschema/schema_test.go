package eventschema_test

import (
	"bytes"
	"testing"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/internal/eventschema"
)

// The spec's event schemas are the generator's output for today's types.
func TestSpecHoldsTheGeneratedSchemas(t *testing.T) {
	block, err := eventschema.Block()
	if err != nil {
		t.Fatal(err)
	}
	want, err := eventschema.Splice(realsync.OpenAPI, block)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, realsync.OpenAPI) {
		t.Fatal("openapi.yaml's event schemas differ from rooms/events.go and lobby/events.go: run go generate ./...")
	}
}

const room = `{"id":"r1","name":"Arena","mode":"battle","region":"eu","visibility":"public","status":"waiting","locked":false,` +
	`"maxPlayers":4,"playerCount":1,"reservedSeats":0,"ownerPlayerId":1,"attributes":{},"statePolicy":"owner","createdAt":"2026-11-23T18:00:00Z",` +
	`"updatedAt":"2026-11-23T18:00:00Z","version":3}`

const head = `"roomId":"r1","version":7,"ts":"2026-11-23T18:00:00.12Z"`

// user is the common part of a personal stream's logged event, with its sender.
const user = `"userId":"u1","seq":4,"ts":"2026-11-23T18:00:00.12Z","from":{"userId":"u2","name":"bo"}`

// The checker accepts every event of the contract and refuses what an SDK
// could not read: a table of both, so it is seen failing.
func TestChecker(t *testing.T) {
	c, err := eventschema.NewChecker(realsync.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data      string
		lobby, user, ok bool
	}{
		{"snapshot", `{"type":"snapshot",` + head + `,"room":` + room + `,"state":{"a":1},"stateVersion":2}`, false, false, true},
		{"state", `{"type":"state",` + head + `,"by":1,"set":{"a":[1]},"del":["b"],"stateVersion":3}`, false, false, true},
		{"joined", `{"type":"player_joined",` + head + `,"player":{"playerId":2,"name":"bo","joinedAt":"2026-11-23T18:00:00Z","connected":false}}`, false, false, true},
		{"left", `{"type":"player_left",` + head + `,"playerId":2,"reason":"kicked"}`, false, false, true},
		{"left, unknown reason", `{"type":"player_left",` + head + `,"playerId":2,"reason":"banned"}`, false, false, false},
		{"connected", `{"type":"player_connected",` + head + `,"playerId":2}`, false, false, true},
		{"connected, no playerId", `{"type":"player_connected",` + head + `}`, false, false, false},
		{"disconnected", `{"type":"player_disconnected",` + head + `,"playerId":2}`, false, false, true},
		{"updated", `{"type":"room_updated",` + head + `,"changes":{"status":"playing","inviteCode":null,"ownerPlayerId":2}}`, false, false, true},
		{"updated, unknown field", `{"type":"room_updated",` + head + `,"changes":{"colour":"red"}}`, false, false, false},
		{"updated, bad status", `{"type":"room_updated",` + head + `,"changes":{"status":"over"}}`, false, false, false},
		{"message", `{"type":"message",` + head + `,"message":{"from":0,"type":"chat","data":{"t":"hi"},"to":[2]}}`, false, false, true},
		{"message, no data", `{"type":"message",` + head + `,"message":{"from":0,"type":"chat"}}`, false, false, false},
		{"closed expired", `{"type":"room_closed",` + head + `,"reason":"expired"}`, false, false, true},
		{"closed gone", `{"type":"room_closed",` + head + `,"reason":"gone"}`, false, false, true},
		{"closed, extra field", `{"type":"room_closed",` + head + `,"reason":"empty","by":1}`, false, false, false},
		{"resumed", `{"type":"resumed",` + head + `}`, false, false, true},
		{"token_expiring", `{"type":"token_expiring","expiresAt":"2026-11-23T18:00:30Z"}`, false, false, true},
		{"unknown type", `{"type":"player_teleported",` + head + `}`, false, false, false},
		{"version as a string", `{"type":"resumed","roomId":"r1","version":"7","ts":"2026-11-23T18:00:00Z"}`, false, false, false},
		{"not JSON", `{"type":`, false, false, false},
		{"lobby rooms", `{"type":"rooms","rooms":[` + room + `]}`, true, false, true},
		{"lobby added", `{"type":"room_added","version":3,"room":` + room + `}`, true, false, true},
		{"lobby added, no room", `{"type":"room_added","version":3}`, true, false, false},
		{"lobby removed, whole", `{"type":"room_removed","version":3,"room":` + room + `}`, true, false, true},
		{"lobby removed, id only", `{"type":"room_removed","version":3,"room":{"id":"r1","version":3}}`, true, false, true},
		{"lobby removed, no id", `{"type":"room_removed","version":3,"room":{"version":3}}`, true, false, false},
		{"a room event on the lobby", `{"type":"resumed",` + head + `}`, true, false, false},
		{"direct message", `{"type":"message",` + user + `,"message":{"type":"chat","data":1}}`, false, true, true},
		{"direct message, keyed", `{"type":"message",` + user + `,"message":{"type":"chat","data":1},"messageId":"0123456789abcdef0123456789abcdef"}`, false, true, true},
		{"direct message, messageId not 32 hex digits", `{"type":"message",` + user + `,"message":{"type":"chat","data":1},"messageId":"0123456789ABCDEF0123456789abcdef"}`, false, true, false},
		{"invite, messageId too short", `{"type":"invite",` + user + `,"roomId":"r1","name":"n","mode":"m","region":"eu","messageId":"0123"}`, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := c.Room
			switch {
			case tc.lobby:
				check = c.Lobby
			case tc.user:
				check = c.User
			}
			err := check([]byte(tc.data))
			if (err == nil) != tc.ok {
				t.Fatalf("ok = %v, want %v (err: %v)", err == nil, tc.ok, err)
			}
		})
	}
}

package api_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// A plain HTTP/1.1 room stream opens within the bound of the openings an
// instance runs at once, and gives its place back once open, whether the
// hub took its connection over (a player's stream) or the stream stays
// with its handler (an API key's, whose revocation is watched per
// stream): one stream more than the bound opens, one after the other,
// while every earlier one stays open. A stream keeping its place would
// leave the last one waiting (openRaw gives up after 10 s).
func TestTakenOverOpeningsGiveTheirPlaceBack(t *testing.T) {
	e := newKeyEnv(t, redistest.Backends(t)[0], store.Quotas{})
	owner, _ := e.guest("owner")
	id := e.create(owner, map[string]any{"name": "r", "mode": "m", "region": "r", "maxPlayers": 100})["id"].(string)
	path := "/v1/rooms/" + id + "/events"
	// players enough for one stream more than the bound, 8 streams each
	// (a player's streams of one room are limited to 8)
	var players []string
	for i := range api.MaxStreamOpenings/8 + 1 {
		p, _ := e.guest(fmt.Sprint("p", i))
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", p, nil), 200, "")
		players = append(players, p)
	}
	opened := 0
	for _, tc := range []struct {
		name string
		open func() (*rawStream, int)
	}{
		{"taken over", func() (*rawStream, int) {
			opened++
			return e.openRaw(path + "?token=" + e.streamToken(players[(opened-1)/8], path))
		}},
		{"with its handler", func() (*rawStream, int) { return e.openRaw(path, "X-API-Key", e.read) }},
	} {
		for i := range api.MaxStreamOpenings + 1 { // openRaw fails the test itself past 10 s
			s, status := tc.open()
			if status != 200 {
				b, _ := io.ReadAll(s.rd)
				t.Fatalf("%s: stream %d: %d %s", tc.name, i, status, b)
			}
			t.Cleanup(func() { s.conn.Close() })
		}
	}
}

package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// Removing a key's line revokes it: REST calls at once after the reload,
// and the event streams opened with it before (a room's, taken over; a
// lobby's, carried) end within a second, with a token_expiring event, so a
// leaked key stops reading the room's events.
func TestRevokedAPIKeyStreamEnds(t *testing.T) {
	key, rec, err := api.NewAPIKey("leaked", rooms.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(rec.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := api.LoadAPIKeys(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvStore(t, redistestEmbedded, store.Quotas{}, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		func(c *api.Config, _ *store.Store, _ string) { c.APIKeys = keys })
	alice, _ := e.guest("alice")
	id := e.create(alice, map[string]any{"name": "Den", "mode": "battle", "region": "eu", "maxPlayers": 4, "visibility": "private"})["id"].(string)

	s := e.open("/v1/rooms/"+id+"/events", "X-API-Key", key)
	if f := s.next(); f.event != "snapshot" {
		t.Fatalf("first event %+v", f)
	}
	// a lobby stream, carried (its rest runs on its request's context as
	// net/http made it): the revocation ends it too
	lobby := e.open("/v1/lobby/events", "X-API-Key", key)
	if f := lobby.next(); f.event != "rooms" {
		t.Fatalf("the lobby's first event %+v", f)
	}

	// the key is revoked, a while after the streams opened
	time.Sleep(20 * time.Millisecond)
	revokedAt := time.Now().Truncate(time.Millisecond)
	if err := os.WriteFile(path, []byte("# no keys\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := keys.Reload(); err != nil || !changed {
		t.Fatalf("reload: %v %v", changed, err)
	}
	want(t, e.do("GET", "/v1/rooms/"+id, "", nil, "X-API-Key", key), 401, "UNAUTHENTICATED")

	// each stream ends within a second or two: its last event says the
	// credential expired, and nothing after it reaches the revoked key
	for _, st := range []*stream{s, lobby} {
		timer := time.AfterFunc(5*time.Second, st.close)
		var last, data string
		for {
			line, err := st.rd.ReadString('\n')
			if err != nil {
				break
			}
			if strings.HasPrefix(line, "event: ") {
				last, data = strings.TrimSpace(strings.TrimPrefix(line, "event: ")), ""
			}
			if strings.HasPrefix(line, "data: ") {
				data = strings.TrimPrefix(line, "data: ")
			}
		}
		if !timer.Stop() {
			t.Fatal("a revoked API key's stream was still open 5 s after the revocation")
		}
		if last != "token_expiring" {
			t.Fatalf("last event %q, want token_expiring", last)
		}
		// it says when the key was found revoked, not when the stream opened
		var ev struct{ ExpiresAt time.Time }
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.ExpiresAt.Before(revokedAt) || ev.ExpiresAt.After(time.Now()) {
			t.Fatalf("token_expiring %s (%v): expiresAt not between the revocation (%s) and now", data, err, revokedAt.Format(time.RFC3339Nano))
		}
	}
}

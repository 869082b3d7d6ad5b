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
// leaked key stops reading the room's events. So does a line that keeps
// the key's id with another key (replaced in place: `realsyncd apikey
// -id`) or fewer scopes: a security tester's find, the old key's streams
// read the room's events on, private messages included, as long as their
// client stayed. A line that adds a scope to the key leaves its streams.
func TestRevokedAPIKeyStreamEnds(t *testing.T) {
	for _, c := range []struct {
		name    string
		newLine func(t testing.TB, old api.APIKey) string // the keys file after
		ends    bool
	}{
		{"LineRemoved", func(testing.TB, api.APIKey) string { return "# no keys\n" }, true},
		{"ReplacedUnderItsID", func(t testing.TB, old api.APIKey) string {
			_, rec, err := api.NewAPIKey(old.ID, old.Scopes)
			if err != nil {
				t.Fatal(err)
			}
			return rec.Line() + "\n"
		}, true},
		{"ScopeTaken", func(_ testing.TB, old api.APIKey) string { old.Scopes = rooms.ScopeWrite; return old.Line() + "\n" }, true},
		{"ScopeAdded", func(_ testing.TB, old api.APIKey) string { old.Scopes |= rooms.ScopeWrite; return old.Line() + "\n" }, false},
	} {
		t.Run(c.name, func(t *testing.T) { revokeAPIKeyStreams(t, c.newLine, c.ends) })
	}
}

// revokeAPIKeyStreams opens a room's and the lobby's stream with a key,
// writes newLine(the key) as the keys file, and checks the streams end
// with token_expiring (ends) or stay open.
func revokeAPIKeyStreams(t *testing.T, newLine func(testing.TB, api.APIKey) string, ends bool) {
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
	if err := os.WriteFile(path, []byte(newLine(t, rec)), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := keys.Reload(); err != nil || !changed {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if !ends {
		for _, st := range []*stream{s, lobby} {
			timer := time.AfterFunc(3*time.Second, st.close) // three checks of the key
			for {
				line, err := st.rd.ReadString('\n')
				if err != nil {
					break
				}
				if strings.HasPrefix(line, "event: token_expiring") {
					t.Fatal("a stream of a key still in force ended")
				}
			}
			if timer.Stop() { // it ended before the test closed it
				t.Fatal("a stream of a key still in force ended")
			}
		}
		return
	}
	if now, _ := api.ParseAPIKeys([]byte(newLine(t, rec))); len(now) == 0 || now[0].Hash != rec.Hash {
		want(t, e.do("GET", "/v1/rooms/"+id, "", nil, "X-API-Key", key), 401, "UNAUTHENTICATED")
	}

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

package webhooks_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/internal/webhook"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/webhooks"
)

// twoInstances opens two root stores on backend b with cfg (one on the
// embedded backend: a store of its own per Open), sharing a key prefix.
func twoInstances(t *testing.T, b redistest.Backend, cfg store.Config) (*store.Store, *store.Store) {
	t.Helper()
	prefix := redistest.Prefix(t)
	mut := func(c *store.Config) {
		*c = cfg
		c.RedisURL, c.ClusterAddrs, c.Prefix, c.Shards, c.Batch = b.URL, b.ClusterAddrs, prefix, 8, &store.Batching{}
	}
	s1 := openStoreWith(t, b, mut)
	if b.Name == "embedded" {
		return s1, s1
	}
	return s1, openStoreWith(t, b, mut)
}

// statusHook is a user status event as a webhook endpoint receives it.
type statusHook struct {
	Type      string   `json:"type"`
	UserID    string   `json:"userId"`
	Online    bool     `json:"online"`
	Platforms []string `json:"platforms"`
	Version   int64    `json:"version"`
	TS        string   `json:"ts"`
}

// A user's online status changes enter the webhook outbox of the user's
// shard in the scripts that change it, exactly when they are published:
// user_online when the first session opens, user_platforms_changed when
// the platforms change while online (a replacement on the same platform
// is no change), user_offline when the last session closes or lapses (the
// janitor's sweep). Delivered once each (in any order: the version orders
// them), with the platforms of the status, through the same dispatcher as
// room events.
func TestWebhooksStatusEvents(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		// 3 s: the sessions below are never renewed, and each step
		// must come before they lapse, however slow the machine
		const ttl = 3 * time.Second
		s1, s2 := twoInstances(t, b, store.Config{PresenceTTL: ttl, SessionPolicy: players.PolicyReplace, WebhookOutboxLen: 1000})
		rec := &hookRecorder{down: map[string]bool{}}
		d, err := webhooks.New(s1.Base(), webhooks.Config{Endpoints: []webhooks.Endpoint{
			{ID: "status", Events: []string{"user_online", "user_offline", "user_platforms_changed"}},
			{ID: "rooms", Events: []string{"player_joined"}}},
			Consumer: "c1", Send: rec.send})
		if err != nil {
			t.Fatal(err)
		}
		uid := "u-\"quoted\"-" + redistest.Prefix(t) // encoded by the script, not pasted
		pc := sse.Session{UserID: uid, Platform: "pc", ID: "a.1"}
		mobile := sse.Session{UserID: uid, Platform: "mobile", ID: "b.1"}
		pc2 := sse.Session{UserID: uid, Platform: "pc", ID: "b.2"}
		for _, step := range []func() error{
			func() error { _, err := s1.Sessions().OpenSession(ctx, pc, sse.Cursor{}, 100); return err },
			func() error { _, err := s2.Sessions().OpenSession(ctx, mobile, sse.Cursor{}, 100); return err },
			func() error { _, err := s2.Sessions().OpenSession(ctx, pc2, sse.Cursor{}, 100); return err }, // replaces pc
			func() error { return s1.Sessions().CloseSession(ctx, pc) },                                   // replaced already
			func() error { return s2.Sessions().CloseSession(ctx, mobile) },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		// pc2 is never renewed: it lapses, and the sweep takes the user offline
		wait.Until(t, "the lapsed session swept", func() bool {
			for shard := range 8 {
				if _, err := s1.Sweep(ctx, shard, "test", time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := s1.Sessions().Statuses(ctx, []string{uid})
			return !got[0].Online
		})
		drain(t, d)
		if got := rec.of("rooms"); len(got) != 0 {
			t.Fatalf("the rooms endpoint got %d status events", len(got))
		}
		tries := rec.of("status")
		var evs []statusHook
		shard := redisx.UserShard(uid, 8)
		for _, w := range tries {
			var ev statusHook
			if err := json.Unmarshal(w.Event, &ev); err != nil {
				t.Fatalf("event %s: %v", w.Event, err)
			}
			if ev.Type != w.Type || ev.UserID != uid || w.RetryCount != 0 ||
				!strings.HasPrefix(w.MessageID, "msg_"+strconv.Itoa(shard)+"_") {
				t.Fatalf("delivery %+v of event %+v (user shard %d)", w, ev, shard)
			}
			if _, err := time.Parse(time.RFC3339Nano, ev.TS); err != nil {
				t.Fatalf("ts %q: %v", ev.TS, err)
			}
			if _, err := webhook.Payload(webhook.Delivery(w)); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		// sent by concurrent workers, so in any order: the version
		// orders them (as a receiver does)
		slices.SortFunc(evs, func(a, b statusHook) int { return int(a.Version - b.Version) })
		type step struct {
			typ       string
			online    bool
			platforms []string
		}
		want := []step{{"user_online", true, []string{"pc"}}, {"user_platforms_changed", true, []string{"pc", "mobile"}},
			{"user_platforms_changed", true, []string{"pc"}}, {"user_offline", false, []string{}}}
		if len(evs) != len(want) {
			t.Fatalf("%d status events %+v, want %d", len(evs), evs, len(want))
		}
		for i, w := range want {
			e := evs[i]
			if e.Type != w.typ || e.Online != w.online || !slices.Equal(e.Platforms, w.platforms) || e.Platforms == nil {
				t.Fatalf("event %d: %+v, want %+v", i, e, w)
			}
			if i > 0 && e.Version == evs[i-1].Version {
				t.Fatalf("version %d twice", e.Version)
			}
		}
		if o, dl, r, dead := webhookKeys(t, s1, s1.Base().Prefix, 8); o+dl+r+dead != 0 {
			t.Fatalf("webhook keys left: outbox %d, deliveries %d, retries %d, dead %d", o, dl, r, dead)
		}
	})
}

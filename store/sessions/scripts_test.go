package sessions

import (
	"embed"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
	"github.com/realsync/realsync/store/userlog"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read, with webhooks on (the
// outbox key and its MAXLEN) and a stream cap. (The sessions' behaviour
// against Redis is tested through the root store, which wires them:
// store/sessions_test.go, store/userstreams_test.go.)
func TestScriptCallsMatchTheirLua(t *testing.T) {
	s := testSessions(10)
	ss := sse.Session{UserID: "u1", Platform: "pc", ID: "s1"}
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		sessionOpenCall{x: s, s: ss, cursor: sse.Cursor{Set: true, Version: 1, Tag: "t"}, limit: 10, offline: 10, now: time.Now(), newTag: "t"},
		sessionCloseCall{x: s, user: "u1", member: "pc/s1", now: time.Now()},
		sessionRenewCall{x: s, shard: 1, ss: []sse.Session{ss}},
		sessionsSweepCall{x: s, shard: 1, users: []string{"u1", "u2"}, now: time.Now()},
		followingSetCall{x: s, user: "u1", ids: []string{"u2"}},
		statusesLapsedCall{key: "k", users: []string{"u1", "u2"}},
		streamTakeCall{key: "k", member: "r/a", limit: 3, ttlMs: 1000},
		streamDropCall{key: "k", member: "r/a"},
		partyMembersAddCall{key: "k", user: "u1", exp: 2000, now: 1000, ttl: time.Second},
		partyMembersDropCall{key: "k", user: "u1", exp: 2000},
		partySetCall{key: "k", leader: "u2", exp: 2000, ttl: time.Second},
		partyLeaveCall{key: "k"},
		redisx.RenewCall{Sc: userStreamsRenew, Keys: []string{"k"}, Members: []string{"r/a"}, TTLMs: 1000},
	}, scripttest.Prelude{Src: prelude(), Runs: func(sc *redisx.Script) bool {
		return sc.Name == "session_open" || sc.Name == "session_close" || sc.Name == "sessions_sweep"
	}})
}

// Every key and channel of a user lies in the slot of the user's shard,
// so each script touches one slot; webhooks off, a script names no outbox.
func TestUserKeysShareTheUserSlot(t *testing.T) {
	for _, outboxLen := range []int{0, 10} {
		s := testSessions(outboxLen)
		for _, uid := range []string{"u1", "alice", "x.y"} {
			tag := s.b.Tag(s.b.UserShard(uid))
			shard := s.b.UserShard(uid)
			keys, _ := sessionOpenCall{x: s, s: sse.Session{UserID: uid, Platform: "pc", ID: "s"}}.KeysArgs()
			closing, _ := sessionCloseCall{x: s, user: uid}.KeysArgs()
			sweeping, _ := sessionsSweepCall{x: s, shard: shard, users: []string{uid}}.KeysArgs()
			keys = append(append(append(keys, closing...), sweeping...), s.StatusChannel(uid), s.StreamsKey(uid), s.OnlineKey(shard))
			if want := 9 + 4 + 3 + 3; outboxLen > 0 {
				want += 3
				if len(keys) != want {
					t.Errorf("outbox %d: %d keys, want %d", outboxLen, len(keys), want)
				}
			} else if len(keys) != want {
				t.Errorf("webhooks off: %d keys, want %d", len(keys), want)
			}
			for _, k := range keys {
				if !strings.HasPrefix(k, tag) {
					t.Errorf("%q of user %s is not in its slot %s", k, uid, tag)
				}
			}
		}
	}
}

func testSessions(outboxLen int) *Sessions {
	b := &redisx.Base{Prefix: "t", Shards: 4, PubCmd: "PUBLISH"}
	return New(Config{Base: b, Logs: userlog.New(b, userlog.Config{}, func() string { return "t" }), TTL: time.Second,
		Policy: "replace", StreamsPerUser: 3, OutboxLen: outboxLen, Outbox: func(shard int) string { return b.Tag(shard) + ":webhooks" }})
}

package store

import (
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// every use of KEYS or ARGV in a script, and the literal indexes among
// them ("ARGV[9]"); any other use ("ARGV[2 * i]", "#ARGV", "ipairs(ARGV)")
// computes its index.
var (
	anyUse       = regexp.MustCompile(`\b(KEYS|ARGV)\b(\[\d+\])?`)
	literalIndex = regexp.MustCompile(`^(KEYS|ARGV)\[(\d+)\]$`)
)

// TestScriptCallsMatchTheirLua holds every descriptor to the Lua it runs:
// each script of store/lua has exactly one, and the KEYS and ARGV a
// descriptor lays out reach every index the script (with the prelude, for
// a mutation) reads by number — exactly, for a script that reads no index
// it computes. A descriptor that drops or adds an argument fails here,
// before any Redis.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	s := &Store{keys: keys{prefix: "t", held: true}, shards: 4, pubcmd: "PUBLISH", argv: [3]string{"100 1000", "60"}}
	id := newRoomID(1)
	scope, indexed := s.scope(1, id), s.indexedScope(1, id, "pool", "eu")
	nr := s.newRoom(rooms.User{ID: "u1", Name: "Ann"}, rooms.NewRoom{Name: "r", Mode: "pool", Region: "eu",
		Visibility: rooms.Public, MaxPlayers: 4, State: rooms.State{"a": []byte("1")}}, []byte("{}"), 3, "", false)
	calls := []scriptCall{
		createCall{indexed, nr},
		joinCall{indexed, "u1", `"Ann"`, ""},
		removeCall{indexed, "u1", "", "left", false},
		updateCall{indexed, "u1", roomChanges{name: "x", nameJSON: `"x"`}, "CODE"},
		deleteCall{indexed, "u1"},
		patchCall{scope, "u1", -1, rooms.State{"k": []byte("1")}, []string{"d"}},
		streamOpenCall{scope, "u1", "s1", 1000, "after", sse.Cursor{Set: true, Version: 3, Tag: "abc"}, 10},
		streamCloseCall{scope, 1, "s1", 1000, 0},
		sweepCall{indexed, 1000},
		reserveSeatsCall{indexed, "u1", 15000, []string{"u2", "u3"}},
		messageSendCall{scope, "u1", `"chat"`, []byte(`{}`), []int{2}},
		lifecycleCall{indexed, Lifecycle{IdleTimeout: time.Minute}},
		roomRepairCall{indexed},
		messageListCall{room: "r", users: "u", messages: "m", caller: "u1", end: "+", count: 10},
		renewCall{sc: presenceRenew, keys: []string{"p"}, members: []string{"s:1:a"}, ttlMs: 1000},
		renewCall{sc: userStreamsRenew, keys: []string{"p"}, members: []string{"r/a"}, ttlMs: 1000},
		reserveCall{key: "h", room: id, role: "o", owned: 1, joined: 2, ttlMs: 1000},
		releaseCall{"h", []heldChange{{id, "*", ""}}},
		rebindCall{"h", "qj:x", id, "m"},
		streamTakeCall{key: "k", member: "r/a", limit: 3, ttlMs: 1000},
		heartbeatCall{live: "l", hash: "h", in: fleet.Instance{ID: "i"}, ttlMs: 1000},
		reapCall{live: "l", batch: 10},
		webhookFanoutCall{outbox: "o", deliveries: "d", entry: "1-0", message: "msg_0_1-0", endpoints: []string{"a"}},
		webhookFailCall{deliveries: "d", retries: "r", dead: "x", entry: "1-0", dueMs: 1, maxAttempts: 3, deadMaxLen: 10, nowMs: 1, lastErr: "e"},
		webhookDueCall{retries: "r", deliveries: "d", nowMs: 1, limit: 10},
		webhookReplayCall{dead: "x", deliveries: "d", entry: "1-0"},
		leaseReleaseCall{lease: "j", ids: []string{"i"}},
		userRepairCall{index: "i", schedule: "s", entries: []userEntry{{"u1", id, "r"}}},
		codeRepairCall{codes: "c", schedule: "s", entries: []codeEntry{{"CODE", id, "r"}}},
		indexRepairCall{index: indexKey{key: "k", kind: "waiting"}, schedule: "s", entries: []string{id}, roomHashes: []string{"r"}},
		idempotencyCall{key: "k", op: "record", token: "t", ms: 1000, answer: idempotency.Answer{Status: 201, Body: []byte("{}")}},
		// players (issue 16): sessions.go
		sessionOpenCall{keys: s.keys, shard: 1, s: sse.Session{UserID: "u1", Platform: "pc", ID: "s1"}, policy: "replace",
			ttl: time.Second, pubcmd: "PUBLISH", cursor: sse.Cursor{Set: true, Version: 1, Tag: "t"}, limit: 10, newTag: "t"},
		sessionCloseCall{keys: s.keys, shard: 1, user: "u1", member: "pc/s1", pubcmd: "PUBLISH"},
		sessionRenewCall{keys: s.keys, shard: 1, ss: []sse.Session{{UserID: "u1", Platform: "pc", ID: "s1"}}, ttl: time.Second},
		followingSetCall{keys: s.keys, shard: 1, user: "u1", pubcmd: "PUBLISH"},
		quickJoinCall{keys: s.keys, shard: 1, mode: "pool", region: "eu", pubcmd: "PUBLISH", logArgs: s.argv,
			user: "u1", nameJSON: `"Ann"`, candidates: []string{id}, createID: id, create: nr},
	}
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range files {
		if name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua"); name != "prelude" {
			want[name] = true
		}
	}
	got := map[string]bool{}
	for _, c := range calls {
		sc := c.script()
		if got[sc.name] {
			t.Errorf("%s: two descriptors", sc.name)
		}
		got[sc.name] = true
		t.Run(sc.name, func(t *testing.T) {
			src, err := luaFiles.ReadFile("lua/" + sc.name + ".lua")
			if err != nil {
				t.Fatal(err)
			}
			code := stripComments(string(src))
			if sc.body != "" || sc.name == "quick_join" { // the prelude binds ARGV[1..6] and the room's keys
				code += stripComments(preludeLua)
			}
			keys, args := c.keysArgs()
			for _, kind := range []struct {
				name string
				n    int
			}{{"KEYS", len(keys)}, {"ARGV", len(args)}} {
				most, computed := 0, false
				for _, u := range anyUse.FindAllString(code, -1) {
					if !strings.HasPrefix(u, kind.name) {
						continue
					}
					m := literalIndex.FindStringSubmatch(u)
					if m == nil {
						computed = true
					} else if i, _ := strconv.Atoi(m[2]); i > most {
						most = i
					}
				}
				if kind.name == "KEYS" && (sc.body != "" || sc.name == "quick_join") {
					// the prelude names KEYS[33..36] for every mutation; a
					// script that moves no index gets the first 12 only
					computed, most = true, min(most, 12)
				}
				switch {
				case kind.n < most:
					t.Errorf("%s: %d laid out, the script reads %s[%d]", kind.name, kind.n, kind.name, most)
				case !computed && kind.n != most:
					t.Errorf("%s: %d laid out, the script reads %d", kind.name, kind.n, most)
				}
			}
		})
	}
	if !maps.Equal(want, got) {
		t.Errorf("scripts without a descriptor or descriptors without a script: lua/ has %v, descriptors %v",
			slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
	}
}

// stripComments drops Lua's line comments ("--" to the end of the line).
func stripComments(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

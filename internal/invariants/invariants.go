// Package invariants checks, by reading Redis directly, that every room
// and index under a key prefix is consistent. It re-reads the key schema
// documented in the README on its own, so a bug in the store code cannot
// hide itself.
package invariants

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/rooms"
)

// Check returns every violation found under prefix (nil when consistent),
// each shard's rooms and indexes read at one instant, so that instances
// still running may be checked (a room made after the key scan is not,
// nor its shard's stats):
//   - playerCount equals the players and users hashes, which agree;
//   - the owner is a player; playerIds are unique, never reused (every
//     player_joined in the log names a new one, none above the counter);
//   - the log holds one entry per version, ids 1..version in order;
//   - each public room is in exactly the four indexes of its status with
//     its createdAt score, private rooms in none; joinable rooms (public,
//     waiting, unlocked, not full counting reserved seats) and only they are in the joinable
//     indexes (createdAt) and the fill indexes (exact member); every index entry is such
//     a room; user index and invite codes match the rooms, and every
//     create key (":ckeys") names a room made under it;
//   - presence: connected players, stream leases and removal deadlines
//     name players of the room (a deadline only for a disconnected one,
//     a debounced disconnect only for a connected one, a connect deadline
//     only for one never connected: no lease, not shown connected);
//     a room with presence entries is in the shard's due set no later than
//     its earliest entry; no due entry, nor any of a room's own keys
//     (state, players, users, presence, connected players, messages,
//     bans, seat holds, kicks) outlives its room; every room is in its shard's lifecycle schedule, and no
//     room that is gone;
//   - the room hash counts its state's keys and bytes exactly ("sk" when
//     counted at its stateVersion, "sb");
//   - a room's log stays within its byte cap and its length (and slack),
//     is whole unless trimmed by count, by bytes, or dropped while the room
//     idled, and the room hash counts it exactly ("ln", "lb");
//   - each shard's stats hash holds exactly the counts of its rooms;
//   - a user's open streams (store/sessions/streams.go): members
//     "<roomId>/<stream>" or "/<stream>", and the key expires, not before
//     its longest lease.
//   - holdings and unheld lists expire and are well-formed, and the
//     holdings list every room their user is in.
func Check(ctx context.Context, c redis.UniversalClient, prefix string) ([]string, error) {
	keys, err := rediskeys.Scan(ctx, c, "{"+prefix+":*")
	if err != nil {
		return nil, err
	}
	ch := &checker{c: c, prefix: prefix}
	if err := ch.read(ctx, keys); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(ch.hash)) { // the rooms scanned, and those scheduled since
		if m := roomKeyRe.FindStringSubmatch(k); m != nil && strings.HasPrefix(m[1], prefix+":") {
			ch.room(m[1], m[2])
		}
	}
	ch.stats(keys)
	if err := ch.holdings(ctx, keys); err != nil {
		return nil, err
	}
	if err := ch.userStreams(ctx, keys); err != nil {
		return nil, err
	}
	if err := ch.unheld(ctx, keys); err != nil {
		return nil, err
	}
	for _, k := range keys {
		ch.index(k)
		ch.orphan(k)
	}
	return ch.bad, nil
}

// stats checks each shard's stats hash against its rooms.
func (ch *checker) stats(keys []string) {
	want := map[string]map[string]int{} // tag → field → count
	for _, k := range keys {
		if tag, ok := strings.CutSuffix(k, ":stats"); ok {
			want[strings.Trim(tag, "{}")] = map[string]int{}
		}
	}
	for key, h := range ch.rooms {
		tag, _, _ := strings.Cut(key, "|")
		if want[tag] == nil {
			want[tag] = map[string]int{}
		}
		pc, _ := strconv.Atoi(h["pc"])
		w := want[tag]
		w["players"] += pc
		w["rooms:"+h["st"]]++
		w["m:"+h["m"]+":"+h["st"]]++
		w["r:"+h["r"]+":"+h["st"]]++
	}
	for tag, w := range want {
		if ch.madeLate(tag) {
			continue // its stats count a room the key scan did not find
		}
		got := ch.hash["{"+tag+"}:stats"]
		for f, n := range w {
			if n != 0 && got[f] != strconv.Itoa(n) {
				ch.fail("stats of %s: %s is %q, rooms say %d", tag, f, got[f], n)
			}
		}
		for f, v := range got {
			if w[f] == 0 {
				ch.fail("stats of %s: %s is %s, rooms say 0", tag, f, v)
			}
		}
	}
}

var roomPartRe = regexp.MustCompile(`^\{([^}]+)\}:room:([A-Za-z0-9]+):(conn|presence|messages|state|players|users|bans|reserved|kicked)$`)

// orphan reports room keys without their room, and due entries of rooms
// that are gone.
func (ch *checker) orphan(k string) {
	if m := roomPartRe.FindStringSubmatch(k); m != nil && ch.there[k] && ch.gone(m[1], m[2]) {
		ch.fail("%s outlives its room", k)
	}
	if tag, ok := strings.CutSuffix(k, ":ckeys"); ok {
		tag = strings.Trim(tag, "{}")
		for digest, id := range ch.hash[k] {
			if h := ch.rooms[tag+"|"+id]; (h == nil && ch.gone(tag, id)) || (h != nil && h["ck"] != digest) {
				ch.fail("%s entry %s: room %s is gone or made by another create", k, digest, id)
			}
		}
		return
	}
	suffix := ":presence:due"
	if strings.HasSuffix(k, ":rooms:due") {
		suffix = ":rooms:due"
	} else if !strings.HasSuffix(k, suffix) {
		return
	}
	tag := strings.TrimSuffix(strings.TrimPrefix(k, "{"), "}"+suffix)
	for _, z := range ch.zset[k] {
		if id := z.Member.(string); ch.gone(tag, id) {
			ch.fail("%s entry %s of shard %s: the room is gone", suffix, id, tag)
		}
	}
}

// presence checks a room's connected set, leases and deadlines.
func (ch *checker) presence(tag, id, base string, players map[string]string) {
	connected := map[string]bool{}
	for pid := range ch.hash[base+":conn"] {
		connected[pid] = true
		if _, ok := players[pid]; !ok {
			ch.fail("room %s: connected player %s is not a player", id, pid)
		}
	}
	entries := ch.zset[base+":presence"]
	if len(entries) == 0 {
		return
	}
	leased := map[string]bool{}
	for _, e := range entries {
		if kind, rest, _ := strings.Cut(e.Member.(string), ":"); kind == "s" {
			pid, _, _ := strings.Cut(rest, ":")
			leased[pid] = true
		}
	}
	for _, e := range entries {
		m := e.Member.(string)
		kind, rest, _ := strings.Cut(m, ":")
		pid, _, _ := strings.Cut(rest, ":")
		if kind == "c" && (connected[pid] || leased[pid]) {
			ch.fail("room %s: connect deadline for player %s, who has a stream", id, pid)
		}
		if _, ok := players[pid]; !ok {
			ch.fail("room %s: presence entry %s of a missing player", id, m)
		}
		if kind == "g" && connected[pid] {
			ch.fail("room %s: removal deadline for connected player %s", id, pid)
		}
		if kind == "d" && !connected[pid] {
			ch.fail("room %s: debounced disconnect of player %s, who is not shown connected", id, pid)
		}
	}
	due, ok := ch.score["{"+tag+"}:presence:due"][id]
	if !ok || due > entries[0].Score {
		ch.fail("room %s: due at %v (scheduled %v), earliest presence entry at %v", id, due, ok, entries[0].Score)
	}
}

var roomKeyRe = regexp.MustCompile(`^\{([^}]+)\}:room:([A-Za-z0-9]+)$`)

type checker struct {
	c      redis.UniversalClient
	prefix string
	snapshot
	bad   []string
	rooms map[string]map[string]string // "<tag>|<id>" → room hash
	users map[string]bool              // "<tag>|<id>|<userId>" of every member
}

func (ch *checker) fail(format string, args ...any) {
	ch.bad = append(ch.bad, fmt.Sprintf(format, args...))
}

// gone reports a room neither in the snapshot nor made since.
func (ch *checker) gone(tag, id string) bool {
	return ch.rooms[tag+"|"+id] == nil && !ch.late(tag, id)
}

func (ch *checker) room(tag, id string) {
	base := "{" + tag + "}:room:" + id
	h := ch.hash[base]
	if ch.rooms == nil {
		ch.rooms = map[string]map[string]string{}
	}
	ch.rooms[tag+"|"+id] = h
	players, users := ch.hash[base+":players"], ch.hash[base+":users"]
	pc, _ := strconv.Atoi(h["pc"])
	if pc != len(players) || pc != len(users) || pc < 1 {
		ch.fail("room %s: playerCount %d, players %d, users %d", id, pc, len(players), len(users))
	}
	for uid, pid := range users {
		if ch.users == nil {
			ch.users = map[string]bool{}
		}
		ch.users[tag+"|"+id+"|"+uid] = true
		if _, ok := players[pid]; !ok {
			ch.fail("room %s: user %s maps to missing player %s", id, uid, pid)
		}
		if !slices.Contains(strings.Fields(ch.hash["{"+tag+"}:users"][uid]), id) {
			ch.fail("room %s: user %s missing from the user index", id, uid)
		}
	}
	if _, ok := players[h["ow"]]; !ok {
		ch.fail("room %s: owner %s is not a player", id, h["ow"])
	}
	ch.state(id, base, h)
	ch.log(id, base, h, players)
	ch.presence(tag, id, base, players)
	ch.indexed(tag, id, h)
	if h["vi"] == "private" {
		if got := ch.hash["{"+tag+"}:codes"][h["cd"]]; got != id {
			ch.fail("room %s: invite code %q maps to %q", id, h["cd"], got)
		}
	}
}

// state checks that the room hash counts its state exactly: "sb" the
// bytes of its keys and values, "sk" its keys when counted at the room's
// stateVersion ("kv": a room from before them, or patched by an older
// release since, has them counted at its next patch).
func (ch *checker) state(id, base string, h map[string]string) {
	st := ch.hash[base+":state"]
	bytes := 0
	for k, v := range st {
		bytes += len(k) + len(v)
	}
	if sb, ok := h["sb"]; ok && sb != strconv.Itoa(bytes) {
		ch.fail("room %s: sb %s, the state holds %d bytes", id, sb, bytes)
	}
	if sk, ok := h["sk"]; ok && h["kv"] == h["sv"] && sk != strconv.Itoa(len(st)) {
		ch.fail("room %s: sk %s, the state holds %d keys", id, sk, len(st))
	}
}

// log checks one entry per version and playerIds never reused.
func (ch *checker) log(id, base string, h map[string]string, players map[string]string) {
	entries := ch.stream[base+":log"]
	ver, _ := strconv.Atoi(h["ver"])
	sq, _ := strconv.Atoi(h["sq"])
	first := ver - len(entries) + 1
	seen := map[int]bool{}
	for i, e := range entries {
		if want := strconv.Itoa(first+i) + "-0"; e.ID != want {
			ch.fail("room %s: log entry %d has id %s, want %s", id, i, e.ID, want)
			break
		}
		var ev struct {
			Type    string `json:"type"`
			Version int    `json:"version"`
			Player  struct {
				PlayerID int `json:"playerId"`
			} `json:"player"`
		}
		if err := json.Unmarshal([]byte(e.Values["d"].(string)), &ev); err != nil || ev.Version != first+i {
			ch.fail("room %s: log entry %s has version %d (%v)", id, e.ID, ev.Version, err)
		}
		if ev.Type == "player_joined" {
			if seen[ev.Player.PlayerID] || ev.Player.PlayerID > sq {
				ch.fail("room %s: playerId %d reused or above counter %d", id, ev.Player.PlayerID, sq)
			}
			seen[ev.Player.PlayerID] = true
		}
	}
	// The log is whole, or trimmed by count (~1000 kept), or by bytes (it
	// still holds over half its cap), or dropped whole while the room idled.
	bytes := 0
	for _, e := range entries {
		bytes += len(e.ID) + len(e.Values["g"].(string)) + len(e.Values["d"].(string))
	}
	dropped := h["lt"] != "" && first == atoi(h["lt"])+1
	if first != 1 && !dropped && len(entries) > 0 && len(entries) < 900 && bytes < logBytesTrimmed {
		ch.fail("room %s: log holds %d entries (%d bytes) for version %d but was never trimmed", id, len(entries), bytes, ver)
	}
	if bytes > logBytesCap {
		ch.fail("room %s: log holds %d bytes, over the cap %d", id, bytes, logBytesCap)
	}
	if len(entries) > logMaxLen+logMaxLen/10 {
		ch.fail("room %s: log holds %d entries, past its length %d and slack", id, len(entries), logMaxLen)
	}
	// the room hash counts its log exactly ("ln" entries of "lb" bytes,
	// counted at version "lv"), or not yet (a room from before "ln", or an
	// older version's script wrote since: counted at its next event)
	if ln, ok := h["ln"]; ok && h["lv"] == h["ver"] && (atoi(ln) != len(entries) || atoi(h["lb"]) != bytes) {
		ch.fail("room %s: room hash counts its log as %s entries of %s bytes; it holds %d of %d", id, ln, h["lb"], len(entries), bytes)
	}
	if _, ok := ch.score[base[:strings.Index(base, "}")+1]+":rooms:due"][id]; !ok {
		ch.fail("room %s: not in its shard's lifecycle schedule", id)
	}
	for pid := range players {
		if n, _ := strconv.Atoi(pid); n > sq || n < 1 {
			ch.fail("room %s: playerId %s outside 1..%d", id, pid, sq)
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// The default byte cap of a room's event log (store.DefaultLogMaxBytes),
// and what a log trimmed by bytes still holds (3/4 of the cap, less one
// event of at most ~80 KB).
const (
	logBytesCap     = 256 << 10
	logMaxLen       = 1000 // store.Config.LogMaxLen's default
	logBytesTrimmed = logBytesCap/2 - 1
)

var statuses = []string{"waiting", "playing", "finished"}

// indexed checks the room sits in exactly the indexes it should.
func (ch *checker) indexed(tag, id string, h map[string]string) {
	for _, st := range statuses {
		for _, k := range indexKeys(tag, st, h["m"], h["r"]) {
			score, in := ch.score[k][id]
			want := h["vi"] == "public" && h["st"] == st
			switch {
			case want && !in:
				ch.fail("room %s (%s %s): missing from %s", id, h["vi"], h["st"], k)
			case !want && in:
				ch.fail("room %s (%s %s): present in %s", id, h["vi"], h["st"], k)
			case want && strconv.FormatFloat(score, 'f', 0, 64) != h["cr"]:
				ch.fail("room %s: score %v in %s, createdAt %s", id, score, k, h["cr"])
			}
		}
	}
	want := joinable(h)
	for _, k := range indexKeys(tag, "joinable", h["m"], h["r"]) {
		score, in := ch.score[k][id]
		if want != in || (want && strconv.FormatFloat(score, 'f', 0, 64) != h["cr"]) {
			ch.fail("room %s (joinable %v): score %v, present %v in %s", id, want, score, in, k)
		}
	}
	for _, k := range indexKeys(tag, "fill", h["m"], h["r"]) {
		if _, in := ch.score[k][fillMember(id, h)]; want != in {
			ch.fail("room %s (joinable %v): fill entry %q in %s: present %v", id, want, fillMember(id, h), k, in)
		}
	}
}

// taken is a room's seats taken or reserved (players and held seats).
func taken(h map[string]string) int {
	pc, _ := strconv.Atoi(h["pc"])
	rv, _ := strconv.Atoi(h["rv"])
	return pc + rv
}

// joinable: public, waiting, unlocked, not full (reserved seats count).
func joinable(h map[string]string) bool {
	mx, _ := strconv.Atoi(h["mx"])
	return h["vi"] == "public" && h["st"] == "waiting" && h["lk"] != "1" && taken(h) < mx
}

// fillMember is a joinable room's entry in the fill indexes, ordered by
// seats taken or reserved.
func fillMember(id string, h map[string]string) string {
	cr, _ := strconv.ParseInt(h["cr"], 10, 64)
	return fmt.Sprintf("%03d|%017d|%s", rooms.MaxPlayersLimit-taken(h), cr, id)
}

func indexKeys(tag, st, mode, region string) []string {
	b := "{" + tag + "}:idx:" + st
	return []string{b, b + ":mode:" + mode, b + ":region:" + region, b + ":mode:" + mode + ":region:" + region}
}

var userIndexRe = regexp.MustCompile(`^\{([^}]+)\}:users$`)

var indexKeyRe = regexp.MustCompile(`^\{([^}]+)\}:idx:(waiting|playing|finished|joinable|fill)(?::mode:([^:]+))?(?::region:([^:]+))?$`)

// index checks every entry of a status index is a matching public room.
func (ch *checker) index(key string) {
	if m := userIndexRe.FindStringSubmatch(key); m != nil {
		ch.userIndex(m[1], key)
		return
	}

	m := indexKeyRe.FindStringSubmatch(key)
	if m == nil {
		return
	}
	ids := make([]string, 0, len(ch.zset[key]))
	for _, z := range ch.zset[key] {
		ids = append(ids, z.Member.(string))
	}
	sort.Strings(ids)
	for _, entry := range ids {
		id := entry
		if m[2] == "fill" {
			id = entry[strings.LastIndexByte(entry, '|')+1:]
		}
		h, ok := ch.rooms[m[1]+"|"+id]
		inPlace := ok && (m[3] == "" || h["m"] == m[3]) && (m[4] == "" || h["r"] == m[4])
		switch {
		case !ok && !ch.late(m[1], id):
			ch.fail("index %s: room %s does not exist", key, id)
		case !ok: // made after the key scan
		case m[2] == "joinable" || m[2] == "fill":
			if !joinable(h) || !inPlace || (m[2] == "fill" && entry != fillMember(id, h)) {
				ch.fail("index %s: entry %s, room %v", key, entry, h)
			}
		case h["vi"] != "public" || h["st"] != m[2] || !inPlace:
			ch.fail("index %s: room %s is %s %s %s/%s", key, id, h["vi"], h["st"], h["m"], h["r"])
		}
	}
}

// userIndex checks every room of every user in the user index (userId →
// "<roomId> ...") has that user as a member, each room listed once.
func (ch *checker) userIndex(tag, key string) {
	for uid, ids := range ch.hash[key] {
		f := strings.Fields(ids)
		if len(f) == 0 {
			ch.fail("user index %s: user %q with no rooms", key, uid)
		}
		seen := map[string]bool{}
		for _, id := range f {
			if seen[id] || (!ch.users[tag+"|"+id+"|"+uid] && (ch.rooms[tag+"|"+id] != nil || !ch.late(tag, id))) {
				ch.fail("user index %s: %q is not a member of room %s, or listed twice", key, uid, id)
			}
			seen[id] = true
		}
	}
}

var holdingsRe = regexp.MustCompile(`^\{[^}]+\}:held:(.+)$`)
var holdingRe = regexp.MustCompile(`^[om]:[0-9]+\^?(~[0-9]+){0,4}(-[0-9]+){0,4}$`) // the notes: holdings_release.lua

// holdings checks the users' holdings (store/holdings): each expires,
// its entries are well-formed, and it lists every room its user is in
// (it may list more: rooms left otherwise than by a leave are dropped by
// the janitor's next visit of the room's shard, store/holdings/unheld.go).
func (ch *checker) holdings(ctx context.Context, keys []string) error {
	byUser := map[string]string{}
	for _, k := range keys {
		m := holdingsRe.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		byUser[m[1]] = k
		ttl, err := ch.c.PTTL(ctx, k).Result()
		if err != nil {
			return err
		}
		if ttl <= 0 {
			ch.fail("holdings %s: no expiry (%v)", k, ttl)
		}
		h, err := ch.c.HGetAll(ctx, k).Result()
		if err != nil {
			return err
		}
		if h["#"] != "1" {
			ch.fail("holdings %s: no built marker", k)
		}
		for id, v := range h {
			if id != "#" && !holdingRe.MatchString(v) {
				ch.fail("holdings %s: room %s holds %q", k, id, v)
			}
		}
	}
	for member := range ch.users {
		parts := strings.SplitN(member, "|", 3)
		key, ok := byUser[parts[2]]
		if !ok {
			continue // not built yet: built from the rooms on the user's next create or join
		}
		if ok, err := ch.c.HExists(ctx, key, parts[1]).Result(); err != nil {
			return err
		} else if !ok {
			ch.fail("holdings %s: misses room %s the user is in", key, parts[1])
		}
	}
	return nil
}

var userStreamsRe = regexp.MustCompile(`^\{[^}]+\}:streams:(.+)$`)
var userStreamRe = regexp.MustCompile(`^([A-Za-z0-9_-]{1,40})?/[^/\s]+$`)

// userStreams checks the users' open streams (store/sessions/streams.go): each
// key expires, not before its longest lease, and its members are
// well-formed.
func (ch *checker) userStreams(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if userStreamsRe.FindStringSubmatch(k) == nil {
			continue
		}
		// the TTL, the clock and the leases read at one instant on the key's
		// node. Redis stops its clock within a script; the embedded store
		// does not, and applies the time passed at each call: the TTL is
		// read before the clock, so that a stall between the two (13 ms
		// once in CI) lengthens the key's expiry as computed here rather
		// than shortening it below a lease
		res, err := ch.c.Eval(ctx, `local pttl = redis.call('PTTL', KEYS[1])
local t = redis.call('TIME')
return {t[1] * 1000 + math.floor(t[2] / 1000), pttl, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')}`,
			[]string{k}).Slice()
		if err != nil {
			return err
		}
		now, pttl := res[0].(int64), res[1].(int64)
		if pttl <= 0 {
			ch.fail("user streams %s: no expiry (%v)", k, pttl)
			continue
		}
		expiry := float64(now + pttl)
		flat, _ := res[2].([]any)
		var zs []redis.Z
		for i := 0; i+1 < len(flat); i += 2 {
			score, _ := strconv.ParseFloat(fmt.Sprint(flat[i+1]), 64)
			zs = append(zs, redis.Z{Member: flat[i], Score: score})
		}
		for _, z := range zs {
			m, _ := z.Member.(string)
			if !userStreamRe.MatchString(m) {
				ch.fail("user streams %s: malformed member %q", k, m)
			}
			// slack: the embedded store's clock (the time passed applied at
			// each call, in milliseconds)
			if z.Score > expiry+10 {
				ch.fail("user streams %s: lease %s lives until %.0f, the key until %.0f", k, m, z.Score, expiry)
			}
		}
	}
	return nil
}

var unheldRe = regexp.MustCompile(`^\{[^}]+\}:unheld$`)
var unheldEntryRe = regexp.MustCompile(`^[A-Za-z0-9]+ [cro] .+$`)

// unheld checks the shards' unheld lists (store/holdings/unheld.go): each expires,
// holds at most 10 000 well-formed entries.
func (ch *checker) unheld(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if !unheldRe.MatchString(k) {
			continue
		}
		ttl, err := ch.c.PTTL(ctx, k).Result()
		if err != nil {
			return err
		}
		if ttl <= 0 {
			ch.fail("unheld %s: no expiry (%v)", k, ttl)
		}
		l, err := ch.c.LRange(ctx, k, 0, -1).Result()
		if err != nil {
			return err
		}
		if len(l) > 10000 {
			ch.fail("unheld %s: %d entries", k, len(l))
		}
		for _, e := range l {
			if !unheldEntryRe.MatchString(e) {
				ch.fail("unheld %s: entry %q", k, e)
			}
		}
	}
	return nil
}

// strs is a script's array reply of strings.
func strs(v any) []string {
	xs, _ := v.([]any)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

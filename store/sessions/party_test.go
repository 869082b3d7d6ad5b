package sessions

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The interleavings of one user's joins and leaves, step by step as
// SetParty and LeaveParty make them (partyJoin: list and write, again
// when a later expiry refuses the write, then unlist, or yield once
// refused twice; partyLeave: write, unlist), with the expiries each join
// asked (ms past a base an hour ahead: instances whose clocks differ); a
// join whose steps stop
// early is one whose call failed or whose answer was lost (503). At the
// end the user's party is the want leader's ("" none), which lists the
// user, and no other leader lists it. "A" joins L at 2000 first, whole,
// where a case starts with it.
func TestPartyInterleavings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		joins map[string]string // writer -> "<leader> <asked offset>"; V is a leave
		steps string
		want  string
		// entries: the lists' entries left, L's and M's: the member's,
		// and any a failed join left behind
		entries int64
	}{
		// three joins at once, one from an instance ahead: K's late
		// listing must not bring back the expiry M's drop removes
		{"ThreeJoinsOneAhead", map[string]string{"J": "L 1005", "K": "L 1000", "M": "M 1002"},
			"J list; K list; K write; M list; M write; J write; J unlist; K unlist; M unlist", "L", 1},
		// a join from an instance behind, after a leave: the leave's
		// trace refuses its expiry, it lists and writes one past it,
		// which the leave's drop then leaves
		{"LeaveThenJoinBehind", map[string]string{"B": "L 1500"},
			"A; V write; B list; B write; B list; B write; B unlist; V unlist", "L", 1},
		// that join's write refused and its call then failed: no party,
		// nothing listed
		{"LeaveThenJoinBehindFailed", map[string]string{"B": "L 1500"},
			"A; V write; B list; B write; V unlist", "", 0},
		// that join's second write made, its answer lost: listed before
		{"LeaveThenJoinBehindAnswerLost", map[string]string{"B": "L 1500"},
			"A; V write; B list; B write; B list; B write; V unlist", "L", 1},
		// a join refused, a drop of the party it would replace in
		// between, then the join listed and written past the move
		{"WriteRefusedThenADrop", map[string]string{"X": "M 2500", "B": "L 1500"},
			"A; X list; X write; B list; B write; X unlist; B list; B write; B unlist", "L", 1},
		// that join's call failed once refused: the move stands
		{"WriteRefusedThenFailed", map[string]string{"C": "M 2500", "B": "L 1500"},
			"A; B list; C list; C write; B write; C unlist", "M", 1},
		// two joins from instances behind, each refused before it writes
		{"TwoJoinsBehind", map[string]string{"B": "L 1500", "C": "M 1800"},
			"A; B list; B write; C list; C write; C list; C write; C unlist; B list; B write; B list; B write; B unlist", "L", 1},
		{"LeaveRacingJoin", map[string]string{"B": "L 3000"},
			"A; B list; V write; B write; V unlist; B unlist", "L", 1},
		{"JoinThenLeave", map[string]string{"B": "M 3000"},
			"A; B list; B write; V write; B unlist; V unlist", "", 0},
		{"MoveBackAndForth", map[string]string{"B": "M 2100", "C": "L 2200"},
			"A; B list; C list; B write; C write; C unlist; B unlist", "L", 1},
		// a join from an instance behind, refused by A's party, then by
		// K's written meanwhile: superseded, it drops its listing
		{"Superseded", map[string]string{"J": "M 1500", "K": "L 2500"},
			"A; J list; J write; J list; K list; K write; J write; J yield; K unlist", "L", 1},
		// the same, superseded by a join of its own leader: the drop
		// leaves that one's listing
		{"SupersededBySameLeader", map[string]string{"J": "L 1500", "K": "L 2500"},
			"A; J list; J write; J list; K list; K write; J write; J yield; K unlist", "L", 1},
		// two joins of one leader from instances behind, each refused by
		// A's party, then asking the same expiry: the second finds the
		// first's party written as it asks, which is written, not a
		// refusal (its yield and unlist then do nothing; after a
		// refusal, its yield would drop the member's listing)
		{"SameJoinTwice", map[string]string{"B": "M 1500", "C": "M 1500"},
			"A; B list; C list; B write; C write; B list; C list; C write; B write; B yield; B unlist; C unlist", "M", 1},
	} {
		for _, b := range redistest.Backends(t) {
			t.Run(tc.name+"/"+b.Name, func(t *testing.T) {
				ctx := context.Background()
				s := newSessions(t, b)
				base := time.Now().Add(time.Hour).UnixMilli()
				joins := map[string]*partyJoin{}
				join := func(leader string, at int64) *partyJoin {
					return &partyJoin{s: s, uid: "u", leader: leader, asked: base + at, now: time.Now().UnixMilli(), ttl: 2 * time.Hour}
				}
				for w, spec := range tc.joins {
					leader, at, _ := strings.Cut(spec, " ")
					ms, err := strconv.ParseInt(at, 10, 64)
					if err != nil {
						t.Fatalf("join %s %q: %v", w, spec, err)
					}
					joins[w] = join(leader, ms)
				}
				leave := &partyLeave{s: s, uid: "u"}
				for _, step := range strings.Split(tc.steps, "; ") {
					w, what, _ := strings.Cut(step, " ")
					var err error
					switch {
					case w == "A": // SetParty's steps, at 2000
						_, err = join("L", 2000).run(ctx)
					case joins[w] != nil:
						j := joins[w]
						err = map[string]func(context.Context) error{"list": j.list, "write": j.write, "unlist": j.unlist, "yield": j.yield}[what](ctx)
					default:
						err = map[string]func(context.Context) error{"write": leave.write, "unlist": leave.unlist}[what](ctx)
					}
					if err != nil {
						t.Fatalf("%s: %v", step, err)
					}
				}
				p, ok, err := s.Party(ctx, "u")
				if err != nil || ok != (tc.want != "") || ok && p.LeaderUserID != tc.want {
					t.Fatalf("party %+v %v %v, want %q", p, ok, err, tc.want)
				}
				var entries int64
				for _, leader := range []string{"L", "M"} {
					entries += s.b.Client.ZCard(ctx, s.partyMembersKey(leader)).Val()
					got, err := s.PartyMembers(ctx, leader, players.MaxPartyListed)
					if err != nil {
						t.Fatal(err)
					}
					var ids []string
					for _, m := range got {
						ids = append(ids, m.UserID)
						if !m.ExpiresAt.Equal(p.ExpiresAt) {
							t.Errorf("%s lists u until %s, its party until %s", leader, m.ExpiresAt, p.ExpiresAt)
						}
					}
					if want := leader == tc.want; !slices.Equal(ids, map[bool][]string{true: {"u"}}[want]) {
						t.Errorf("%s lists %v; the party is %q's", leader, ids, tc.want)
					}
				}
				if entries != tc.entries {
					t.Errorf("the lists hold %d entries, want %d", entries, tc.entries)
				}
			})
		}
	}
}

func newSessions(t *testing.T, b redistest.Backend) *Sessions {
	t.Helper()
	return New(Config{Base: scripttest.Base(t, b.URL, b.ClusterAddrs, redistest.Prefix(t), 4)})
}

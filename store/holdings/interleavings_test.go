package holdings

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"

	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// noRooms is a user in no room (a cold key is built empty).
type noRooms struct{}

func (noRooms) RoomsOf(context.Context, string) ([]string, []bool, []int, error) {
	return nil, nil, nil, nil
}
func (noRooms) Membership(_ context.Context, _ string, ids []string) ([]bool, []bool, error) {
	return make([]bool, len(ids)), make([]bool, len(ids)), nil
}
func (noRooms) InRooms(_ context.Context, uids, _ []string) ([]bool, error) {
	return make([]bool, len(uids)), nil
}
func (noRooms) IsRoom(string) bool   { return true }
func (noRooms) UnheldKey(int) string { return "" }

// The interleavings of one user's entry for one room, step by step as
// the store's calls make them: whether the entry is left, and its role.
// Steps: "join A" (a join's reservation, held by name A), "record" (a
// join's record after its script added the user), "found A" (a
// quick-join's look finding the user in the room), "undo A" (the
// script changed nothing), "release A" (the script refused), "read V" (a
// leave or kick reads the entry), "left V" (its correction, after its
// script removed the user), "owner" (ownership passed to the user).
// Every interleaving of a join and a leave that ends with the user out of
// the room leaves no entry; one that ends with the user in keeps it.
func TestInterleavings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps string
		want  string // the entry's role, "" none
	}{
		{"LeaveAlone", "join a; read v; left v", ""},
		{"JoinRacingLeaveUndoFirst", "join a; read v; join b; undo b; left v", ""},
		{"JoinRacingLeaveCorrectionFirst", "join a; read v; join b; left v; undo b", ""},
		{"SecondTabThenLeave", "join a; join b; undo b; read v; left v", ""},
		{"SecondTabStays", "join a; join b; undo b", "m"},
		{"RejoinAddedCorrectionLate", "join a; read v; join b; left v; record", "m"},
		{"RejoinAddedRecordLost", "join a; read v; join b; left v", "m"},
		{"LeaveReadsRejoinInFlight", "join a; join b; read v; left v", "m"},
		{"LeaveReadsRejoinInFlightThenAdded", "join a; join b; read v; left v; record", "m"},
		{"LeaveReadsRejoinInFlightThenRefused", "join a; join b; read v; left v; release b", ""},
		{"LeaveReadsRejoinThenNothingChanged", "join a; join b; read v; left v; undo b", ""},
		{"LeaveReadsRejoinAfterItsUndo", "join a; join b; read v; undo b; left v", ""},
		{"RefusedRejoinAfterLeave", "join a; read v; left v; join b; release b", ""},
		{"FreshRefused", "join a; release a", ""},
		// two tabs' joins of a room the user is not in, both refused (a
		// reviewer's find: the re-stamp's undo put the first's back)
		{"TwoRefusedJoinsFreshFirst", "join a; join b; release a; release b", ""},
		{"TwoRefusedJoinsReStampFirst", "join a; join b; release b; release a", ""},
		// the quick-join's look read u a member, the leave ran whole before
		// its Found, its read of the room then finds u gone (a reviewer's
		// find: the entry Found made stayed)
		{"FoundAfterTheLeave", "join a; read v; left v; found b; release b", ""},
		{"FoundRacingLeaveUndoFirst", "join a; read v; found b; undo b; left v", ""},
		{"FoundRacingLeaveCorrectionFirst", "join a; read v; found b; left v; undo b", ""},
		{"FoundAlone", "join a; found b; undo b", "m"},
		{"OwnerPassedDuringRejoin", "join a; join b; owner; undo b", "o"},
		{"OwnerPassedDuringARaceWithALeave", "join a; read v; join b; owner; left v; undo b", ""},
		{"FiveUndosThenALeave", "join a; read v; join b; undo b; join c; undo c; join d; undo d; join e; undo e; join f; undo f; left v", ""},
		{"UndoOfAnotherJoinsStamp", "join a; join b; join c; undo b", "m"},
		// b adds the user back after the leave; c, after b's script,
		// finds the user a member: its undo keeps b's entry (in flight)
		{"UndoKeepsAnAddingJoinInFlight", "join a; join b; read v; left v; join c; undo c", "m"},
		{"UndoKeepsAnAddingJoinInFlightThenRecorded", "join a; join b; read v; left v; join c; undo c; record", "m"},
		// two joins finding the user a member, then the leave's script
		{"TwoNoopJoinsRacingALeaveLaterUndoFirst", "join a; read v; join b; join c; undo c; left v; undo b", ""},
		{"TwoNoopJoinsRacingALeaveThatReadTheLater", "join a; join b; join c; read v; left v; undo c; undo b", ""},
	} {
		for _, b := range redistest.Backends(t) {
			t.Run(tc.name+"/"+b.Name, func(t *testing.T) {
				h, uid, room := newHoldings(t, b), "u1", "r1"
				ctx := context.Background()
				holds, read := map[string]Hold{}, map[string]string{}
				for _, step := range strings.Split(tc.steps, "; ") {
					time.Sleep(time.Millisecond) // each stamp its own (µs)
					op, arg, _ := strings.Cut(step, " ")
					var err error
					switch op {
					case "join":
						holds[arg], err = h.Reserve(ctx, uid, room, false)
					case "found":
						holds[arg], err = h.Found(ctx, uid, room, false)
					case "record":
						_, err = h.Record(ctx, uid, room, false)
					case "undo":
						h.Undo(ctx, holds[arg])
					case "release":
						h.Release(ctx, holds[arg])
					case "read":
						read[arg] = h.Value(ctx, uid, room)
					case "left":
						h.Left(ctx, uid, room, read[arg], "")
					case "owner":
						h.Left(ctx, "u0", room, "", uid)
					default:
						t.Fatalf("step %q", step)
					}
					if err != nil {
						t.Fatalf("%s: %v", step, err)
					}
				}
				v, err := h.b.Client.HGet(ctx, h.Key(uid), room).Result()
				if err != nil {
					v = ""
				}
				if got := v[:min(1, len(v))]; got != tc.want {
					t.Errorf("after %s: entry %q, want role %q", tc.steps, v, tc.want)
				}
			})
		}
	}
}

func newHoldings(t *testing.T, b redistest.Backend) *Holdings {
	t.Helper()
	return New(Config{Base: scripttest.Base(t, b.URL, b.ClusterAddrs, redistest.Prefix(t), 4), Owned: 5, Joined: 5, Rooms: noRooms{}})
}

package holdings

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

// shardDown is a user's rooms read while a shard is unread: ids, the
// rooms read (owned), and unread, the shards not read; reads counts the
// reads.
type shardDown struct {
	noRooms
	ids    []string
	unread []int
	reads  int
}

func (r *shardDown) RoomsOf(context.Context, string) ([]string, []bool, []int, error) {
	r.reads++
	owned := make([]bool, len(r.ids))
	for i := range owned {
		owned[i] = true
	}
	return r.ids, owned, r.unread, nil
}

// A key built from some shards only is marked partial, counted as it is
// until Reread, then read again by a reservation that checks a limit (not
// by a record, which checks none): the rooms read then are added, the
// entries it held kept as they were, and the key marked whole.
func TestPartialKeyCompletedByALaterRead(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			rs := &shardDown{ids: []string{"r1"}, unread: []int{1}}
			h := New(Config{Base: scripttest.Base(t, b.URL, b.ClusterAddrs, redistest.Prefix(t), 4), Owned: 3, Rooms: rs})
			uid, key := "u1", h.Key("u1")
			for _, room := range []string{"n1", "n2"} {
				if _, err := h.Reserve(ctx, uid, room, true); err != nil {
					t.Fatalf("reserve %s: %v", room, err)
				}
			}
			if _, err := h.Reserve(ctx, uid, "n3", true); !errors.Is(err, rooms.ErrOwnedRoomsLimit) {
				t.Fatalf("reserve past the limit counted from the shards read: %v, want ErrOwnedRoomsLimit", err)
			}
			before, err := h.b.Client.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if rs.reads != 1 || len(before) != 4 || !strings.HasPrefix(before["#"], "p:") {
				t.Fatalf("after a partial read: %d reads, key %v; want 1, r1 n1 n2 and a partial marker", rs.reads, before)
			}
			// Reread later, the shard back: r2 is on it
			at, _ := Stamp(before["#"])
			if err := h.b.Client.HSet(ctx, key, "#", "p:"+strconv.FormatInt(at-Reread.Microseconds(), 10)).Err(); err != nil {
				t.Fatal(err)
			}
			rs.ids, rs.unread = []string{"r1", "r2"}, nil
			if _, err := h.Record(ctx, uid, "x", false); err != nil || rs.reads != 1 {
				t.Fatalf("a record on a partial key: %v, %d reads; want none again", err, rs.reads)
			}
			if _, err := h.Reserve(ctx, uid, "n3", true); !errors.Is(err, rooms.ErrOwnedRoomsLimit) || rs.reads != 2 {
				t.Fatalf("reserve once the shard is back: %v, %d reads; want ErrOwnedRoomsLimit, 2", err, rs.reads)
			}
			after, err := h.b.Client.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if after["#"] != "1" || after["r2"] == "" || len(after) != 6 || after["n2"] != before["n2"] {
				t.Fatalf("after a whole read: %v, want r2 added, x recorded, the others kept (before %v), the marker 1", after, before)
			}
		})
	}
}

package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// A master of a Cluster with replicas fails over after acknowledging a
// user's logged events its replica never got (replication cut first, so
// the loss is certain): a direct message sent with an Idempotency-Key (3)
// that a personal stream of the user's web platform wrote and
// acknowledged. On the promoted replica the sender's retry with the same
// key is sent again (the key was lost with it): the new history's 3, then
// 4. The late ack of the lost 3 moves nothing, and the client's resume
// from the lost 3 is a gap: a snapshot, then web's inbox from its cursor
// (2): the new 3, which carries the first send's messageId (the client
// drops it as the duplicate it is), and 4. With one tag per history the
// ids of both 3s were equal: the resume replayed 4 alone, the new 3 never
// delivered to web, and the ack moved web's cursor past it.
func TestPersonalLogAcrossAFailover(t *testing.T) {
	c := ownReplicatedCluster(t)
	ctx := t.Context()
	s := openStore(t, redistest.Backend{Name: "failover", ClusterAddrs: c.Addrs()})
	uid := "u-" + redistest.Prefix(t)
	web := sse.Session{UserID: uid, Platform: "web", ID: "w.0"}
	o, err := s.Sessions().OpenSession(ctx, web, sse.Cursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context, n int, key string) error {
		now := time.Now().UTC().Truncate(time.Millisecond)
		ev := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, uid, now),
			From: players.Sender{UserID: "bob"}, Message: players.DirectMessageBody{Type: "chat", Data: fmt.Appendf(nil, `{"n":%d}`, n)}}
		if key == "" {
			return s.Sessions().Send(ctx, uid, ev)
		}
		ev.MessageID = rooms.MessageID(key, "bob")
		_, err := s.Sessions().SendOnce(ctx, uid, ev, players.Once{Key: key + " bob", Digest: rooms.MessageDigest("chat", ev.Message.Data, nil), At: now})
		return err
	}
	for n := 1; n <= 2; n++ {
		if err := send(ctx, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	// what the web stream wrote, as its client got it: 1 and 2, acknowledged
	r, err := s.Sessions().OpenSession(ctx, web, sse.Cursor{Set: true, Version: 0, Tag: o.Tag}, 100)
	if err != nil || r.Gap || len(r.Replay) != 2 {
		t.Fatalf("web's 1 and 2: %+v %v", r, err)
	}
	if err := s.Sessions().Delivered(ctx, web, r.Replay[1].Tag, 2); err != nil {
		t.Fatal(err)
	}

	master, replica, err := c.ReplicatedShard(ctx, s.UserLogs().KeysOf(uid).Meta, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := redistest.CutReplication(ctx, master); err != nil {
		t.Fatal(err)
	}
	// acknowledged by the master alone: lost in the failover
	if err := send(ctx, 3, "k3"); err != nil {
		t.Fatal(err)
	}
	r, err = s.Sessions().OpenSession(ctx, web, sse.Cursor{Set: true, Version: 2, Tag: r.Replay[1].Tag}, 100)
	if err != nil || r.Gap || len(r.Replay) != 1 {
		t.Fatalf("web's 3: %+v %v", r, err)
	}
	lost := r.Replay[0]
	lostID := messageIDOf(t, lost.Data)
	if lostID == "" {
		t.Fatalf("the keyed message %s has no messageId", lost.Data)
	}

	master.Kill()
	waitPromoted(t, replica, 30*time.Second)
	// the sender retries with the same key until the store follows the
	// promotion: the new master never had it, so it is sent again
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := send(sctx, 3, "k3")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retry after the promotion: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := send(ctx, 4, ""); err != nil {
		t.Fatal(err)
	}

	// the web stream acknowledges the lost 3 late: nothing moves
	if err := s.Sessions().Delivered(ctx, web, lost.Tag, 3); err != nil {
		t.Fatal(err)
	}
	// its client resumes with the lost 3's id
	web1 := sse.Session{UserID: uid, Platform: "web", ID: "w.1"}
	r, err = s.Sessions().OpenSession(ctx, web1, sse.Cursor{Set: true, Version: 3, Tag: lost.Tag}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	var data []string
	for _, e := range r.Replay {
		seqs, data = append(seqs, e.Seq), append(data, string(e.Data))
	}
	t.Logf("resume from the lost 3 (%d-%s): gap %v, from %d, replayed %v", lost.Seq, lost.Tag, r.Gap, r.From, data)
	if !r.Gap || r.From != 2 || len(r.Replay) != 2 || r.Replay[0].Seq != 3 || r.Replay[1].Seq != 4 {
		t.Fatalf("resume from the lost 3: gap %v, from %d, replayed %v; want a gap (a snapshot), then web's inbox after 2: the new 3 and 4", r.Gap, r.From, seqs)
	}
	if !strings.Contains(data[0], `"n":3`) || r.Replay[0].Tag == lost.Tag {
		t.Fatalf("the new 3: %s tagged %s, the lost one %s", data[0], r.Replay[0].Tag, lost.Tag)
	}
	if id := messageIDOf(t, r.Replay[0].Data); id != lostID {
		t.Fatalf("the retried message's messageId %q, the first send's %q: want equal, for the client to drop the duplicate", id, lostID)
	}
}

// messageIDOf reads a message event's messageId.
func messageIDOf(t *testing.T, data []byte) string {
	t.Helper()
	var m struct {
		MessageID string `json:"messageId"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return m.MessageID
}

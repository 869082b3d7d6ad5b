package idempotency

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/realsync/realsync/store/internal/redisx"
)

//go:embed lua/receipt_check.lua
var receiptCheckLua string

var receiptCheck = redisx.Plain("receipt_check", receiptCheckLua)

// Receipt names a write a request made in a history of another slot than
// its caller's (a room's log, a user's personal log), for a replay of its
// answer to check (contract.Answer.Receipt): the entry at Pos of the
// stream Log, whose entries carry their write's tag (field g), Tag being
// this write's; the stream's head position is field Field of hash Head,
// in Log's slot.
type Receipt struct {
	Log   string `json:"l"`
	Head  string `json:"h"`
	Field string `json:"f"`
	Pos   int64  `json:"p"`
	Tag   string `json:"g"`
	// HistoryField, when the log may start anew (a personal log that
	// expired), is the field of Head naming its history, History the one
	// the write was in: in another, the write's history is gone (as with
	// no Head), not lost.
	HistoryField string `json:"hf,omitempty"`
	History      string `json:"hg,omitempty"`
	// Until: till then the write's history cannot be gone but by a loss
	// (a personal log kept its TTL after its last event); zero: it may be
	// (a room closes), and a gone history is not a lost write.
	Until time.Time `json:"u,omitzero"`
}

// String is r as a contract.Answer's Receipt; "" for a write without its
// tag (its entry trimmed when read), which cannot be checked.
func (r Receipt) String() string {
	if r.Tag == "" || r.Pos <= 0 {
		return ""
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// receiptCheckCall is receipt_check.lua: is r's write held?
type receiptCheckCall struct{ r Receipt }

func (receiptCheckCall) Script() *redisx.Script { return receiptCheck }
func (c receiptCheckCall) KeysArgs() ([]string, []any) {
	return []string{c.r.Log, c.r.Head}, []any{c.r.Field, c.r.Pos, c.r.Tag, c.r.HistoryField, c.r.History}
}

// lost reports whether the write receipt names was lost by its history:
// in it, another write's entry at its position, a head below it, or
// entries before it and not it; or its history gone (or another started)
// before r.Until. A receipt this release cannot read (of a later one) is
// not lost.
func (s *Store) lost(ctx context.Context, receipt string) (bool, error) {
	var r Receipt
	if json.Unmarshal([]byte(receipt), &r) != nil || r.Log == "" || r.Head == "" {
		return false, nil
	}
	res, err := s.b.Runner.Run(ctx, receiptCheckCall{r}).Slice()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	got, _ := res[0].(string)
	switch got {
	case "LOST":
		return true, nil
	case "GONE":
		return time.Now().Before(r.Until), nil
	case "HELD", "UNTOLD":
		return false, nil
	}
	return false, fmt.Errorf("store: unexpected receipt reply %s", strconv.Quote(got))
}

package sessions

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/realsync/realsync/store/userlog"
)

// within says whether s's bytes lie in whole's.
func within(s, whole string) bool {
	p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(whole)))
	return p >= b && p < b+uintptr(len(whole))
}

// A personal stream keeps the tag of the last events it wrote (its
// position, the late messages it drops): a tag parsed from a channel's
// message or a session_open reply's entry is a copy, which does not keep
// the message or the entry (the event's JSON, up to a direct message's
// size) alive.
func TestParsedTagsKeepNoMessage(t *testing.T) {
	payload := `E 7 aB3xYz {"type":"message","message":{"type":"chat","data":"` + strings.Repeat("x", 4096) + `"},"seq":7}`
	e, err := ParseUserEvent(payload)
	if err != nil || e.Seq != 7 || e.Tag != "aB3xYz" {
		t.Fatalf("%+v %v", e, err)
	}
	if within(e.Tag, payload) {
		t.Error("the event's tag shares the message's bytes")
	}
	entry := `aB3xYz {"type":"message","seq":7,"data":"` + strings.Repeat("x", 4096) + `"}`
	if x := userlog.EntryOf(7, entry); x.Tag != "aB3xYz" || within(x.Tag, entry) {
		t.Errorf("the entry's tag %q, sharing the entry's bytes: %v", x.Tag, within(x.Tag, entry))
	}
}

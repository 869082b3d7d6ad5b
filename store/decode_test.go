package store

import (
	"testing"
	"time"
)

func TestDecodePlayer(t *testing.T) {
	created := int64(1795298493000)
	at := time.UnixMilli(created + 182).UTC()
	for _, name := range []string{"bob", "", `a"b`, `back\slash`, "<b>&", "żółw 🐢", "a|b"} {
		rec := "182|" + jsonString(name)
		p, err := decodePlayer("7", rec, created)
		if err != nil || p.PlayerID != 7 || p.Name != name || !p.JoinedAt.Equal(at) {
			t.Errorf("decodePlayer(%q) = %+v, %v; want name %q", rec, p, err, name)
		}
	}
	for _, rec := range []string{"", "182", "x|\"bob\"", "182|bob", `{"playerId":1}`} {
		if _, err := decodePlayer("1", rec, created); err == nil {
			t.Errorf("decodePlayer(%q): no error", rec)
		}
	}
	if _, err := decodePlayer("one", `1|"bob"`, created); err == nil {
		t.Error("decodePlayer with playerId \"one\": no error")
	}
}

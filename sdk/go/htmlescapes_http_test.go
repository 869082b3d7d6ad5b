package realsync_test

import (
	"strings"
	"testing"

	rs "github.com/realsync/realsync/sdk/go"
)

// The SDK sends `<`, `>` and `&` as they are, so the server keeps and
// serves them as one byte each, not as encoding/json's six-byte escapes.
func TestSDKSendsHTMLCharactersAsIs(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	host := s.guest(t, "host")
	room := arena("<b>&</b>")
	room.Attributes = &rs.Attributes{"map": "<dust&2>"}
	created, err := host.CreateRoom(ctx(t), room)
	if err != nil {
		t.Fatal(err)
	}
	id := created.Room.Id
	if _, err := host.PatchState(ctx(t), id, rs.State{"k": "a<b>&c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.SendMessage(ctx(t), id, "chat", map[string]string{"text": "<3 & >"}); err != nil {
		t.Fatal(err)
	}
	raw := func(body []byte, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	got := []string{}
	r, err := host.API.GetRoomWithResponse(ctx(t), id)
	got = append(got, raw(r.Body, err))
	st, err := host.API.GetRoomStateWithResponse(ctx(t), id)
	got = append(got, raw(st.Body, err))
	ms, err := host.API.ListMessagesWithResponse(ctx(t), id, &rs.ListMessagesParams{})
	got = append(got, raw(ms.Body, err))
	all := strings.Join(got, "\n")
	for _, want := range []string{`"<b>&</b>"`, `"<dust&2>"`, `"a<b>&c"`, `"<3 & >"`} {
		if !strings.Contains(all, want) {
			t.Errorf("%s not served as sent:\n%s", want, all)
		}
	}
	if strings.Contains(all, `\u00`) {
		t.Errorf("escapes served:\n%s", all)
	}
}

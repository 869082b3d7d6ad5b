package csharptests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/eventschema"
)

// The C# SDK reads events by name, so its drift shows as names: every
// event type of openapi.yaml's RoomEvent, LobbyEvent and UserEvent (the
// personal stream) must be handled
// (named in the sources), every field of an event read (by o.X("name")
// or case "name":),
// and RoomEvent.FromJson must read no field the contract lacks.
func TestCSharpSDKFollowsTheEventContract(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	files, _ := filepath.Glob(filepath.Join("..", "Runtime", "*.cs"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	// The personal stream's fields are read by LiveMe.cs (a presence's by
	// Presence.FromJson, resumed and token_expiring by LiveStream.cs): a
	// name read elsewhere (a ticket's "matchId") is no UserEvent field.
	me, err := os.ReadFile(filepath.Join("..", "Runtime", "LiveMe.cs"))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := os.ReadFile(filepath.Join("..", "Runtime", "LiveStream.cs"))
	if err != nil {
		t.Fatal(err)
	}
	models, err := os.ReadFile(filepath.Join("..", "Runtime", "Models.cs"))
	if err != nil {
		t.Fatal(err)
	}
	presence := string(models)
	if i := strings.Index(presence, "static Presence FromJson"); i >= 0 {
		presence = presence[i:]
		presence = presence[:strings.Index(presence, "return p;")]
	} else {
		t.Fatal("Models.cs has no Presence.FromJson ... return p;")
	}
	fields := map[string]bool{}
	for _, union := range []string{eventschema.RoomUnion, eventschema.LobbyUnion, eventschema.UserUnion} {
		events, err := eventschema.Fields(doc, union)
		if err != nil {
			t.Fatal(err)
		}
		src := all.String()
		if union == eventschema.UserUnion {
			src = string(me) + string(stream) + presence
		}
		for typ, fs := range events {
			if !strings.Contains(src, `"`+typ+`"`) {
				t.Errorf("%s %q: no C# source names this event type", union, typ)
			}
			for f := range fs {
				if !strings.Contains(f, ".") && union == eventschema.RoomUnion {
					fields[f] = true
				}
				name := f[strings.LastIndexByte(f, '.')+1:]
				if !strings.Contains(src, `("`+name+`")`) && !strings.Contains(src, `case "`+name+`":`) {
					t.Errorf("%s %q: the C# SDK never reads field %q", union, typ, f)
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "Runtime", "LiveRoom.cs"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	start := strings.Index(body, "public static RoomEvent FromJson")
	end := strings.Index(body[max(start, 0):], "return e;")
	if start < 0 || end < 0 {
		t.Fatal("LiveRoom.cs has no RoomEvent.FromJson ... return e;")
	}
	reads := regexp.MustCompile(`\bo\.[A-Z][a-z]*\("([^"]+)"\)`).FindAllStringSubmatch(body[start:start+end], -1)
	if len(reads) < 10 {
		t.Fatalf("found only %d field reads in RoomEvent.FromJson", len(reads))
	}
	for _, r := range reads {
		if !fields[r[1]] {
			t.Errorf("RoomEvent.FromJson reads %q, which no event of the contract has", r[1])
		}
	}
}

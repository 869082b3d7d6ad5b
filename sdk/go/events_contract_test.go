package realsync

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/eventschema"
)

// The client's hand-written event types against the contract: every event
// type of openapi.yaml's RoomEvent and LobbyEvent is decoded into a type
// of its own (resumed is a stream notice, *Resumed), and each type has
// exactly the fields of the event's schema (nested ones too), so a field
// added to the server's events fails here until the client reads it.
func TestEventTypesFollowTheContract(t *testing.T) {
	spec, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		union string
		types map[string]func() headed
	}{{eventschema.RoomUnion, roomEventTypes}, {eventschema.LobbyUnion, lobbyEventTypes}} {
		want, err := eventschema.Fields(spec, s.union)
		if err != nil {
			t.Fatal(err)
		}
		for typ, fields := range want {
			mk, ok := s.types[typ]
			if typ == "resumed" {
				continue // handled by the stream as the *Resumed notice (lifecycle.go)
			}
			if !ok {
				t.Errorf("%s: the client has no type for %q", s.union, typ)
				continue
			}
			got := jsonFields(reflect.TypeOf(mk()).Elem(), "")
			for f := range fields {
				parent, _, nested := strings.Cut(f, ".")
				if !got[f] && !(nested && got[parent+".*"]) {
					t.Errorf("%s %q: the client does not read %q", s.union, typ, f)
				}
			}
			for f := range got {
				parent, _, nested := strings.Cut(f, ".")
				if nested && (!hasNested(fields, parent) || strings.HasSuffix(f, ".*")) {
					continue // a REST type (room, player of a snapshot): the REST schemas define it
				}
				if !fields[f] && !header[f] {
					t.Errorf("%s %q: the client reads %q, which the contract does not have", s.union, typ, f)
				}
			}
		}
		for typ := range s.types {
			if want[typ] == nil {
				t.Errorf("%s: the client knows %q, which the contract does not have (has %v)", s.union, typ, slices.Sorted(maps.Keys(want)))
			}
		}
	}
}

func hasNested(fields map[string]bool, parent string) bool {
	for f := range fields {
		if strings.HasPrefix(f, parent+".") {
			return true
		}
	}
	return false
}

// header are the Header fields every event type embeds; lobby events and
// token_expiring have only some of them.
var header = map[string]bool{"type": true, "roomId": true, "version": true, "ts": true}

// jsonFields lists the JSON field names of struct t, with the fields of a
// nested struct as "<field>.<name>", and "<field>.*" for a map (it reads
// every key).
func jsonFields(t reflect.Type, prefix string) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			maps.Copy(out, jsonFields(f.Type, prefix))
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[prefix+name] = true
		switch ft := f.Type; {
		case prefix != "":
		case ft.Kind() == reflect.Struct && ft.String() != "time.Time":
			maps.Copy(out, jsonFields(ft, name+"."))
		case ft.Kind() == reflect.Map:
			out[name+".*"] = true
		}
	}
	return out
}

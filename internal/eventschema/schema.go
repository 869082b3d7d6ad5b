// Package eventschema turns the domain's event types (rooms/events.go,
// lobby/events.go) into openapi.yaml's event schemas, and checks event
// payloads against them. openapi.yaml is the contract the SDKs are
// generated from; the event types are where the events are defined; this
// package keeps the two the same: `go generate` rewrites the schemas
// between the markers, and CI fails when they drift (the generated-code
// check).
//
// A hand-written reflector rather than a JSON Schema library: the output
// must be OpenAPI 3.0 (nullable, no const, $ref to the spec's own
// schemas), ordered as the Go types are, and small; the libraries emit
// JSON Schema 2020-12 for a standalone document.
package eventschema

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
)

// Begin and End mark the generated block in openapi.yaml's
// components.schemas.
const (
	Begin = "    # BEGIN event schemas, generated from rooms/events.go, lobby/events.go and players/events.go by `go generate`; do not edit\n"
	End   = "    # END event schemas\n"
)

// Union names of the two streams' events.
const (
	RoomUnion  = "RoomEvent"
	LobbyUnion = "LobbyEvent"
	UserUnion  = "UserEvent"
)

// stream is one event stream's union: its schema name, the prefix of its
// events' schema names, and its events.
type stream struct {
	union, prefix, doc string
	kinds              []rooms.EventKind
	parts              []any // types referred to by name from a schema tag
}

var streams = []stream{
	{RoomUnion, "", "An event of a room stream (GET /v1/rooms/{id}/events): the data of one SSE frame, whose `event:` line is its `type`.", rooms.RoomEvents, nil},
	{LobbyUnion, "Lobby", "An event of the lobby stream (GET /v1/lobby/events): the data of one SSE frame, whose `event:` line is its `type`.", lobby.Events, lobby.EventParts},
	{UserUnion, "User", "An event of the personal stream (GET /v1/me/events): the data of one SSE frame, whose `event:` line is its `type`.", players.UserEvents, nil},
}

// SchemaName is the schema of an event type in a stream: "player_joined"
// → "PlayerJoinedEvent", lobby "room_added" → "LobbyRoomAddedEvent".
func SchemaName(prefix, typ string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, w := range strings.Split(typ, "_") {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String() + "Event"
}

// gen collects the schemas in order of first use.
type gen struct {
	names []string
	defs  map[string]*yaml.Node
	types map[reflect.Type]string
}

// Block returns the generated schemas as the text that goes between the
// markers, indented for components.schemas.
func Block() ([]byte, error) {
	g := &gen{defs: map[string]*yaml.Node{}, types: map[reflect.Type]string{}}
	events := map[string]string{} // "<type> <Go type>" → schema name
	for _, s := range streams {
		union := mapping("description", scalar(s.doc))
		var one []*yaml.Node
		disc := mapping()
		for _, k := range s.kinds {
			t := reflect.TypeOf(k.New()).Elem()
			name, shared := events[k.Type+" "+t.String()] // token_expiring, on both streams
			if !shared {
				name = SchemaName(s.prefix, k.Type)
				events[k.Type+" "+t.String()] = name
				g.add(name, nil) // reserve the order: union, then its events
				g.defs[name] = g.object(t, k.Type)
			}
			one = append(one, refNode(name))
			disc.Content = append(disc.Content, scalar(k.Type), scalar("#/components/schemas/"+name))
		}
		for _, p := range s.parts {
			g.field(reflect.TypeOf(p), tag{})
		}
		union.Content = append(union.Content,
			scalar("oneOf"), seq(one...),
			scalar("discriminator"), mapping("propertyName", scalar("type"), "mapping", disc))
		g.add(s.union, union)
	}
	// unions first, then events and their parts in order of first use
	order := []string{RoomUnion, LobbyUnion, UserUnion}
	for _, n := range g.names {
		if n != RoomUnion && n != LobbyUnion && n != UserUnion {
			order = append(order, n)
		}
	}
	doc := mapping()
	for _, n := range order {
		doc.Content = append(doc.Content, scalar(n), g.defs[n])
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			out.WriteString("    " + line)
		}
	}
	return out.Bytes(), nil
}

func (g *gen) add(name string, n *yaml.Node) {
	if _, ok := g.defs[name]; !ok {
		g.names = append(g.names, name)
	}
	g.defs[name] = n
}

// object is the schema of struct t; typ, when set, pins the "type" field
// to that event type.
func (g *gen) object(t reflect.Type, typ string) *yaml.Node {
	props := mapping()
	var required []*yaml.Node
	open := false
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			if f.Name == "_" {
				open = f.Tag.Get("schema") == "open"
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
				required = append(required, scalar(name))
			}
			var s *yaml.Node
			if name == "type" && typ != "" {
				s = flow(mapping("type", scalar("string"), "enum", flowSeq(scalar(typ))))
			} else {
				s = g.field(f.Type, parseTag(f.Tag.Get("schema")))
			}
			props.Content = append(props.Content, scalar(name), s)
		}
	}
	walk(t)
	n := mapping("type", scalar("object"))
	if len(required) > 0 {
		n.Content = append(n.Content, scalar("required"), flowSeq(required...))
	}
	if !open {
		n.Content = append(n.Content, scalar("additionalProperties"), scalar("false"))
	}
	n.Content = append(n.Content, scalar("properties"), props)
	return n
}

// tag is a field's `schema` tag: comma-separated ref=, type=, format=,
// pattern= (a regular expression without commas) and nullable, then
// desc= (the rest of the tag, commas and all).
type tag struct {
	ref, typ, format, pattern, desc string
	nullable                        bool
}

func parseTag(s string) tag {
	var t tag
	if i := strings.Index(s, "desc="); i >= 0 {
		t.desc, s = s[i+len("desc="):], s[:i]
	}
	for _, p := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "ref":
			t.ref = v
		case "type":
			t.typ = v
		case "format":
			t.format = v
		case "pattern":
			t.pattern = v
		case "nullable":
			t.nullable = true
		}
	}
	return t
}

type enumer interface{ Enum() []string }

// field is the schema of a field of type t.
func (g *gen) field(t reflect.Type, tg tag) *yaml.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var n *yaml.Node
	switch {
	case tg.ref != "" && t.Kind() == reflect.Slice && !isBytes(t):
		n = mapping("type", scalar("array"), "items", refNode(tg.ref))
	case tg.ref != "":
		n = refNode(tg.ref)
		if tg.desc != "" { // $ref takes no siblings in OpenAPI 3.0
			n = mapping("allOf", seq(n))
		}
	case tg.typ != "":
		n = mapping("type", scalar(tg.typ))
	case t.Implements(reflect.TypeFor[enumer]()):
		var vals []*yaml.Node
		for _, v := range reflect.Zero(t).Interface().(enumer).Enum() {
			vals = append(vals, scalar(v))
		}
		n = mapping("type", scalar("string"), "enum", flowSeq(vals...))
	case isBytes(t):
		n = mapping() // json.RawMessage: any JSON
	case t.Kind() == reflect.String:
		n = mapping("type", scalar("string"))
	case t.Kind() == reflect.Bool:
		n = mapping("type", scalar("boolean"))
	case t.Kind() == reflect.Int64:
		n = mapping("type", scalar("integer"), "format", scalar("int64"))
	case t.Kind() == reflect.Int:
		n = mapping("type", scalar("integer"))
	case t.Kind() == reflect.Slice:
		n = mapping("type", scalar("array"), "items", g.field(t.Elem(), tag{}))
	case t.Kind() == reflect.Struct:
		name, ok := g.types[t]
		if !ok {
			name = t.Name()
			if t.PkgPath() == reflect.TypeFor[lobby.RoomsEvent]().PkgPath() {
				name = "Lobby" + name
			}
			g.types[t] = name
			g.add(name, nil)
			g.defs[name] = g.object(t, "")
		}
		n = refNode(name)
	default:
		panic(fmt.Sprintf("eventschema: no schema for %s", t))
	}
	if tg.format != "" {
		n.Content = append(n.Content, scalar("format"), scalar(tg.format))
	}
	if tg.pattern != "" {
		n.Content = append(n.Content, scalar("pattern"), scalar(tg.pattern))
	}
	if tg.nullable {
		n.Content = append(n.Content, scalar("nullable"), scalar("true"))
	}
	if tg.desc != "" {
		n.Content = append(n.Content, scalar("description"), scalar(tg.desc))
	}
	if tg.desc == "" && n.Kind == yaml.MappingNode && (len(n.Content) == 0 || n.Content[0].Value != "allOf") {
		n.Style = yaml.FlowStyle
	}
	return n
}

// isBytes: t is a []byte, as json.RawMessage.
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(kv); i += 2 {
		n.Content = append(n.Content, scalar(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

func flowSeq(items ...*yaml.Node) *yaml.Node {
	n := seq(items...)
	n.Style = yaml.FlowStyle
	return n
}

func flow(n *yaml.Node) *yaml.Node { n.Style = yaml.FlowStyle; return n }

func refNode(name string) *yaml.Node {
	return flow(mapping("$ref", scalar("#/components/schemas/"+name)))
}

// Splice returns spec with the block between the markers replaced by
// block; the markers must be there, once each.
func Splice(spec, block []byte) ([]byte, error) {
	b := bytes.Index(spec, []byte(Begin))
	e := bytes.Index(spec, []byte(End))
	if b < 0 || e < b || bytes.Count(spec, []byte(Begin)) != 1 || bytes.Count(spec, []byte(End)) != 1 {
		return nil, fmt.Errorf("eventschema: openapi.yaml must hold the markers %q and %q once each, in that order", strings.TrimSpace(Begin), strings.TrimSpace(End))
	}
	out := append([]byte{}, spec[:b+len(Begin)]...)
	out = append(out, block...)
	return append(out, spec[e:]...), nil
}

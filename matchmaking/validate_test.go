package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/rooms"
)

// noQueue is a Queue that is never to be reached: Claim, a create's first
// write, fails with errReached, and any other call but NewID panics (the
// nil Queue it embeds), so a refused ticket provably claimed and queued
// nothing.
type noQueue struct{ Queue }

func (noQueue) NewID(string, string) string { return "00test" }

var errReached = errors.New("the ticket reached the queue")

func (noQueue) Claim(context.Context, string, string, string, time.Duration) (Held, error) {
	return Held{}, errReached
}

// A ticket's partyUserIds follow the user-id grammar every route takes
// (rooms.ValidUserID), and its attributes the limits of room attributes
// (rooms.ValidAttrValue) plus booleans: a bad one is a ValidationError
// naming the field, before anything is claimed or queued; the edges pass.
func TestTicketValidation(t *testing.T) {
	rs, err := ParseRules([]byte(`
modes:
  plat:
    teams: 2
    teamSize: 3
    attributes:
      - {name: platform, equal: true}
      - {name: level, min: 10, max: 60}
`))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(Config{Queue: noQueue{}, Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	leader := rooms.User{ID: "leader", Name: "l"}
	digits := func(n int) json.Number { return json.Number("1" + strings.Repeat("0", n-1)) }
	ticket := func(party []string, attrs map[string]any) TicketParams {
		a := map[string]any{"platform": "pc", "level": json.Number("20")}
		for k, v := range attrs {
			a[k] = v
		}
		return TicketParams{Mode: "plat", Regions: []string{"eu"}, Attributes: a, PartyUserIDs: party}
	}
	for _, tc := range []struct {
		name string
		p    TicketParams
		// field is the one field refused ("" when the ticket is valid)
		field string
	}{
		{"PartySpace", ticket([]string{"a b"}, nil), "partyUserIds.0"},
		{"PartyComma", ticket([]string{"ok", "a,b"}, nil), "partyUserIds.1"},
		{"PartyTab", ticket([]string{"a\tb"}, nil), "partyUserIds.0"},
		{"PartyNotUTF8", ticket([]string{"\xff"}, nil), "partyUserIds.0"},
		{"PartyEmpty", ticket([]string{""}, nil), "partyUserIds.0"},
		{"Party100TwoByteRunes", ticket([]string{strings.Repeat("é", 100)}, nil), "partyUserIds.0"}, // 200 bytes
		{"Party129Bytes", ticket([]string{strings.Repeat("u", 129)}, nil), "partyUserIds.0"},
		{"PartyAPIKey", ticket([]string{"key:gs"}, nil), "partyUserIds.0"},
		{"PartyLeader", ticket([]string{"leader"}, nil), "partyUserIds.0"},
		{"PartyTwice", ticket([]string{"a", "a"}, nil), "partyUserIds.1"},
		{"Attr65Digits", ticket(nil, map[string]any{"x": digits(65)}), "attributes.x"},
		{"Attr69Digits", ticket(nil, map[string]any{"x": digits(69)}), "attributes.x"},
		{"AttrOverflow", ticket(nil, map[string]any{"x": json.Number("1e400")}), "attributes.x"},
		{"AttrNotJSONNumber", ticket(nil, map[string]any{"x": json.Number("0x10")}), "attributes.x"},
		{"AttrLongString", ticket(nil, map[string]any{"x": strings.Repeat("é", 129)}), "attributes.x"},
		{"AttrObject", ticket(nil, map[string]any{"x": map[string]any{"y": json.Number("1")}}), "attributes.x"},
		{"AttrNull", ticket(nil, map[string]any{"x": nil}), "attributes.x"},
		{"EqualAttr65Digits", ticket(nil, map[string]any{"platform": digits(65)}), "attributes.platform"},
		{"Party128Bytes", ticket([]string{strings.Repeat("u", 128)}, nil), ""},
		{"Party64TwoByteRunes", ticket([]string{strings.Repeat("é", 64)}, nil), ""}, // 128 bytes
		{"PartyUnicodeAndPunctuation", ticket([]string{"jöran", "u-8f2c_x.y@studio|42"}, nil), ""},
		{"Attr64Digits", ticket(nil, map[string]any{"x": digits(64)}), ""},
		{"AttrExponent", ticket(nil, map[string]any{"x": json.Number("-1.5e-300")}), ""},
		{"Attr128Characters", ticket(nil, map[string]any{"x": strings.Repeat("é", 128)}), ""},
		{"AttrBoolean", ticket(nil, map[string]any{"x": true, "platform": false}), ""},
		{"EqualAttrNumber", ticket(nil, map[string]any{"platform": json.Number("1.0")}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.field == "" {
				if err := svc.validate(leader, tc.p, rs.Of(tc.p.Mode)); err != nil {
					t.Fatalf("%v", err)
				}
				return
			}
			_, err := svc.Create(context.Background(), leader, tc.p)
			var ve *rooms.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Fatalf("%v, want a validation error on %s alone", err, tc.field)
			}
		})
	}
}

// follows is a Consent of the pairs it holds ("member leader"), or err.
type follows struct {
	pairs map[string]bool
	err   error
}

func (f follows) Consents(_ context.Context, member, leader string) (bool, error) {
	return f.pairs[member+" "+leader], f.err
}

func (follows) Refusal() string { return "does not follow you" }

// goneQueue is a noQueue that keeps no ticket (a keyed create's first
// run).
type goneQueue struct{ noQueue }

func (goneQueue) Get(context.Context, string) (Ticket, error) { return Ticket{}, ErrTicketNotFound }

// getsCounted is a Queue that counts its Gets.
type getsCounted struct {
	Queue
	gets *int
}

func (q getsCounted) Get(ctx context.Context, id string) (Ticket, error) {
	*q.gets++
	return q.Queue.Get(ctx, id)
}

// keptQueue is a noQueue that keeps a ticket of every id (a keyed
// create's first run queued it).
type keptQueue struct{ noQueue }

func (keptQueue) Get(_ context.Context, id string) (Ticket, error) {
	return Ticket{ID: id, Mode: "big", Regions: []string{"eu"}, Status: Searching}, nil
}

// With Config.Consent, Create and Prepare refuse a party member who
// does not follow the leader (ErrPartyConsent naming the first such
// member), and a lookup's error, before anything is claimed; a party
// every member of which follows the leader reaches the queue, as does
// any party without Consent. Prepare reads a keyed create's first run
// once, an unkeyed create's never.
func TestPartyConsent(t *testing.T) {
	leader := rooms.User{ID: "leader", Name: "l"}
	consenting := follows{pairs: map[string]bool{"a leader": true, "b leader": true, "c other": true}}
	for _, tc := range []struct {
		name    string
		consent Consent
		party   []string
		key     string
		kept    bool // the key's first run queued its ticket
		want    error
		detail  string
	}{
		{name: "Off", party: []string{"x", "y"}, want: errReached},
		{name: "NoParty", consent: follows{}, want: errReached},
		{name: "AllFollow", consent: consenting, party: []string{"a", "b"}, want: errReached},
		{name: "OneDoesNot", consent: consenting, party: []string{"a", "c", "b"}, want: ErrPartyConsent, detail: "partyUserIds.1 does not follow you"},
		{name: "TwoDoNot", consent: consenting, party: []string{"a", "c", "d"}, want: ErrPartyConsent, detail: "partyUserIds.1 does not follow you"},
		{name: "LookupFails", consent: follows{err: rooms.ErrUnavailable}, party: []string{"a"}, want: rooms.ErrUnavailable},
		// a keyed create run again: its first run's ticket, whatever the
		// follows say now (its consent asked then)
		{name: "KeyedRunAgain", consent: consenting, party: []string{"c"}, key: "k1", kept: true},
		{name: "KeyedFirstRun", consent: consenting, party: []string{"c"}, key: "k1", want: ErrPartyConsent, detail: "partyUserIds.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := ParseRules([]byte("modes:\n  big: {minPlayers: 2, maxPlayers: 8}\n"))
			if err != nil {
				t.Fatal(err)
			}
			var q Queue = noQueue{}
			if tc.kept {
				q = keptQueue{}
			} else if tc.key != "" {
				q = goneQueue{}
			}
			gets := 0
			svc, err := NewService(Config{Queue: getsCounted{q, &gets}, Rules: rs, Consent: tc.consent})
			if err != nil {
				t.Fatal(err)
			}
			p := TicketParams{Mode: "big", Regions: []string{"eu"}, PartyUserIDs: tc.party, Key: tc.key}
			got, err := svc.Create(t.Context(), leader, p)
			if tc.kept && (err != nil || got.ID != "00test") || !tc.kept && (!errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.detail)) {
				t.Fatalf("Create: %+v %v, want %v (%q)", got, err, tc.want, tc.detail)
			}
			gets = 0
			c, verr := svc.Prepare(t.Context(), leader, p, false)
			want := 0
			if tc.key != "" {
				want = 1
			}
			if gets != want {
				t.Errorf("Prepare read the queue %d times, want %d (a keyed create's first run once)", gets, want)
			}
			if wantV := tc.want; (wantV == errReached || wantV == nil) && verr != nil || wantV != errReached && wantV != nil && !errors.Is(verr, wantV) || c.Found != tc.kept {
				t.Fatalf("Prepare: %v (found %v), want %v (found %v)", verr, c.Found, tc.want, tc.kept)
			}
		})
	}
}

// together is a Consent whose answers wait until n lookups are under way
// at once (1 s at most: then it fails them).
type together struct {
	n       int
	mu      sync.Mutex
	arrived chan struct{}
}

func (c *together) Consents(ctx context.Context, _, _ string) (bool, error) {
	c.mu.Lock()
	if c.n--; c.n == 0 {
		close(c.arrived)
	}
	c.mu.Unlock()
	select {
	case <-c.arrived:
		return true, nil
	case <-time.After(time.Second):
		return false, errors.New("the lookups came one after the other")
	}
}

func (*together) Refusal() string { return "" }

// A party's members are asked at once, not one round trip after the
// other.
func TestPartyConsentAsksTheMembersAtOnce(t *testing.T) {
	rs, err := ParseRules([]byte("modes:\n  big: {minPlayers: 2, maxPlayers: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	party := []string{"a", "b", "c", "d", "e"}
	svc, err := NewService(Config{Queue: noQueue{}, Rules: rs, Consent: &together{n: len(party), arrived: make(chan struct{})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Prepare(t.Context(), rooms.User{ID: "leader", Name: "l"}, TicketParams{Mode: "big", Regions: []string{"eu"}, PartyUserIDs: party}, false); err != nil {
		t.Fatal(err)
	}
}

// asks is a Consent that counts its lookups.
type asks struct {
	Consent
	n *atomic.Int32
}

func (a asks) Consents(ctx context.Context, member, leader string) (bool, error) {
	a.n.Add(1)
	return a.Consent.Consents(ctx, member, leader)
}

// A create sent again under its key (its answer kept: sentAgain) is
// answered its first run's ticket, its body not checked again (the rules
// may have changed), or ErrTicketNotFound once that ticket is gone;
// Enqueue takes only a create that Prepare checked and did not find; a
// create asks each party member's consent once.
func TestPrepareAndEnqueue(t *testing.T) {
	rs, err := ParseRules([]byte("modes:\n  big: {minPlayers: 2, maxPlayers: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	leader := rooms.User{ID: "leader", Name: "l"}
	bad := TicketParams{Mode: "big", Regions: []string{"eu"}, PartyUserIDs: []string{""}, Key: "k1"}
	svc := func(q Queue, c Consent) *Service {
		s, err := NewService(Config{Queue: q, Rules: rs, Consent: c})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kept := svc(keptQueue{}, nil)
	c, err := kept.Prepare(t.Context(), leader, bad, true)
	if err != nil || !c.Found || c.First.ID != "00test" || !c.First.Again {
		t.Fatalf("sent again, first run kept: %+v %v, want its ticket", c, err)
	}
	if _, err := kept.Enqueue(t.Context(), c); err == nil {
		t.Fatal("Enqueue of a found create: no error")
	}
	var ve *rooms.ValidationError
	if _, err := kept.Prepare(t.Context(), leader, bad, false); !errors.As(err, &ve) {
		t.Fatalf("a first send of a bad body: %v, want a ValidationError", err)
	}
	good := bad
	good.PartyUserIDs = nil
	if _, err := svc(goneQueue{}, nil).Prepare(t.Context(), leader, good, true); !errors.Is(err, ErrTicketNotFound) {
		t.Fatalf("sent again, ticket gone: %v, want ErrTicketNotFound", err)
	}
	if _, err := svc(noQueue{}, nil).Enqueue(t.Context(), Prepared{}); err == nil || errors.Is(err, errReached) {
		t.Fatalf("Enqueue of a create Prepare did not answer: %v, want refused before the queue", err)
	}
	var n atomic.Int32
	party := TicketParams{Mode: "big", Regions: []string{"eu"}, PartyUserIDs: []string{"a", "b"}}
	followers := asks{follows{pairs: map[string]bool{"a leader": true, "b leader": true}}, &n}
	if _, err := svc(noQueue{}, followers).Create(t.Context(), leader, party); !errors.Is(err, errReached) {
		t.Fatalf("Create: %v, want it to reach the queue", err)
	}
	if n.Load() != 2 {
		t.Fatalf("Create asked %d times for a party of 2, want once each", n.Load())
	}
}

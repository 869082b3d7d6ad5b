package limits

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	def := Defaults()
	tests := []struct {
		name string
		in   string
		want map[string]Limit // keys that must hold these limits (others: defaults)
		off  bool
		err  string // a part of the error; "" for none
	}{
		{name: "EmptyIsDefaults", in: "", want: map[string]Limit{}},
		{name: "Off", in: "off", off: true},
		{name: "BareNameSetsUser", in: "create=10/m", want: map[string]Limit{"create.user": per(10, time.Minute, 10), "create.ip": def.Limits["create.ip"]}},
		{name: "BareAuthSetsIP", in: "auth=5/s", want: map[string]Limit{"auth.ip": per(5, time.Second, 5)}},
		{name: "BareMessagesSetsRoom", in: "messages=50/s:burst=80", want: map[string]Limit{"messages.room": per(50, time.Second, 80)}},
		{name: "Burst", in: "join=60/m:burst=10", want: map[string]Limit{"join.user": per(60, time.Minute, 10)}},
		{name: "Several", in: " create=10/m , read=20/s,read.ip=1000/h:burst=5 ",
			want: map[string]Limit{"create.user": per(10, time.Minute, 10), "read.user": per(20, time.Second, 20), "read.ip": per(1000, time.Hour, 5)}},
		{name: "OneOff", in: "guess.ip=off", want: map[string]Limit{"guess.ip": {}, "guess.user": def.Limits["guess.user"]}},
		{name: "UnknownName", in: "creat=10/m", err: `unknown limit "creat"`},
		{name: "UnknownScope", in: "opens.ip=10/m", err: `opens has no scope "ip"`},
		{name: "RoomScopeOnClass", in: "read.room=1/s", err: `read has no scope "room"`},
		{name: "NoEquals", in: "create", err: "no '='"},
		{name: "NoUnit", in: "create=10", err: "is not count/s"},
		{name: "BadUnit", in: "create=10/d", err: `unit "d"`},
		{name: "ZeroRate", in: "create=0/s", err: `count "0"`},
		{name: "NegativeRate", in: "create=-1/s", err: `count "-1"`},
		{name: "HugeRate", in: "create=1000001/s", err: `count "1000001"`},
		{name: "FractionRate", in: "create=1.5/s", err: `count "1.5"`},
		{name: "BadBurstWord", in: "create=1/s:bust=3", err: `"bust=3" is not burst=count`},
		{name: "ZeroBurst", in: "create=1/s:burst=0", err: `count "0"`},
		{name: "Twice", in: "create=1/s,create.user=2/s", err: "create.user is set twice"},
		{name: "OffAmongOthers", in: "create=1/s,off", err: `"off": no '='`},
		{name: "EveryBadItemReported", in: "x=1/s,create=1/q", err: `write); "create=1/q": unit "q"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got.Off != tt.off {
				t.Fatalf("Off = %v, want %v", got.Off, tt.off)
			}
			if tt.off {
				if l := got.Get("read", User); !l.Zero() {
					t.Fatalf("off set still limits read: %+v", l)
				}
				return
			}
			for k, d := range def.Limits {
				want, set := tt.want[k]
				if !set {
					want = d
				}
				if got.Limits[k] != want {
					t.Errorf("%s = %+v, want %+v", k, got.Limits[k], want)
				}
			}
		})
	}
}

// Every default limit round-trips through String and Parse, and every
// known name has a default for each of its scopes.
func TestDefaultsComplete(t *testing.T) {
	def := Defaults()
	for name, scopes := range known {
		for _, sc := range scopes {
			l := def.Get(name, sc)
			if l.Zero() || l.Burst < 1 || l.Interval() <= 0 {
				t.Errorf("%s.%s: default %+v", name, sc, l)
			}
		}
	}
	back, err := Parse(def.String())
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range def.Limits {
		if back.Limits[k] != l {
			t.Errorf("%s: %+v after a round trip, want %+v", k, back.Limits[k], l)
		}
	}
	if len(def.Limits) != 19 {
		t.Errorf("%d defaults, want 19", len(def.Limits))
	}
}

func TestMemberShare(t *testing.T) {
	for _, tt := range []struct{ in, want Limit }{
		{per(20, time.Second, 40), per(10, time.Second, 20)},
		{per(1, time.Second, 1), per(1, time.Second, 1)},
		{per(3, time.Minute, 5), per(1, time.Minute, 2)},
	} {
		if got := MemberShare(tt.in); got != tt.want {
			t.Errorf("MemberShare(%+v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

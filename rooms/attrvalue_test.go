package rooms

import (
	"encoding/json"
	"testing"
)

// Attribute values are equal by their canonical form: numbers by value,
// whatever their spelling; strings exactly, never equal to a number;
// booleans as booleans. For numbers it agrees with an attribute filter's
// equality (attr.<key>=<number>), the rule rooms already had.
func TestAttrValueKey(t *testing.T) {
	n := func(s string) any { return json.Number(s) }
	for _, tc := range []struct {
		name  string
		a, b  any
		equal bool
	}{
		{"OneAndOnePointZero", n("1"), n("1.0"), true},
		{"OneAndExponent", n("1"), n("1e0"), true},
		{"OneAndScaledExponent", n("1"), n("10E-1"), true},
		{"NegativeZero", n("-0"), n("0.0"), true},
		{"LargeSpellings", n("1e21"), n("1000000000000000000000"), true},
		{"Fraction", n("0.5"), n("5e-1"), true},
		{"DecodedFloat", n("1.0"), 1.0, true},
		{"Int", n("2.00"), 2, true},
		{"OneAndTwo", n("1"), n("2"), false},
		{"CloseButNotEqual", n("0.1"), n("0.10000000000000002"), false},
		{"StringIsNotNumber", "1", n("1"), false},
		{"StringsExact", "pc", "pc", true},
		{"StringCase", "pc", "PC", false},
		{"StringSpelling", "1.0", "1", false},
		{"Booleans", true, true, true},
		{"BooleanIsNotString", true, "true", false},
		{"BooleanIsNotNumber", false, n("0"), false},
		{"AbsentIsNull", nil, nil, true},
		{"AbsentIsNotZero", nil, n("0"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := AttrValueKey(tc.a), AttrValueKey(tc.b)
			if (ka == kb) != tc.equal {
				t.Fatalf("%#v is %s, %#v is %s: equal %v, want %v", tc.a, ka, tc.b, kb, ka == kb, tc.equal)
			}
			// a filter attr.x=<a> on a room whose x is b: the same answer
			num, isNum := tc.a.(json.Number)
			if _, bIsBool := tc.b.(bool); isNum && tc.b != nil && !bIsBool {
				eq := num.String()
				f := AttrFilter{Key: "x", Eq: &eq}
				if got := f.Match(map[string]any{"x": tc.b}); got != tc.equal {
					t.Fatalf("filter x=%s on %#v: %v, AttrValueKey says %v", eq, tc.b, got, tc.equal)
				}
			}
		})
	}
	if k := AttrValueKey(json.Number("1.0")); k != "1" {
		t.Fatalf("1.0 is %s, want 1 (what encoding/json writes for 1)", k)
	}
}

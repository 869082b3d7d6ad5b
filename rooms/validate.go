package rooms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
)

// Documented limits.
const (
	DefaultMaxPlayers = 8
	// MaxPlayersLimit bounds a room's seats. The Redis store's fill
	// indexes count seats down from it in three digits
	// (store/internal/layout.FillSeats, which writes it into the scripts):
	// below 1 000, and a change of it is a change of the store's key
	// schema.
	MaxPlayersLimit = 100
	MaxAttributes   = 16
	MaxStateValue   = 8 << 10  // bytes of compacted JSON per state value
	MaxStateKeys    = 256      // keys per room state
	MaxStateBytes   = 64 << 10 // keys + compacted values per room state
	// MaxStreamsPerPlayer bounds the event streams one player holds open
	// in one room at once (each is a presence lease in the room).
	MaxStreamsPerPlayer = 8
)

var (
	slugRe     = regexp.MustCompile(NamePattern)
	attrKeyRe  = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
	stateKeyRe = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	roomIDRe   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
)

// messages turns validator tags into the messages clients read.
var messages = map[string]string{
	"min":       "is too short or too small",
	"max":       "is too long or too large",
	"nocontrol": "must not contain control characters",
	"name":      "must not contain " + NameControlRule,
	"shows":     ShowsRule,
	"slug":      NameRule,
	"oneof":     "must be one of: ",
	"attrkey":   "key must match ^[A-Za-z0-9_]{1,32}$ and not be __proto__",
	"attrvalue": "must be a string of at most 128 characters or a finite number",
	"attrtext":  "must not contain " + NameControlRule,
	"unique":    "must not repeat a value",
	"userid":    UserIDRule,
}

// newValidator builds the validator with RealSync's custom rules and JSON
// field names. It is built once per Service.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		return strings.Split(f.Tag.Get("json"), ",")[0]
	})
	must(v.RegisterValidation("nocontrol", func(fl validator.FieldLevel) bool { return !hasControl(fl.Field().String()) }))
	must(v.RegisterValidation("name", func(fl validator.FieldLevel) bool {
		return !strings.ContainsFunc(fl.Field().String(), NameControl)
	}))
	must(v.RegisterValidation("shows", func(fl validator.FieldLevel) bool { return Shows(fl.Field().String()) }))
	must(v.RegisterValidation("slug", func(fl validator.FieldLevel) bool { return slugRe.MatchString(fl.Field().String()) }))
	must(v.RegisterValidation("attrkey", func(fl validator.FieldLevel) bool {
		return attrKeyRe.MatchString(fl.Field().String()) && fl.Field().String() != protoKey // as a state key's
	}))
	must(v.RegisterValidation("userid", func(fl validator.FieldLevel) bool { return ValidUserID(fl.Field().String()) }))
	must(v.RegisterValidation("attrvalue", func(fl validator.FieldLevel) bool { return ValidAttrValue(fl.Field().Interface()) }))
	must(v.RegisterValidation("attrtext", func(fl validator.FieldLevel) bool { return AttrText(fl.Field().Interface()) }))
	// the ranges of seats and recipients, from their one source above
	v.RegisterAlias("seats", fmt.Sprintf("min=1,max=%d", MaxPlayersLimit))
	v.RegisterAlias("recipients", fmt.Sprintf("min=1,max=%d", MaxRecipients))
	return v
}

// NameControlRule names what NameControl refuses, as a field error states it.
const NameControlRule = "control characters, bidirectional formatting characters " +
	"(U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) or line and paragraph separators (U+2028, U+2029)"

// NameControl reports whether r may not appear in a name others see (a
// room's, a player's display name): a control character (Cc: NUL, ESC,
// ...), a bidirectional formatting one (Bidi_Control: the right-to-left
// override U+202E and its kin), which would reorder what other players
// see around the name (in a lobby's list, "Join \u202Eevil" reads
// "Join live"), or a line or paragraph separator (U+2028, U+2029), which
// would start a line of its own ("Alice\u2028[system] banned").
func NameControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// ShowsRule is Shows as a field error states it.
const ShowsRule = "must show at least one visible character (not only white space, format characters such as U+200B, " +
	"combining marks, or invisible fillers such as U+3164 and U+2800)"

// Shows reports whether s holds a visible character (invisible), as every
// name others see must (rooms', players'): one of only white space, format
// characters (zero-width spaces, U+FEFF), marks or fillers would show them
// an empty or blank name, one to pass for nobody or for another.
func Shows(s string) bool { return strings.ContainsFunc(s, func(r rune) bool { return !invisible(r) }) }

// invisible reports whether r draws nothing by itself: white space (Zs,
// Zl, Zp), a control, format or surrogate code point (Cc, Cf, Cs), a
// non-spacing or enclosing mark (Mn, Me: nothing without a base), one of
// Unicode's Other_Default_Ignorable_Code_Point (the Hangul fillers U+115F,
// U+1160, U+3164, U+FFA0, the combining grapheme joiner U+034F), or a
// blank symbol: the braille pattern blank U+2800, the musical null
// notehead U+1D159, the object replacement U+FFFC. Anything else is
// visible, a code point Go's Unicode tables do not know yet included (an
// emoji of Unicode 16, say): an allow-list of categories would refuse it.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Cc, unicode.Cf, unicode.Cs, unicode.Mn, unicode.Me) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == '\u2800' || r == '\U0001D159' || r == '\uFFFC'
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// ValidAttrValue reports whether v may be an attribute's value: a string
// of at most 128 characters or a finite number, a json.Number of at most
// 64 characters in JSON's number syntax (FiniteNumber: 1e400 would be
// stored as text no client could read back). Room attributes and tickets'
// attributes (which also take booleans) hold to it.
func ValidAttrValue(v any) bool {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x) <= 128
	case json.Number:
		_, ok := FiniteNumber(x.String())
		return ok
	case float64:
		return !math.IsInf(x, 0) && !math.IsNaN(x)
	case int:
		return true
	}
	return false
}

// AttrText reports whether room attribute value v, when a string, holds
// no NameControl character: a room's attributes show in lobbies as its
// name does, so a NUL, a line break or a right-to-left override U+202E
// in one would do there what it would in the name (NameControlRule says
// what is refused, as for names). A number passes. Room attributes hold
// to it (create, update, a quick-join's create and the filtered values
// it fills in); tickets' attributes, which no other player sees, do not.
func AttrText(v any) bool {
	s, ok := v.(string)
	return !ok || !strings.ContainsFunc(s, NameControl)
}

// structErrors runs v on s and converts its findings into field errors named
// by JSON path, with limits spelled out.
func structErrors(v *validator.Validate, s any) fieldErrors {
	err := v.Struct(s)
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return nil
	}
	var out fieldErrors
	for _, fe := range verrs {
		out.add(fieldPath(fe), "%s", message(fe))
	}
	return out
}

// fieldPath turns "CreateParams.attributes[map]" into "attributes.map".
func fieldPath(fe validator.FieldError) string {
	ns := fe.Namespace()
	if i := strings.IndexByte(ns, '.'); i >= 0 {
		ns = ns[i+1:]
	}
	ns = strings.ReplaceAll(ns, "[", ".")
	return strings.ReplaceAll(ns, "]", "")
}

// rangeMessages state a field's whole range when it breaks min or max.
var rangeMessages = map[string]string{
	"name":       "must be 1..64 characters",
	"maxPlayers": fmt.Sprintf("must be 1..%d", MaxPlayersLimit),
	"attributes": "must have at most 16 entries",
	"type":       "must be 1..32 characters",
	"to":         fmt.Sprintf("must name 1..%d players", MaxRecipients),
	"regions":    "must list 1..10 regions",
}

func message(fe validator.FieldError) string {
	switch fe.ActualTag() {
	case "min", "max":
		if m, ok := rangeMessages[fe.Field()]; ok {
			return m
		}
		return limitMessage(fe)
	case "oneof":
		return messages["oneof"] + strings.ReplaceAll(fe.Param(), " ", ", ")
	}
	if m, ok := messages[fe.ActualTag()]; ok {
		return m
	}
	return "is invalid"
}

func limitMessage(fe validator.FieldError) string {
	switch fe.Kind() {
	case reflect.String:
		return "must be " + fe.ActualTag() + "imum " + fe.Param() + " characters"
	case reflect.Map:
		return "must have at " + map[string]string{"min": "least ", "max": "most "}[fe.ActualTag()] + fe.Param() + " entries"
	}
	return "must be " + map[string]string{"min": "at least ", "max": "at most "}[fe.ActualTag()] + fe.Param()
}

// ValidRoomID reports whether id has the documented form; anything else is
// not found without asking the store.
func ValidRoomID(id string) bool { return roomIDRe.MatchString(id) }

// validateState checks keys and value sizes of a full state (nulls refused)
// or a merge patch (nulls allowed, meaning delete), naming fields
// "<field>.<key>". Its values are those to store, compacted (compact):
// MaxStateValue counts the bytes stored, as MaxStateBytes does.
func validateState(field string, s State, patch bool) fieldErrors {
	var out fieldErrors
	for k, v := range s {
		name := field + "." + k
		if field == "" {
			name = k
		}
		switch {
		case !stateKeyRe.MatchString(k):
			out.add(name, "key must match ^[A-Za-z0-9_.:-]{1,64}$")
		case k == protoKey && !(patch && isNull(v)):
			out.add(name, "key must not be __proto__: JavaScript clients would set their state object's prototype, not a key (a patch may delete it)")
		case len(v) > MaxStateValue:
			out.add(name, "value must be at most %d bytes of JSON once compacted", MaxStateValue)
		case !FiniteNumbers(v):
			out.add(name, "value "+finiteRule)
		case !patch && isNull(v):
			out.add(name, "must not be null in a new room's state")
		}
	}
	return out
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

// protoKey is the state (and attribute) key JavaScript's objects read as their prototype:
// set with Object.assign, it changed every open client's state object's
// prototype (a tester's find: a patch of {"__proto__": {"player_1_ready":
// true, ...}} showed every player ready, and its delete did not undo it).
// Refused in a state; a patch may delete it from a room that holds one.
const protoKey = "__proto__"

// FiniteNumbers reports whether every number of JSON text v (valid JSON)
// is a finite float64. A number past ±1.7976931348623157e308 (1e400, an
// integer of 400 digits) is valid JSON that JavaScript reads as Infinity
// and the Go and C# SDKs fail to read: held in a room's state or a
// message, it failed every such client's stream at every reconnect (a
// tester's find). State values and message data hold to it, as
// attributes do (ValidAttrValue).
func FiniteNumbers(v []byte) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(v) && strings.IndexByte("+-.eE0123456789", v[j]) >= 0 {
				j++
			}
			// no exponent and 15 characters at most: below 1e15 whatever
			if j-i > 15 || bytes.ContainsAny(v[i:j], "eE") {
				if _, err := strconv.ParseFloat(string(v[i:j]), 64); err != nil {
					return false // out of range (an underflow reads as 0: no error)
				}
			}
			i = j - 1
		}
	}
	return true
}

// finiteRule is what a field whose JSON holds a number out of range is told.
const finiteRule = "must hold no number beyond ±1.7976931348623157e308 (a finite double)"

// StateTotals returns the number of keys and bytes (keys + values) a state
// holds, as the totals limits count them.
func StateTotals(s State) (keys, bytes int) {
	for k, v := range s {
		keys++
		bytes += len(k) + len(v)
	}
	return keys, bytes
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/realsync/realsync/rooms"
)

const (
	jsonType       = "application/json"
	mergePatchType = "application/merge-patch+json"
)

// decodeBody decodes a JSON object body into dst. Content-Type must be one
// of types (415); the body must be one JSON object of the right types
// (400); an unknown field is a validation failure naming it (422). With
// optional, an empty body leaves dst as it is.
func decodeBody(r *http.Request, dst any, optional bool, types ...string) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("reading body: %w", errMalformed)
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkContentType(r, types); err != nil {
		return err
	}
	return decodeJSONObject(body, dst)
}

// checkContentType accepts a body of one of types, in UTF-8 (RFC 8259: a
// charset parameter, if any, must say so, as utf-8 or utf8, the WHATWG
// label some clients send; one naming another charset was decoded as
// UTF-8 all the same), sent as it is: a Content-Encoding other than
// identity (a gzip body was refused as malformed JSON, 400) is 415 with
// Accept-Encoding: identity, as RFC 9110 answers a content coding the
// server does not take. Content-Type sent twice is 415 too: which one
// counts would depend on the proxies on the way (the first was taken).
func checkContentType(r *http.Request, types []string) error {
	if n := len(r.Header.Values("Content-Type")); n > 1 {
		return fmt.Errorf("content-Type sent %d times: send it once: %w", n, errUnsupportedMedia)
	}
	for _, ce := range r.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(ce, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				return fmt.Errorf("content-Encoding %q is not accepted: send the body unencoded: %w", c, errContentCoding)
			}
		}
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	for _, t := range types {
		if err == nil && mt == t {
			if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
				return fmt.Errorf("charset %q is not accepted: JSON bodies are UTF-8: %w", cs, errUnsupportedMedia)
			}
			return nil
		}
	}
	return fmt.Errorf("content-Type must be %s: %w", strings.Join(types, " or "), errUnsupportedMedia)
}

// decodeJSONObject is decodeBody's JSON part, exposed for fuzzing. It
// decodes strictly (github.com/go-json-experiment/json, the maintained
// module of encoding/json/v2): member names match the struct's JSON names
// exactly (encoding/json would let {"NAME":..} set name), a name repeated
// anywhere in the body, state values and message data included, is
// refused (400 naming it), invalid UTF-8 is refused rather than replaced,
// and numbers decoded into interface values stay json.Number (exact, as
// encoding/json's UseNumber kept them). An unknown member is a validation
// failure naming it (422), as before. A byte-order mark before the object
// is refused, and named (RFC 8259 lets a parser ignore one; none of the
// SDKs sends one, and "must be a JSON object" misled an abuse tester).
func decodeJSONObject(body []byte, dst any) error {
	trimmed := bytes.TrimSpace(body)
	if bytes.HasPrefix(trimmed, []byte("\uFEFF")) {
		return fmt.Errorf("the body starts with a byte-order mark (U+FEFF): send the JSON object without one: %w", errMalformed)
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("body must be a JSON object: %w", errMalformed)
	}
	if depth := nesting(trimmed); depth > MaxBodyDepth {
		return fmt.Errorf("the body nests objects and arrays %d deep, more than %d: %w", depth, MaxBodyDepth, errMalformed)
	}
	if err := jsonv2.Unmarshal(trimmed, dst, strictJSON); err != nil {
		// Decoding stops at the first error; a body that is malformed
		// further on (a repeated name after an unknown one) is malformed.
		if _, synErr := jsontext.NewDecoder(bytes.NewReader(trimmed)).ReadValue(); synErr != nil {
			return jsonError(synErr)
		}
		return jsonError(err)
	}
	return refuseNulls(trimmed, reflect.TypeOf(dst))
}

// MaxBodyDepth is how deep a request body may nest objects and arrays,
// itself the first: state values, message data and attributes within it
// somewhat less. A value that every SDK can read back: the C# SDK's
// parser stops at 256 (sdk/csharp/Runtime/Json.cs) and refused the snapshot of a
// room whose state a member had nested 300 deep, on every reconnect (an
// abuse tester's find; encoding/json and jsonv2 take 10 000).
const MaxBodyDepth = 32

// nesting is how deep body nests objects and arrays at most (a body
// jsonv2 then decodes: one that is malformed past the limit is refused
// as too deep, a malformed body all the same). A scan of the bytes, in
// and out of strings, escapes included: no allocation.
func nesting(body []byte) int {
	depth, most, inString := 0, 0, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}

// refuseNulls refuses a null given for a field of struct t (or of a
// struct within it), body having decoded into t: no field of a request is
// nullable (openapi.yaml), and jsonv2 decodes null as the field's zero
// value, the same as the field left out, so {"attributes":null} changed
// nothing and was answered 200. Free JSON keeps its nulls: a map's values
// (state values, where a merge patch's null deletes the key, and
// attributes, checked by their own rules) and json.RawMessage or interface
// fields (message data, checked by its own). A walk of the tokens beside
// the decoding, made only for structs: a jsonv2 unmarshaler for every
// value cost an allocation each (a state patch's 48 became 113); the walk
// is made only for a body with "null" in it.
func refuseNulls(body []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !bytes.Contains(body, []byte("null")) {
		return nil // most bodies: no walk
	}
	return nullsIn(jsontext.NewDecoder(bytes.NewReader(body)), t, "")
}

// nullsIn walks the object d is at, decoded into struct t, at path (the
// dotted form of field errors; "" the top level).
func nullsIn(d *jsontext.Decoder, t reflect.Type, path string) error {
	if _, err := d.ReadToken(); err != nil { // '{': decoded already, so well formed
		return nil
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil
		}
		name := tok.String()
		ft, ok := fieldType(t, name)
		field := name
		if path != "" {
			field = path + "." + name
		}
		for ok && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case d.PeekKind() == 'n' && ok && ft.Kind() != reflect.Interface && ft != rawMessageType:
			return fmt.Errorf("%q must be %s, not null: leave it out instead (no field takes null): %w", field, jsonKind(ft.Kind().String()), errMalformed)
		case d.PeekKind() == '{' && ok && ft.Kind() == reflect.Struct:
			if err := nullsIn(d, ft, field); err != nil {
				return err
			}
		default:
			if d.SkipValue() != nil {
				return nil
			}
		}
	}
	_, _ = d.ReadToken() // '}'
	return nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// fieldType is the type of t's field named name in JSON (its json tag's
// name, else its Go name: as jsonv2 matches them, exactly).
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// strictJSON are the options of decodeJSONObject. Duplicate names and
// case-sensitive matching are jsonv2's defaults; they are not repeated.
var strictJSON = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(true), jsonv2.WithUnmarshalers(exactNumbers))

// exactNumbers decodes a JSON number into an interface value as the
// json.Number of its text (jsonv2 would make it a float64, rounding large
// integers); anything else is left to the default.
var exactNumbers = jsonv2.UnmarshalFromFunc(func(d *jsontext.Decoder, v *any) error {
	if d.PeekKind() != '0' {
		return errors.ErrUnsupported
	}
	tok, err := d.ReadToken()
	if err != nil {
		return err
	}
	*v = json.Number(tok.String())
	return nil
})

// jsonError turns a decoding error into the client's error: a duplicate
// name, bad syntax or a value of the wrong type is malformed (400), an
// unknown member a validation failure (422); each names where it is.
func jsonError(err error) error {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		if errors.Is(syn.Err, jsontext.ErrDuplicateName) {
			return fmt.Errorf("body repeats the key %q (at %s): %w", lastToken(syn.JSONPointer), pointer(syn.JSONPointer), errMalformed)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("body is not valid JSON: it ends too early: %w", errMalformed)
		}
		return fmt.Errorf("body is not valid JSON at byte %d (%s): %w", syn.ByteOffset, pointer(syn.JSONPointer), errMalformed)
	}
	var sem *jsonv2.SemanticError
	if errors.As(err, &sem) {
		field := fieldName(sem.JSONPointer)
		if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
			return rooms.Invalid(field, "is not a known field")
		}
		if sem.GoType != nil {
			want := jsonKind(sem.GoType.Kind().String())
			if sem.JSONKind == '0' && (want == "a number" || want == "an integer") {
				// the right kind, but 3.0, 1e3 or out of range
				return fmt.Errorf("%q must be %s written in digits, in range: %w", field, want, errMalformed)
			}
			return fmt.Errorf("%q must be %s, not %s: %w", field, want, jsonValueKind(sem.JSONKind), errMalformed)
		}
	}
	return fmt.Errorf("body is not valid JSON: %w", errMalformed)
}

// fieldName is a JSON pointer in the dotted form of field errors
// ("/attributes/rank" is "attributes.rank"; the root is "body").
func fieldName(p jsontext.Pointer) string {
	if p == "" {
		return "body"
	}
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	return strings.Join(parts, ".")
}

func pointer(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return fieldName(p)
}

func lastToken(p jsontext.Pointer) string {
	last := ""
	for tok := range p.Tokens() {
		last = tok
	}
	return last
}

// jsonValueKind names the JSON value a client sent.
func jsonValueKind(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "another value"
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "int", "int64":
		return "an integer"
	case "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return "of another type"
}

package api

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// strictToken refuses a JWT (an identity or a stream token) whose header
// or claims JSON the JWT library would read more loosely than RFC 7515
// and 7519 allow, before its signature is checked:
//
//   - a name repeated in the header or the claims, at any depth, also one
//     repeated in another case ({"sub":"a","SUB":"b"}: the claims are read
//     case-insensitively): the library keeps the last, a studio's own
//     login may read the first, so the two would disagree on what was
//     signed ({"alg":"none","alg":"RS256"} was verified as RS256);
//   - a crit header: it names extensions the verifier must understand, and
//     none is (RFC 7515, 4.1.11: such a token must be refused);
//   - exp, nbf or iat that is no JSON number (a NumericDate; the library
//     took "1795978000", a string, for one).
//
// A token that is no three base64url parts of JSON objects is left to the
// parser, which refuses it as malformed. The error, a looseJWT, says which
// rule, never what the token holds.
func strictToken(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	for i, part := range parts[:2] {
		raw, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil {
			return nil
		}
		if err := strictSegment(raw, i == 0); err != nil {
			return looseJWT{err}
		}
	}
	return nil
}

// strictSegment checks one decoded segment: the header when header, else
// the claims.
func strictSegment(raw []byte, header bool) error {
	what := "claims"
	if header {
		what = "header"
	}
	d := jsontext.NewDecoder(bytes.NewReader(raw)) // a repeated name, at any depth, is an error
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return fmt.Errorf("its %s must be a JSON object", what)
	}
	seen := map[string]bool{}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return segmentError(what, err)
		}
		name := tok.String()
		folded := strings.ToLower(name)
		if seen[folded] {
			return fmt.Errorf("a name repeated in its %s", what)
		}
		seen[folded] = true
		val, err := d.ReadValue()
		if err != nil {
			return segmentError(what, err)
		}
		switch {
		case header && name == "crit":
			return errors.New("crit header: no extension is supported")
		case !header && (folded == "exp" || folded == "nbf" || folded == "iat") && val.Kind() != '0':
			return fmt.Errorf("%s must be a number", folded)
		}
	}
	if _, err := d.ReadToken(); err != nil { // the closing brace
		return segmentError(what, err)
	}
	return nil
}

// segmentError says what is wrong with a segment's JSON, without its text.
func segmentError(what string, err error) error {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return fmt.Errorf("a name repeated in its %s", what)
	}
	return fmt.Errorf("its %s: no valid JSON", what)
}

// looseJWT is strictToken's refusal; its text is the rule broken.
type looseJWT struct{ error }

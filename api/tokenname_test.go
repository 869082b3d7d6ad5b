package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A token's name claim keeps the display-name rule of guests' names: one
// with a control character (NUL, ESC) or a bidirectional formatting one
// (a right-to-left override) refuses the token, 401 saying why, as a
// guest's name with one is 422; a valid name reaches other players as
// from.name, cut to 32 characters.
func TestTokenNameRule(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	bob, bobID := e.guest("bob")
	token := func(name string) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u_zed", "name": name,
			"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("test-secret"))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, name := range []string{"a\x1b[31mred", "nul\x00", "evil\u202etxt.exe", "rlm\u200f", "isolate\u2066x\u2069"} {
		r := e.do("POST", "/v1/users/"+bobID+"/messages", token(name), map[string]any{"type": "chat", "data": name})
		want(t, r, 401, "UNAUTHENTICATED")
		if d, _ := r.body["detail"].(string); !strings.Contains(d, "Token name must have no control characters") {
			t.Errorf("%q: detail %q", name, d)
		}
		want(t, e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name}), 422, "VALIDATION_FAILED")
	}
	long := strings.Repeat("é", 40)
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token("zed ✓"), map[string]any{"type": "chat", "data": 1}), 202, "")
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token(long), map[string]any{"type": "chat", "data": 2}), 202, "")
	_, evs := opening(t, e.me(bob, "pc"))
	if len(evs) != 2 {
		t.Fatalf("%d messages reached bob, want the 2 of valid tokens", len(evs))
	}
	for i, want := range []string{"zed ✓", long[:64]} {
		if from := evs[i].data["from"].(map[string]any); from["name"] != want {
			t.Errorf("from %v, want name %q", from, want)
		}
	}
}

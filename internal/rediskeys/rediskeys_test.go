package rediskeys_test

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A pattern of GlobEscape(text)+"*" matches the keys that start with text
// itself, on a real Redis: each glob character of text is literal.
func TestGlobEscape(t *testing.T) {
	ctx := context.Background()
	opt, err := redis.ParseURL(redistest.StandaloneURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() }) // after the keys' cleanups (last in, first out)
	p := redistest.Prefix(t)
	tests := []struct {
		name, text string
		keys, want []string // keys written under p; those the pattern must find
	}{
		{"Star", "a*b", []string{"a*b:1", "axb:1", "a*bc"}, []string{"a*b:1", "a*bc"}},
		{"Question", "a?b", []string{"a?b", "axb"}, []string{"a?b"}},
		{"Brackets", "[ab]x", []string{"[ab]x", "ax", "bx"}, []string{"[ab]x"}},
		{"Backslash", `a\b`, []string{`a\b`, "ab"}, []string{`a\b`}},
		{"Plain", "u-1:", []string{"u-1:x", "u-10"}, []string{"u-1:x"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := p + ":" + string(rune('0'+i)) + ":"
			for _, k := range tc.keys {
				if err := c.Set(ctx, base+k, 1, 0).Err(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Del(context.Background(), base+k) })
			}
			got, err := rediskeys.Scan(ctx, c, rediskeys.GlobEscape(base+tc.text)+"*")
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, k := range tc.want {
				want = append(want, base+k)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("GlobEscape(%q) = %q finds %q, want %q", tc.text, rediskeys.GlobEscape(tc.text), got, want)
			}
		})
	}
}

package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// listKey is the route and the list's parameters, url.Values.Encode's
// spelling of them: one key for one query however spelled (order,
// encoding, ignored parameters), another for anything the list reads
// differently (a value, a repeated value, its order).
func TestListKey(t *testing.T) {
	for _, c := range []struct {
		name, a, b string // two raw queries
		same       bool   // one key for both
	}{
		{"Order", "mode=duel&limit=10", "limit=10&mode=duel", true},
		{"Ignored", "mode=duel", "mode=duel&utm=x&Mode=y&attr=z", true},
		{"SpaceSpellings", "mode=a%20b", "mode=a+b", true},
		{"NameEncoded", "mo%64e=duel", "mode=duel", true},
		{"Attr", "attr.lvl.gte=1&mode=duel", "mode=duel&attr.lvl.gte=1", true},
		{"Empty", "", "utm=1", true},
		{"OtherValue", "mode=duel", "mode=duels", false},
		{"EmptyValue", "mode=", "", false},
		{"Repeated", "mode=duel", "mode=duel&mode=duel", false},
		{"RepeatedOrder", "mode=a&mode=b", "mode=b&mode=a", false},
		{"AttrValue", "attr.lvl.gte=1", "attr.lvl.gte=2", false},
		{"Delimiters", "mode=a%26region%3Deu", "mode=a&region=eu", false},
		{"PlusLiteral", "mode=a%2Bb", "mode=a+b", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := func(raw string) string {
				q, _ := url.ParseQuery(raw)
				k := listKey("/v1/rooms", q)
				want := url.Values{}
				for name, v := range q {
					if listReads[name] || len(name) > 5 && name[:5] == "attr." {
						want[name] = v
					}
				}
				if w := "/v1/rooms?" + want.Encode(); k != w {
					t.Errorf("listKey(%q) = %q, want %q", raw, k, w)
				}
				return k
			}
			if ka, kb := key(c.a), key(c.b); (ka == kb) != c.same {
				t.Errorf("%q → %q, %q → %q: same %v, want %v", c.a, ka, c.b, kb, ka == kb, c.same)
			}
		})
	}
}

// Without a cache, browse costs what writeBuilt costs: it computes no key
// and allocates nothing for the cache (the list's uncached path was six
// allocations dearer with them, BenchmarkHTTP "GET rooms joinable fill").
func TestBrowseWithoutCacheAllocatesAsWriteBuilt(t *testing.T) {
	s := &Server{}
	w := &nullWriter{h: http.Header{}}
	r := httptest.NewRequest("GET", "/v1/rooms?mode=duel", nil)
	body := []byte(`{"nextCursor":null,"rooms":[]}` + "\n")
	build := func(_ context.Context, body []byte, b []byte) ([]byte, error) { return append(b, body...), nil }
	noKey := func() string { panic("browse without a cache made a key") }
	browsed := testing.AllocsPerRun(100, func() { browse(s, w, r, "/v1/rooms", noKey, body, build) })
	built := testing.AllocsPerRun(100, func() { writeBuilt(w, 200, func(b []byte) []byte { return append(b, body...) }) })
	if browsed != built {
		t.Fatalf("browse without a cache: %v allocations, writeBuilt %v", browsed, built)
	}
}

// nullWriter is a ResponseWriter that keeps nothing written.
type nullWriter struct{ h http.Header }

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nullWriter) WriteHeader(int)             {}

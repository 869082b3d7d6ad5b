package store

import "testing"

// The registry's keys share one tag of their own, apart from every shard's.
func TestInstanceKeysShareOneTag(t *testing.T) {
	k := keys{prefix: "rs"}
	want := "{rs:instances}"
	for _, key := range []string{k.liveInstances(), k.instance("a1b2c3d4"), k.instance("x.y")} {
		if tagOf(key) != want {
			t.Errorf("%q has tag %q, want %q", key, tagOf(key), want)
		}
	}
	for _, shard := range []int{0, 15} {
		if k.tag(shard) == want {
			t.Errorf("shard %d shares the registry's tag", shard)
		}
	}
}

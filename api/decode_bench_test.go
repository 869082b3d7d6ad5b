package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/realsync/realsync/rooms"
)

// decodeV1 is the decoding before strict decoding (encoding/json with
// unknown fields refused and exact numbers), kept to measure the cost of
// the change: go test -run '^$' -bench Decode ./api/
func decodeV1(body []byte, dst any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	d.UseNumber()
	return d.Decode(dst)
}

var (
	benchCreate = []byte(`{"name":"Epic Battle Arena","mode":"battle","region":"us-west","maxPlayers":4,` +
		`"visibility":"public","attributes":{"map":"dust2","rank":1500,"mode2":"ranked"},"state":{"turn":0,"board":[[0,0,0],[0,0,0],[0,0,0]]}}`)
	benchPatch = func() []byte {
		var b strings.Builder
		for i := range 32 {
			fmt.Fprintf(&b, `,"k%d":{"x":%d,"y":[1,2,3],"name":"player %d"}`, i, i, i)
		}
		return []byte("{" + b.String()[1:] + "}")
	}()
)

func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
		dst  func() any
	}{
		{"Create", benchCreate, func() any { return new(rooms.CreateParams) }},
		{"StatePatch", benchPatch, func() any { return new(rooms.State) }},
	} {
		for _, d := range []struct {
			name   string
			decode func([]byte, any) error
		}{{"v1", decodeV1}, {"strict", decodeJSONObject}} {
			b.Run(bc.name+"/"+d.name, func(b *testing.B) {
				b.SetBytes(int64(len(bc.body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := d.decode(bc.body, bc.dst()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

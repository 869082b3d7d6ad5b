package layout

import (
	"strconv"
	"strings"
	"testing"
)

func TestFillLua(t *testing.T) {
	want := "local FILL_SEATS = " + strconv.Itoa(FillSeats)
	for _, tc := range []struct {
		name, src string
		ok        bool
	}{
		{"written in", "-- x\nlocal FILL_SEATS = 100\nreturn FILL_SEATS\n", true},
		{"whatever the file says", "local FILL_SEATS = 7\n", true},
		{"none", "local SEATS = 100\n", false},
		{"not at a line's start", "-- local FILL_SEATS = 100\n", false},
		{"twice", "local FILL_SEATS = 100\nlocal FILL_SEATS = 100\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); (r == nil) != tc.ok {
					t.Errorf("panic %v, want one: %v", r, !tc.ok)
				}
			}()
			got := FillLua("t.lua", tc.src)
			if strings.Count(got, want) != 1 || strings.Count(got, "FILL_SEATS =") != 1 {
				t.Errorf("FillLua = %q, want one %q", got, want)
			}
		})
	}
}

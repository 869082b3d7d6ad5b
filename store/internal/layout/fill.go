package layout

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/realsync/realsync/rooms"
)

// FillSeats is what a room's entry in the fill indexes counts its seats
// taken or reserved down from: rooms.MaxPlayersLimit, the one source of the
// seat limit, which FillLua writes into the scripts that build or check
// entries. An entry is "<FillSeats - seats taken or reserved, three
// digits>|<createdAt, 17 digits>|<id>", ordered as text: fullest first,
// then oldest. Three digits hold a limit below 1 000 (the declaration
// below fails to compile past it), and changing the limit changes every
// stored entry: a key-schema change (SchemaVersion, with a migration or
// the repair walk rewriting the fill indexes).
const FillSeats = rooms.MaxPlayersLimit

var _ [999 - FillSeats]struct{} // FillSeats fits three digits

// fillDecl is the declaration FillLua writes FillSeats into.
var fillDecl = regexp.MustCompile(`(?m)^local FILL_SEATS = \d+`)

// FillLua is the Lua src with its declaration "local FILL_SEATS = <n>"
// (exactly one, at the start of a line) set to FillSeats. It panics when
// src has none or several: a script that builds or checks fill entries
// without the limit's one source is a programming error, met when the
// package loads.
func FillLua(name, src string) string {
	if n := len(fillDecl.FindAllStringIndex(src, -1)); n != 1 {
		panic(fmt.Sprintf("layout: %s declares FILL_SEATS %d times, want once", name, n))
	}
	return fillDecl.ReplaceAllLiteralString(src, "local FILL_SEATS = "+strconv.Itoa(FillSeats))
}

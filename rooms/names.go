package rooms

import (
	"slices"
	"strings"
)

// NamePattern is the form of a mode's or region's name, everywhere one is
// read (rooms, the lobby's filters, matchmaking rules, REALSYNC_MODES and
// REALSYNC_REGIONS); NameRule states it as a field error does.
const (
	NamePattern = `^[a-z0-9][a-z0-9_-]{0,31}$`
	NameRule    = "must match " + NamePattern
)

// Names are the modes and regions a deployment accepts. An empty list
// accepts any name of the documented form (NamePattern);
// a list accepts only its names (each of that form, cmd/realsyncd checks).
type Names struct {
	Modes   []string // REALSYNC_MODES
	Regions []string // REALSYNC_REGIONS
}

// CheckMode returns the field error of mode v ("" when it is allowed or
// when its form is already wrong: the form's own error names it).
func (n Names) CheckMode(field, v string) []FieldError { return check(field, v, n.Modes) }

// CheckRegion is CheckMode for a region.
func (n Names) CheckRegion(field, v string) []FieldError { return check(field, v, n.Regions) }

func check(field, v string, allowed []string) []FieldError {
	if len(allowed) == 0 || !slugRe.MatchString(v) || slices.Contains(allowed, v) {
		return nil
	}
	return []FieldError{{Field: field, Message: "must be one of: " + strings.Join(allowed, ", ")}}
}

// ValidName reports whether s has the form of a mode or region.
func ValidName(s string) bool { return slugRe.MatchString(s) }

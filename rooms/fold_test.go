package rooms

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// FoldSpace folds white space of every kind, and only white space and
// U+FEFF: what a name may not hold is its caller's to refuse.
func TestFoldSpace(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"AlreadyFolded", "Jo Ann", "Jo Ann"},
		{"Runs", "  Jo   Ann ", "Jo Ann"},
		{"EveryKind", "Epic\u00a0\u2003Battle\u3000Arena\u202fX\u205fY\u1680Z", "Epic Battle Arena X Y Z"},
		{"ControlsThatAreSpace", "\tJohn\r\nSmith\u0085\u2028\u2029", "John Smith"},
		{"BOMDropped", "\ufeff Epic \ufeffBattle\ufeff", "Epic Battle"},
		{"BOMInsideAWord", "Ep\ufeffic", "Epic"},
		{"OnlyWhiteSpaceAndBOM", " \ufeff\u00a0\t ", ""},
		{"Empty", "", ""},
		// not white space: format characters and fillers stay (Shows
		// judges them), as do controls that are not space
		{"FormatKept", "a\u200bb \u3164", "a\u200bb \u3164"},
		{"ControlKept", "a\x07 b", "a\x07 b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FoldSpace(tc.in); got != tc.want {
				t.Fatalf("FoldSpace(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// nameStore records the room names a Service hands on; nothing else of
// Store is called.
type nameStore struct {
	Store
	names []string
}

func (s *nameStore) Create(_ context.Context, _ User, p NewRoom) (Joined, error) {
	s.names = append(s.names, p.Name)
	return Joined{}, nil
}

func (s *nameStore) Update(_ context.Context, _ User, _ string, p UpdateParams) (Room, error) {
	s.names = append(s.names, *p.Name)
	return Room{}, nil
}

func (s *nameStore) QuickJoin(_ context.Context, _ User, _ string, _ []string, _ []AttrFilter, create *NewRoom) (QuickJoined, error) {
	s.names = append(s.names, create.Name)
	return QuickJoined{}, nil
}

// A room's name is stored folded (FoldSpace) whichever way it is set,
// and its length is that of the folded name: one that folds to nothing is
// refused as an empty one is; one with a control character (a tab
// included) is refused as sent, as a guest's name is, not folded.
func TestRoomNamesFolded(t *testing.T) {
	var (
		tooLong  = "must be 1..64 characters"
		control  = "must not contain " + NameControlRule
		longName = strings.Repeat("é", 64)
	)
	for _, tc := range []struct {
		name   string
		sent   string
		stored string // "" when refused
		msg    string // the name's field error when refused
	}{
		{"Verbatim", "Epic Battle", "Epic Battle", ""},
		{"Folded", "  Epic   Battle\u00a0\u2003Arena \ufeff", "Epic Battle Arena", ""},
		{"FoldedShort", " x   y ", "x y", ""},
		{"LengthAfterFolding", "   " + longName + "\u3000\u3000", longName, ""},
		{"TooLongFolded", " " + longName + "é ", "", tooLong},
		{"FoldsToNothing", " \ufeff\u00a0 ", "", tooLong},
		{"Empty", "", "", tooLong},
		{"TabRefused", "Epic\tBattle", "", control},
		{"LineSeparatorRefused", "Epic\u2028Battle", "", control},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &nameStore{}
			s := NewService(st)
			u, ctx := User{ID: "u1", Name: "alice"}, context.Background()
			sent := tc.sent
			for _, set := range []struct {
				field string // the name's field
				run   func() error
			}{
				{"name", func() error {
					_, err := s.Create(ctx, u, CreateParams{Name: sent, Mode: "m", Region: "r"})
					return err
				}},
				{"name", func() error {
					_, err := s.Update(ctx, u, "r1", UpdateParams{Name: &sent})
					return err
				}},
				{"create.name", func() error {
					_, err := s.QuickJoin(ctx, u, QuickJoinParams{Mode: "m", Regions: []string{"r"}, Create: &QuickCreate{Name: sent}})
					return err
				}},
			} {
				var ve *ValidationError
				switch err := set.run(); {
				case tc.stored != "" && err != nil:
					t.Errorf("%s %q refused: %v", set.field, tc.sent, err)
				case tc.stored == "" && (!errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != set.field || ve.Fields[0].Message != tc.msg):
					t.Errorf("%s %q: %v, want %s %s", set.field, tc.sent, err, set.field, tc.msg)
				}
			}
			if sent != tc.sent {
				t.Errorf("the update's name was changed in place: %q", sent)
			}
			for _, got := range st.names {
				if got != tc.stored {
					t.Errorf("stored %q, want %q", got, tc.stored)
				}
			}
			if n := len(st.names); (tc.stored != "") != (n == 3) || (tc.stored == "" && n != 0) {
				t.Errorf("%d names stored", n)
			}
		})
	}
}

package lobby

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/realsync/realsync/rooms"
)

// Service validates listing requests and pages through the Index.
type Service struct {
	index Index
	names rooms.Names
}

// Config is what a Service needs; cmd/realsyncd wires it.
type Config struct {
	Index Index
	// Names restrict the mode and region filters (a validation error
	// naming the parameter); empty: any of their form.
	Names rooms.Names
}

// New returns a Service as cfg says.
func New(cfg Config) *Service { return &Service{index: cfg.Index, names: cfg.Names} }

// NewService returns a Service over index accepting any mode and region.
func NewService(index Index) *Service { return New(Config{Index: index}) }

// ListParams are the raw query parameters; empty means absent (given
// empty or left out).
type ListParams struct {
	Status   string // comma list, default "waiting"
	Joinable bool
	Mode     string
	Region   string
	Sort     string // newest (default) | oldest | fill (needs Joinable)
	Limit    *int   // 1..100, default 20
	Cursor   string
	// Query holds the whole query string; its "attr.*" parameters are
	// attribute filters (rooms.ParseAttrQuery).
	Query map[string][]string
}

// Page is a page of rooms; NextCursor is "" on the last page.
type Page struct {
	Rooms      []rooms.Room
	NextCursor string
}

// List returns one page of public rooms. A ValidationError names each bad
// parameter; a cursor made for other filters or sort is invalid too.
func (s *Service) List(ctx context.Context, p ListParams) (Page, error) {
	q, err := s.parse(p)
	if err != nil {
		return Page{}, err
	}
	res, err := s.index.List(ctx, q)
	if err != nil {
		return Page{}, err
	}
	page := Page{Rooms: res.Rooms}
	if res.More {
		page.NextCursor = encodeCursor(q, res.Last)
	}
	return page, nil
}

// CheckFilter validates the mode and region of a lobby feed ("" for any):
// their form, and that they are among the allowed Names.
func (s *Service) CheckFilter(mode, region string) error {
	var errs []rooms.FieldError
	for _, f := range [][2]string{{"mode", mode}, {"region", region}} {
		if f[1] != "" && !rooms.ValidName(f[1]) {
			errs = append(errs, rooms.FieldError{Field: f[0], Message: rooms.NameRule})
		}
	}
	if mode != "" {
		errs = append(errs, s.names.CheckMode("mode", mode)...)
	}
	if region != "" {
		errs = append(errs, s.names.CheckRegion("region", region)...)
	}
	if len(errs) > 0 {
		return &rooms.ValidationError{Fields: errs}
	}
	return nil
}

// Stats returns live room and player counts.
func (s *Service) Stats(ctx context.Context) (Stats, error) { return s.index.Stats(ctx) }

func (s *Service) parse(p ListParams) (Query, error) {
	var errs []rooms.FieldError
	bad := func(field, msg string) { errs = append(errs, rooms.FieldError{Field: field, Message: msg}) }
	q := Query{Mode: p.Mode, Region: p.Region, Sort: Newest, Limit: DefaultLimit, Joinable: p.Joinable}
	statuses, ok := parseStatuses(p.Status)
	switch {
	case !ok:
		bad("status", "must be a comma list of waiting, playing, finished")
	case p.Joinable && (len(statuses) != 1 || statuses[0] != rooms.Waiting):
		bad("status", "must be absent or waiting with joinable=true")
	}
	q.Statuses = statuses
	if verr, ok := errors.AsType[*rooms.ValidationError](s.CheckFilter(p.Mode, p.Region)); ok {
		errs = append(errs, verr.Fields...)
	}
	switch Sort(p.Sort) {
	case "", Newest:
	case Oldest:
		q.Sort = Oldest
	case Fill:
		q.Sort = Fill
		if !p.Joinable {
			bad("sort", "fill needs joinable=true")
		}
	default:
		bad("sort", "must be one of: newest, oldest, fill")
	}
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > MaxLimit {
			bad("limit", "must be 1..100")
		}
		q.Limit = *p.Limit
	}
	attrs, err := rooms.ParseAttrQuery(p.Query)
	if verr, ok := errors.AsType[*rooms.ValidationError](err); ok {
		errs = append(errs, verr.Fields...)
	}
	q.Attrs = attrs
	if len(errs) > 0 {
		return Query{}, &rooms.ValidationError{Fields: errs}
	}
	if p.Cursor != "" {
		after, ok := decodeCursor(q, p.Cursor)
		if !ok {
			return Query{}, rooms.Invalid("cursor", "is not a cursor of this listing (same filters and sort)")
		}
		q.After = &after
	}
	return q, nil
}

// parseStatuses reads a comma list; duplicates collapse, order is the
// index order.
func parseStatuses(s string) ([]rooms.Status, bool) {
	if s == "" {
		return []rooms.Status{rooms.Waiting}, true
	}
	seen := map[rooms.Status]bool{}
	for _, part := range strings.Split(s, ",") {
		st := rooms.Status(strings.TrimSpace(part))
		if st != rooms.Waiting && st != rooms.Playing && st != rooms.Finished {
			return nil, false
		}
		seen[st] = true
	}
	var out []rooms.Status
	for _, st := range rooms.Statuses {
		if seen[st] {
			out = append(out, st)
		}
	}
	return out, true
}

type cursor struct {
	Score int64  `json:"s,omitempty"`
	ID    string `json:"i"`
	Key   string `json:"k,omitempty"`
	Query uint32 `json:"q"`
}

// fingerprint ties a cursor to the filters and sort it was made for.
func fingerprint(q Query) uint32 {
	h := fnv.New32a()
	for _, st := range q.Statuses {
		h.Write([]byte(st + ","))
	}
	h.Write([]byte("|" + q.Mode + "|" + q.Region + "|" + string(q.Sort) + "|" + strconv.FormatBool(q.Joinable)))
	for _, f := range q.Attrs {
		h.Write([]byte("|" + f.String()))
	}
	return h.Sum32()
}

func encodeCursor(q Query, p Position) string {
	b, _ := json.Marshal(cursor{Score: p.Score, ID: p.ID, Key: p.Key, Query: fingerprint(q)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of query q. Only the exact text
// encodeCursor makes for its position is accepted (canonical: one position
// has one cursor), so no hand-edited variant (other padding, case of
// member names, repeated members) reaches the index.
func decodeCursor(q Query, s string) (Position, bool) {
	if len(s) > maxCursorLen {
		return Position{}, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return Position{}, false
	}
	var c cursor
	if json.Unmarshal(b, &c) != nil || c.Query != fingerprint(q) || c.ID == "" || !rooms.ValidRoomID(c.ID) ||
		(q.Sort == Fill) != (c.Key != "") || len(c.Key) > 64 {
		return Position{}, false
	}
	p := Position{Score: c.Score, ID: c.ID, Key: c.Key}
	if encodeCursor(q, p) != s {
		return Position{}, false
	}
	return p, true
}

// maxCursorLen bounds a cursor's text: the longest encodeCursor makes (a
// 64-byte key, a 40-byte id, a 19-digit score) is under 256.
const maxCursorLen = 256

// Before reports whether a comes before b in sort order s: newest is score
// descending then id descending; oldest is the reverse; fill is Key
// ascending (Keys are unique: they end with the id).
func Before(s Sort, a, b Position) bool {
	if s == Fill {
		return a.Key < b.Key
	}
	if a.Score != b.Score {
		return (a.Score > b.Score) == (s == Newest)
	}
	if a.ID == b.ID {
		return false
	}
	return (a.ID > b.ID) == (s == Newest)
}

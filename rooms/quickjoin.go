package rooms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
)

// ErrNoMatch: quick-join found no room to join and was not asked to create
// one.
var ErrNoMatch = errors.New("no joinable room matches")

// QuickJoinParams is a quick-join request as the client sent it.
type QuickJoinParams struct {
	Mode    string   `json:"mode" validate:"slug"`
	Regions []string `json:"regions" validate:"omitnil,min=1,max=10,unique,dive,slug"`
	// Attributes filter the candidates: key → a string or number (equal),
	// or {"gte","gt","lte","lt": number} (a range).
	Attributes map[string]json.RawMessage `json:"attributes"`
	// Create, when given, is the room to create in Regions[0] when nothing
	// can be joined: its attributes, with those Attributes filters by
	// equality filled in, must match every filter (createAttributes).
	Create *QuickCreate `json:"create"`
}

// createAttributes returns the attributes of the room a quick-join
// creates: create's own (attrs), with each key an equality filter names
// and attrs lacks filled in with the filter's value as sent (raw: a
// string stays a string, a number a number), so that the next caller with
// the same filters finds the room. That room must match every filter of
// its quick-join (filters, parsed from raw): one that did not would never
// be joined by a caller with those filters, its creator's next call
// included, and every such call would create another. So a value of
// attrs an equality filter does not accept (as AttrFilter.Match compares:
// "dust2" is not "Dust2", 5 is 5.0), and a key a range filters on that
// attrs lacks or holds out of the range (or not as a number), is a field
// error naming create.attributes.<key> and saying which filter it fails.
// Equal values are accepted as given. A value filled in must be one a
// room's attribute may hold (AttrText; its length the filter checked):
// else a field error naming attributes.<key>.
func createAttributes(attrs map[string]any, raw map[string]json.RawMessage, filters []AttrFilter) (map[string]any, fieldErrors) {
	out := make(map[string]any, len(attrs)+len(filters))
	for k, v := range attrs {
		out[k] = v
	}
	for _, f := range filters {
		if _, set := out[f.Key]; set || f.Eq == nil {
			continue
		}
		if v, err := decodeValue(raw[f.Key]); err == nil {
			out[f.Key] = v // a string or a json.Number: attrFilter took nothing else
		}
	}
	var errs fieldErrors
	for _, f := range filters {
		if _, given := attrs[f.Key]; !given && !AttrText(out[f.Key]) {
			errs.add("attributes."+f.Key, "must not contain %s: the room created gets the value", NameControlRule)
			continue
		}
		if f.Match(out) {
			continue
		}
		field := "create.attributes." + f.Key
		switch _, given := attrs[f.Key]; {
		case f.Eq != nil:
			errs.add(field, "must equal the filter attributes.%s (%s): the room a quick-join creates must match its own filters", f.Key, raw[f.Key])
		case !given:
			errs.add(field, "is required: the filter attributes.%s (%s) ranges over it, and the room a quick-join creates must match its own filters", f.Key, f.bounds())
		default:
			errs.add(field, "must be a number within the filter attributes.%s (%s): the room a quick-join creates must match its own filters", f.Key, f.bounds())
		}
	}
	return out, errs
}

// attrFilters turns the attributes of a quick-join into filters.
func (p QuickJoinParams) attrFilters() ([]AttrFilter, fieldErrors) {
	var errs fieldErrors
	if len(p.Attributes) > MaxAttrFilters {
		errs.add("attributes", "at most %d attributes may be filtered", MaxAttrFilters)
	}
	keys := make([]string, 0, len(p.Attributes))
	for k := range p.Attributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []AttrFilter
	for _, k := range keys {
		f, ferrs := attrFilter(k, p.Attributes[k])
		if len(ferrs) > 0 {
			errs = append(errs, ferrs...)
			continue
		}
		out = append(out, f)
	}
	return out, errs
}

// attrFilter reads one filter: a string or number, or an object of bounds
// (read in the order of their names, so the answer to a bad one does not
// depend on Go's map order). Errors name attributes.<key>, or
// attributes.<key>.<op> for each of two bounds that may not be given
// together (AttrFilter.conflict: gt with gte, lt with lte).
func attrFilter(key string, raw json.RawMessage) (AttrFilter, fieldErrors) {
	f := AttrFilter{Key: key}
	field := "attributes." + key
	var errs fieldErrors
	if !attrKeyRe.MatchString(key) {
		errs.add(field, "key must match ^[A-Za-z0-9_]{1,32}$")
		return f, errs
	}
	v, err := decodeValue(raw)
	if err != nil {
		errs.add(field, "must be a string, a number or an object of gte, gt, lte, lt")
		return f, errs
	}
	switch x := v.(type) {
	case string:
		if msg := f.set("", x); msg != "" {
			errs.add(field, "%s", msg)
		}
		return f, errs
	case json.Number:
		if _, ok := FiniteNumber(x.String()); !ok {
			errs.add(field, "must be a finite number")
		} else if msg := f.set("", x.String()); msg != "" {
			errs.add(field, "%s", msg)
		}
		return f, errs
	case map[string]any:
		ops := make([]string, 0, len(x))
		for op := range x {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		for _, op := range ops {
			if op != "gte" && op != "gt" && op != "lte" && op != "lt" {
				errs.add(field, "operator must be one of gte, gt, lte, lt")
				return f, errs
			}
			n, ok := x[op].(json.Number)
			if !ok {
				errs.add(field, "%s must be a number", op)
				return f, errs
			}
			if other, ok := f.conflict(op); ok {
				errs.add(field+"."+other, "may not be given with %s.%s: %s", field, op, conflictRule)
				errs.add(field+"."+op, "may not be given with %s.%s: %s", field, other, conflictRule)
				continue
			}
			if msg := f.set(op, n.String()); msg != "" {
				errs.add(field, "%s", msg)
				return f, errs
			}
		}
		if len(errs) == 0 && f.Min == nil && f.Max == nil {
			errs.add(field, "must give at least one of gte, gt, lte, lt")
		}
		return f, errs
	}
	errs.add(field, "must be a string, a number or an object of gte, gt, lte, lt")
	return f, errs
}

// QuickCreate is the room quick-join creates: a create request without
// mode and region (they come from the quick-join), visibility (public) and
// state. QuickJoin folds its Name (foldName) before checking it.
type QuickCreate struct {
	Name        string         `json:"name" validate:"min=1,max=64,name,shows"`
	MaxPlayers  *int           `json:"maxPlayers" validate:"omitnil,seats"`
	Attributes  map[string]any `json:"attributes" validate:"max=16,dive,keys,attrkey,endkeys,attrvalue,attrtext"`
	StatePolicy *StatePolicy   `json:"statePolicy" validate:"omitnil,oneof=owner open"`
}

// QuickJoined is the answer to a quick-join.
type QuickJoined struct {
	Joined
	Created bool
}

// Matchmaker joins the best room of a bucket atomically.
type Matchmaker interface {
	// QuickJoin returns a room of mode in one of regions (all regions when
	// empty) that u is already in, else joins the best joinable public room
	// (regions in order; fullest, then oldest), else creates create (when
	// not nil) in regions[0], never while a joinable room of that mode and
	// region exists. ErrNoMatch when there is nothing to join or create.
	// Rooms must also pass every attribute filter; then creating is not
	// held back by joinable rooms that do not match, so packing is only
	// guaranteed without filters. Rooms that banned or kicked u are
	// skipped: u is never placed in one, and creating is not held back by
	// them; past many such rooms (256 walked in one region, 64 passed over
	// in several) the rest count as none.
	QuickJoin(ctx context.Context, u User, mode string, regions []string, filters []AttrFilter, create *NewRoom) (QuickJoined, error)
}

// QuickJoin validates p (the mode and every region also against the
// allowed Names; the name of the room to create once folded, foldName)
// and quick-joins on behalf of u. The room it would create must match
// p's own attribute filters (createAttributes): one that could not is a
// ValidationError naming create.attributes.<key>, whether or not a room
// would have been joined, and nothing is joined or created.
func (s *Service) QuickJoin(ctx context.Context, u User, p QuickJoinParams) (QuickJoined, error) {
	if err := PlayersOnly(u); err != nil {
		return QuickJoined{}, err
	}
	if p.Create != nil {
		c := *p.Create // the caller's is left as sent
		c.Name = foldName(c.Name)
		p.Create = &c
	}
	errs := structErrors(s.validate, p)
	errs = append(errs, s.names.CheckMode("mode", p.Mode)...)
	for i, r := range p.Regions {
		errs = append(errs, s.names.CheckRegion("regions."+strconv.Itoa(i), r)...)
	}
	filters, ferrs := p.attrFilters()
	errs = append(errs, ferrs...)
	if p.Create != nil && len(p.Regions) == 0 {
		errs.add("regions", "is required with create (the room is created in regions[0])")
	}
	if err := errs.err(); err != nil {
		return QuickJoined{}, err
	}
	var create *NewRoom
	if c := p.Create; c != nil {
		attrs, aerrs := createAttributes(c.Attributes, p.Attributes, filters)
		if err := aerrs.err(); err != nil {
			return QuickJoined{}, err
		}
		r := newRoom(CreateParams{Name: c.Name, Mode: p.Mode, Region: p.Regions[0], MaxPlayers: c.MaxPlayers,
			Attributes: attrs, StatePolicy: c.StatePolicy}, State{})
		if len(r.Attributes) > MaxAttributes {
			return QuickJoined{}, Invalid("create.attributes", "must have at most %d entries with the filtered ones", MaxAttributes)
		}
		create = &r
	}
	q, err := s.store.QuickJoin(ctx, u, p.Mode, p.Regions, filters, create)
	q.Room = ViewFor(q.Room, u)
	return q, err
}

// decodeValue decodes one JSON value, numbers kept exact.
func decodeValue(raw json.RawMessage) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	err := d.Decode(&v)
	return v, err
}

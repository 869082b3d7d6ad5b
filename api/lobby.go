package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
)

// ListRooms implements GET /v1/rooms.
func (s *Server) ListRooms(w http.ResponseWriter, r *http.Request, params oapi.ListRoomsParams) {
	query := r.URL.Query()
	if err := canonicalInts(query, "limit"); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := lobby.ListParams{Status: deref(params.Status), Joinable: deref(params.Joinable), Mode: deref(params.Mode), Region: deref(params.Region),
		Sort: string(deref(params.Sort)), Limit: params.Limit, Cursor: deref(params.Cursor), Query: query}
	browse(s, w, r, "/v1/rooms", func() string { return listKey("/v1/rooms", query) }, listing{s.lobby, p}, appendListing)
}

// listing is a list request: the lobby that reads it and its parameters.
type listing struct {
	lobby *lobby.Service
	p     lobby.ListParams
}

// appendListing appends the JSON of l's page, as the lobby reads it, to b.
func appendListing(ctx context.Context, l listing, b []byte) ([]byte, error) {
	page, err := l.lobby.List(ctx, l.p)
	if err != nil {
		return nil, err
	}
	return append(appendRoomPage(b, page), '\n'), nil
}

// listKey is a list request's key in the BrowseCache: route, "?" and the
// parameters of q (the request's query) the list reads (listReads and the
// attribute filters) as url.Values.Encode writes them, sorted by name,
// each name's values in the request's order, so other parameters
// (ignored) make no other key (TestListKey). Written without
// url.Values.Encode's map and builder: five allocations fewer for each
// request answered from the cache.
func listKey(route string, q url.Values) string {
	names := make([]string, 0, 16)
	for name := range q {
		if listReads[name] || strings.HasPrefix(name, "attr.") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, 128)
	b = append(b, route...)
	b = append(b, '?')
	for i, name := range names {
		for j, v := range q[name] {
			if i > 0 || j > 0 {
				b = append(b, '&')
			}
			b = append(b, url.QueryEscape(name)...)
			b = append(b, '=')
			b = append(b, url.QueryEscape(v)...)
		}
	}
	return string(b)
}

// listReads are the parameters of GET /v1/rooms, but the attribute filters.
var listReads = map[string]bool{"status": true, "joinable": true, "mode": true, "region": true, "sort": true, "limit": true, "cursor": true}

// canonicalInts refuses an integer query parameter of q (the request's
// query) that is not in canonical form (rooms.ParseCanonical: "020" is not
// 20), naming it; the generated binding would accept it.
func canonicalInts(q url.Values, names ...string) error {
	for _, name := range names {
		if v, ok := q[name]; ok {
			if _, ok := rooms.ParseCanonical(v[0]); !ok {
				return rooms.Invalid(name, "must be an integer in canonical form (no sign or leading zero)")
			}
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// QuickJoin implements POST /v1/matchmaking/quick-join: 201 when it
// created the room, 200 when it joined one. One that offers create counts
// on the create limits too, given back when it created nothing.
func (s *Server) QuickJoin(w http.ResponseWriter, r *http.Request, params oapi.QuickJoinParams) {
	s.idempotent(w, r, params.IdempotencyKey, s.quickJoin)
}

func (s *Server) quickJoin(w http.ResponseWriter, r *http.Request) {
	var p rooms.QuickJoinParams
	if err := decodeBody(r, &p, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	var taken []limits.Check
	if p.Create != nil {
		var ok bool
		if taken, ok = s.limitCreate(w, r); !ok {
			return
		}
	}
	q, err := s.rooms.QuickJoin(r.Context(), userFrom(r.Context()), p)
	s.handBackCreate(r, taken, q.Created, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if q.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/rooms/"+q.Room.ID)
	}
	writeJSON(w, status, oapi.QuickJoined{Room: roomBody(q.Room, true), PlayerId: q.PlayerID, Created: q.Created})
}

// MyRooms implements GET /v1/me/rooms: a page of the caller's rooms.
func (s *Server) MyRooms(w http.ResponseWriter, r *http.Request, params oapi.MyRoomsParams) {
	if err := canonicalInts(r.URL.Query(), "limit"); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.rooms.MyRooms(r.Context(), userFrom(r.Context()), rooms.MyRoomsQuery{Limit: params.Limit, Cursor: deref(params.Cursor)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// myRoom is a Room with the caller's playerId (MyRoomList in openapi.yaml).
	type myRoom struct {
		oapi.Room
		PlayerID int `json:"playerId"`
	}
	out := struct {
		Rooms      []myRoom `json:"rooms"`
		NextCursor *string  `json:"nextCursor"`
	}{Rooms: make([]myRoom, len(page.Rooms))}
	for i, j := range page.Rooms {
		out.Rooms[i] = myRoom{Room: roomBody(j.Room, false), PlayerID: j.PlayerID}
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
}

// LobbyStats implements GET /v1/lobby/stats.
func (s *Server) LobbyStats(w http.ResponseWriter, r *http.Request) {
	browse(s, w, r, "/v1/lobby/stats", func() string { return "/v1/lobby/stats" }, s.lobby, appendStats)
}

// appendStats appends the JSON of the lobby's counts, as lobby reads them, to b.
func appendStats(ctx context.Context, lobby *lobby.Service, b []byte) ([]byte, error) {
	st, err := lobby.Stats(ctx)
	if err != nil {
		return nil, err
	}
	finished := st.Rooms[rooms.Finished]
	return appendJSON(b, oapi.LobbyStats{Players: st.Players, Modes: counts(st.Modes), Regions: counts(st.Regions),
		Rooms: oapi.StatusCounts{Waiting: st.Rooms[rooms.Waiting], Playing: st.Rooms[rooms.Playing], Finished: &finished}}), nil
}

func counts(by map[string]map[rooms.Status]int) map[string]oapi.StatusCounts {
	out := make(map[string]oapi.StatusCounts, len(by))
	for k, c := range by {
		out[k] = oapi.StatusCounts{Waiting: c[rooms.Waiting], Playing: c[rooms.Playing]}
	}
	return out
}

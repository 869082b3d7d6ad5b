package api

import (
	"net/http"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/lobby"
)

// ListRooms implements GET /v1/rooms.
func (s *Server) ListRooms(w http.ResponseWriter, r *http.Request, params oapi.ListRoomsParams) {
	p := lobby.ListParams{Status: deref(params.Status), Joinable: deref(params.Joinable), Mode: deref(params.Mode), Region: deref(params.Region),
		Sort: string(deref(params.Sort)), Limit: params.Limit, Cursor: deref(params.Cursor)}
	page, err := s.lobby.List(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := oapi.RoomList{Rooms: make([]oapi.Room, len(page.Rooms))}
	for i, room := range page.Rooms {
		out.Rooms[i] = roomBody(room, false)
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

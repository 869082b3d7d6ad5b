package api

import (
	"net/http"
	"strings"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/rooms"
)

// CreateRoom implements POST /v1/rooms, honouring an Idempotency-Key.
func (s *Server) CreateRoom(w http.ResponseWriter, r *http.Request, params oapi.CreateRoomParams) {
	s.idempotent(w, r, params.IdempotencyKey, func(w http.ResponseWriter, r *http.Request) {
		s.createRoom(w, r, s.keyOf(params.IdempotencyKey))
	})
}

// createRoom creates the body's room; key is the request's
// Idempotency-Key when keys are kept ("" else), from which the room's id
// derives (rooms.NewRoom.Key).
func (s *Server) createRoom(w http.ResponseWriter, r *http.Request, key string) {
	var p rooms.CreateParams
	if err := decodeBody(r, &p, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	p.Key = key
	j, err := s.rooms.Create(r.Context(), userFrom(r.Context()), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/rooms/"+j.Room.ID)
	writeJSON(w, http.StatusCreated, joinedBody(j))
}

// GetRoom implements GET /v1/rooms/{roomId}.
func (s *Server) GetRoom(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	room, err := s.rooms.Get(r.Context(), userFrom(r.Context()), roomID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, roomBody(room, true))
}

// UpdateRoom implements PATCH /v1/rooms/{roomId}.
func (s *Server) UpdateRoom(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	var p rooms.UpdateParams
	if err := decodeBody(r, &p, false, jsonType, mergePatchType); err != nil {
		s.writeError(w, r, err)
		return
	}
	room, err := s.rooms.Update(r.Context(), userFrom(r.Context()), roomID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, roomBody(room, true))
}

// DeleteRoom implements DELETE /v1/rooms/{roomId}.
func (s *Server) DeleteRoom(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	s.noContent(w, r, s.rooms.Delete(r.Context(), userFrom(r.Context()), roomID))
}

// JoinRoom implements POST /v1/rooms/{roomId}/join.
func (s *Server) JoinRoom(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	j, err := s.rooms.Join(r.Context(), userFrom(r.Context()), roomID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, joinedBody(j))
}

type joinByCodeRequest struct {
	InviteCode string `json:"inviteCode"`
}

// JoinRoomByCode implements POST /v1/rooms/join-by-code.
func (s *Server) JoinRoomByCode(w http.ResponseWriter, r *http.Request) {
	var req joinByCodeRequest
	if err := decodeBody(r, &req, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := s.rooms.JoinByCode(r.Context(), userFrom(r.Context()), req.InviteCode)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, joinedBody(j))
}

// LeaveRoom implements POST /v1/rooms/{roomId}/leave.
func (s *Server) LeaveRoom(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	s.noContent(w, r, s.rooms.Leave(r.Context(), userFrom(r.Context()), roomID))
}

// KickPlayer implements DELETE /v1/rooms/{roomId}/players/{playerId}
// (?ban=true also bans).
func (s *Server) KickPlayer(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId, playerID string, params oapi.KickPlayerParams) {
	// the generated binding reads ban with strconv.ParseBool ("1", "t",
	// "TRUE" ...); the contract says true or false
	if v := r.URL.Query()["ban"]; len(v) > 1 || (len(v) == 1 && v[0] != "true" && v[0] != "false") {
		s.writeError(w, r, rooms.Invalid("ban", "must be true or false, given once"))
		return
	}
	s.noContent(w, r, s.rooms.Kick(r.Context(), userFrom(r.Context()), roomID, playerID, deref(params.Ban)))
}

// GetRoomState implements GET /v1/rooms/{roomId}/state.
func (s *Server) GetRoomState(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	v, err := s.rooms.State(r.Context(), userFrom(r.Context()), roomID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", rooms.ETag(v.StateVersion))
	writeJSON(w, http.StatusOK, stateBody{Version: v.Version, StateVersion: v.StateVersion, State: v.State})
}

// stateBody is oapi.StateView with the state's values passed through as
// the raw JSON they are stored as.
type stateBody struct {
	Version      int64       `json:"version"`
	StateVersion int64       `json:"stateVersion"`
	State        rooms.State `json:"state"`
}

// PatchRoomState implements PATCH /v1/rooms/{roomId}/state.
func (s *Server) PatchRoomState(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId, params oapi.PatchRoomStateParams) {
	var patch rooms.State
	if err := decodeBody(r, &patch, false, mergePatchType, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	ifMatch := ""
	if params.IfMatch != nil {
		ifMatch = *params.IfMatch
	}
	if ifMatch == "" && r.Header.Values("If-Match") != nil && strings.TrimSpace(strings.Join(r.Header.Values("If-Match"), "")) == "" {
		// sent blank (a client's version variable left empty): no
		// precondition would be a write the client meant to guard
		s.writeError(w, r, rooms.Invalid("If-Match", `must be the stateVersion in double quotes (If-Match: "3"), a list of such entity tags, or *; it is empty`))
		return
	}
	v, err := s.rooms.PatchState(r.Context(), userFrom(r.Context()), roomID, patch, ifMatch)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", rooms.ETag(v.StateVersion))
	writeJSON(w, http.StatusOK, oapi.StateVersions{Version: v.Version, StateVersion: v.StateVersion})
}

func (s *Server) noContent(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// roomBody converts a domain room to its API form, with players on
// single-room answers.
func roomBody(r rooms.Room, withPlayers bool) oapi.Room {
	out := oapi.Room{Id: r.ID, Name: r.Name, Mode: r.Mode, Region: r.Region,
		Visibility: oapi.Visibility(r.Visibility), Status: oapi.Status(r.Status), Locked: r.Locked,
		MaxPlayers: r.MaxPlayers, PlayerCount: r.PlayerCount, ReservedSeats: r.ReservedSeats, OwnerPlayerId: r.OwnerPlayerID,
		Attributes: r.Attributes, StatePolicy: oapi.StatePolicy(r.StatePolicy),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version}
	if out.Attributes == nil {
		out.Attributes = oapi.Attributes{}
	}
	if r.InviteCode != "" {
		code := r.InviteCode
		out.InviteCode = &code
	}
	if withPlayers {
		ps := make([]oapi.Player, len(r.Players))
		for i, p := range r.Players {
			ps[i] = oapi.Player{PlayerId: p.PlayerID, Name: p.Name, JoinedAt: p.JoinedAt, Connected: p.Connected}
		}
		out.Players = &ps
	}
	return out
}

func joinedBody(j rooms.Joined) oapi.RoomJoined {
	return oapi.RoomJoined{Room: roomBody(j.Room, true), PlayerId: j.PlayerID}
}

// ReserveSeats implements POST /v1/rooms/{roomId}/reservations.
func (s *Server) ReserveSeats(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	var p rooms.ReserveParams
	if err := decodeBody(r, &p, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.rooms.ReserveSeats(r.Context(), userFrom(r.Context()), roomID, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, oapi.SeatReservation{ReservedSeats: res.ReservedSeats, ExpiresAt: res.ExpiresAt})
}

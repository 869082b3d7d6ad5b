package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// StreamMeEvents implements GET /v1/me/events: the caller's personal
// stream, a session on the platform given (sse.Hub.ServeMe).
func (s *Server) StreamMeEvents(w http.ResponseWriter, r *http.Request, params oapi.StreamMeEventsParams) {
	if err := players.CheckPlatform(string(params.Platform)); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := streamFor(r.Context(), meScope); err != nil {
		s.writeError(w, r, err)
		return
	}
	id := deref(params.LastEventID) // the header wins over the query parameter
	if id == "" {
		id = deref(params.LastEventId)
	}
	c := sse.ParseCursor(id)
	if id != "" && !c.Set {
		// an id not of the server's form: a resume all the same, which
		// the log cannot serve (a snapshot with resync true)
		c = sse.Cursor{Set: true}
	}
	s.stream(w, r, func(ctx context.Context, client sse.Client) error {
		return s.events.ServeMe(ctx, client, userFrom(r.Context()), string(params.Platform), c)
	})
}

// CreateMeStreamToken implements POST /v1/me/stream-token.
func (s *Server) CreateMeStreamToken(w http.ResponseWriter, r *http.Request) {
	s.writeStreamToken(w, r, identityFrom(r.Context()), meScope)
}

// SetFollowing implements PUT /v1/me/following.
func (s *Server) SetFollowing(w http.ResponseWriter, r *http.Request) {
	var body struct {
		UserIDs *[]string `json:"userIds"`
	}
	if err := decodeBody(r, &body, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.UserIDs == nil {
		s.writeError(w, r, rooms.Invalid("userIds", "is required"))
		return
	}
	if s.players == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	ids, err := s.players.SetFollowing(r.Context(), userFrom(r.Context()), *body.UserIDs)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, oapi.Following{UserIds: ids})
}

// GetPresence implements GET /v1/presence.
func (s *Server) GetPresence(w http.ResponseWriter, r *http.Request, params oapi.GetPresenceParams) {
	if s.players == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	ss, err := s.players.Presence(r.Context(), params.UserIds)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := oapi.PresenceList{Users: make([]oapi.Presence, len(ss))}
	for i, st := range ss {
		ps := make([]oapi.Platform, len(st.Platforms))
		for j, p := range st.Platforms {
			ps[j] = oapi.Platform(p)
		}
		out.Users[i] = oapi.Presence{UserId: st.UserID, Online: st.Online, Platforms: ps, Version: st.Version}
	}
	writeJSON(w, http.StatusOK, out)
}

// playersParamError is the precise problem of a parameter of the players
// routes that the generated binding refused (nil: not one of those).
func playersParamError(err error) error {
	var req *oapi.RequiredParamError
	var inv *oapi.InvalidParamFormatError
	name := ""
	switch {
	case errors.As(err, &req):
		name = req.ParamName
	case errors.As(err, &inv):
		name = inv.ParamName
	}
	switch {
	case name == "platform" && inv != nil: // given more than once
		return fmt.Errorf("%w: platform given more than once; give one of %s", players.ErrInvalidPlatform, strings.Join(players.Platforms, ", "))
	case name == "platform":
		return players.CheckPlatform("")
	case name == "userIds" && inv != nil: // given more than once
		return fmt.Errorf("%w: userIds given more than once; give one comma-separated list of 1 to %d", players.ErrInvalidUserIDs, players.MaxPresenceIDs)
	case name == "userIds":
		return players.CheckUserIDs(nil, 1, players.MaxPresenceIDs)
	}
	return nil
}

// SendDirectMessage implements POST /v1/users/{userId}/messages.
func (s *Server) SendDirectMessage(w http.ResponseWriter, r *http.Request, userID oapi.UserId, params oapi.SendDirectMessageParams) {
	s.idempotent(w, r, params.IdempotencyKey, func(w http.ResponseWriter, r *http.Request) {
		var p players.DirectMessageParams
		if err := decodeBody(r, &p, false, jsonType); err != nil {
			s.writeError(w, r, err)
			return
		}
		if s.direct == nil {
			s.writeError(w, r, rooms.ErrUnavailable)
			return
		}
		p.Key = s.keyOf(params.IdempotencyKey) // the inbox remembers it too
		sent, err := s.direct.SendMessage(r.Context(), userFrom(r.Context()), userID, p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		keepReceipt(w, sent.Receipt)
		writeJSON(w, http.StatusAccepted, oapi.DirectSent{Ts: sent.TS.UTC()})
	})
}

// InviteToRoom implements POST /v1/rooms/{roomId}/invites, honouring its
// Idempotency-Key as a direct message does: the answer is replayed, and
// the invitee's inbox remembers the key too.
func (s *Server) InviteToRoom(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId, params oapi.InviteToRoomParams) {
	s.idempotent(w, r, params.IdempotencyKey, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			UserID *string `json:"userId"`
		}
		if err := decodeBody(r, &body, false, jsonType); err != nil {
			s.writeError(w, r, err)
			return
		}
		if body.UserID == nil {
			s.writeError(w, r, rooms.Invalid("userId", "is required"))
			return
		}
		if !s.limitInbox(w, r, *body.UserID) {
			return
		}
		if s.direct == nil {
			s.writeError(w, r, rooms.ErrUnavailable)
			return
		}
		sent, err := s.direct.Invite(r.Context(), userFrom(r.Context()), roomID, *body.UserID, s.keyOf(params.IdempotencyKey))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		keepReceipt(w, sent.Receipt)
		writeJSON(w, http.StatusAccepted, oapi.DirectSent{Ts: sent.TS.UTC()})
	})
}

// JoinParty implements PUT /v1/me/party.
func (s *Server) JoinParty(w http.ResponseWriter, r *http.Request) {
	var body struct {
		LeaderUserID *string `json:"leaderUserId"`
	}
	if err := decodeBody(r, &body, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaderUserID == nil {
		s.writeError(w, r, rooms.Invalid("leaderUserId", "is required"))
		return
	}
	if s.parties == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	p, err := s.parties.Join(r.Context(), userFrom(r.Context()), *body.LeaderUserID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, partyJSON(p))
}

// GetParty implements GET /v1/me/party.
func (s *Server) GetParty(w http.ResponseWriter, r *http.Request) {
	if s.parties == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	p, err := s.parties.Of(r.Context(), userFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, partyJSON(p))
}

// ListPartyMembers implements GET /v1/me/party/members.
func (s *Server) ListPartyMembers(w http.ResponseWriter, r *http.Request) {
	if s.parties == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	ms, err := s.parties.Members(r.Context(), userFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := oapi.PartyMembers{Members: make([]oapi.PartyMember, len(ms))}
	for i, m := range ms {
		out.Members[i] = oapi.PartyMember{UserId: m.UserID, ExpiresAt: m.ExpiresAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
}

// LeaveParty implements DELETE /v1/me/party.
func (s *Server) LeaveParty(w http.ResponseWriter, r *http.Request) {
	if s.parties == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	if err := s.parties.Leave(r.Context(), userFrom(r.Context())); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func partyJSON(p players.Party) oapi.Party {
	return oapi.Party{LeaderUserId: p.LeaderUserID, ExpiresAt: p.ExpiresAt.UTC()}
}

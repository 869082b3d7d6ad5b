package api

import (
	"net/http"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
)

// CreateTicket implements POST /v1/matchmaking/tickets: 201 {ticket}.
// A keyed create sent again after its answer does not replay that answer
// (idempotentLive): it answers the first run's ticket as it is now
// (matched, say), or 404 once that ticket is gone (a tester's find: the
// replay said "searching" for a matched ticket, and for 24 hours after
// it was gone).
func (s *Server) CreateTicket(w http.ResponseWriter, r *http.Request, params oapi.CreateTicketParams) {
	s.idempotentLive(w, r, params.IdempotencyKey, func(w http.ResponseWriter, r *http.Request) {
		s.createTicket(w, r, s.keyOf(params.IdempotencyKey))
	})
}

// createTicket queues the body's ticket; key is the request's
// Idempotency-Key when keys are kept ("" else), from which the ticket's
// id derives (TicketParams.Key).
func (s *Server) createTicket(w http.ResponseWriter, r *http.Request, key string) {
	if s.tickets == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	var p matchmaking.TicketParams
	if err := decodeBody(r, &p, false, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	p.Key = key
	// checked before any limit is counted: a keyed create sent again (its
	// answer kept, or lost with the instance that ran it: the key's claim
	// lapsed) answers its first run's ticket as it is now, counted on no
	// limit again (a reviewer's find: a retry was counted as a create,
	// and could be 429); a bad body is counted on nothing but the route's
	// limits
	c, err := s.tickets.Prepare(r.Context(), userFrom(r.Context()), p, answeredBefore(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c.Found {
		s.writeTicketCreated(w, c.First)
		return
	}
	taken, ok := s.limitCreate(w, r) // its match may make a room the leader owns
	if !ok {
		return
	}
	if len(p.PartyUserIDs) > 0 {
		direct, ok := s.limitParty(w, r, p.PartyUserIDs)
		if !ok {
			s.handBackCreate(r, taken, false, nil)
			return
		}
		taken = append(taken, direct...) // handed back with the create counts when refused
	}
	t, err := s.tickets.Enqueue(r.Context(), c)
	s.handBackCreate(r, taken, err == nil, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeTicketCreated(w, t)
}

// writeTicketCreated answers a ticket create: 201 with Location, and
// Idempotent-Replayed when t is an earlier run's (t.Again).
func (s *Server) writeTicketCreated(w http.ResponseWriter, t matchmaking.Ticket) {
	w.Header().Set("Location", "/v1/matchmaking/tickets/"+t.ID)
	if t.Again {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusCreated, oapi.TicketResponse{Ticket: ticketBody(t)})
}

// GetTicket implements GET /v1/matchmaking/tickets/{ticketId}.
func (s *Server) GetTicket(w http.ResponseWriter, r *http.Request, ticketID string) {
	if s.tickets == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	t, err := s.tickets.Get(r.Context(), userFrom(r.Context()), ticketID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, oapi.TicketResponse{Ticket: ticketBody(t)})
}

// CancelTicket implements DELETE /v1/matchmaking/tickets/{ticketId}: 204.
func (s *Server) CancelTicket(w http.ResponseWriter, r *http.Request, ticketID string) {
	if s.tickets == nil {
		s.writeError(w, r, rooms.ErrUnavailable)
		return
	}
	if err := s.tickets.Cancel(r.Context(), userFrom(r.Context()), ticketID); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ticketBody is t as the API shows it (Ticket in openapi.yaml).
func ticketBody(t matchmaking.Ticket) oapi.Ticket {
	out := oapi.Ticket{TicketId: t.ID, Mode: t.Mode, Rating: t.Rating, Attributes: t.Attributes, UserId: t.UserID,
		PartyUserIds: t.PartyUserIDs, Status: oapi.TicketStatus(t.Status), CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}
	out.Regions = append(out.Regions, t.Regions...)
	if out.PartyUserIds == nil {
		out.PartyUserIds = []string{}
	}
	switch t.Status {
	case matchmaking.Searching:
		w, waited := t.Window, t.Waited.Seconds()
		out.Window, out.WaitedSeconds = &w, &waited
	case matchmaking.Matched:
		mid, reg, team, at := t.MatchID, t.Region, t.Team, t.MatchedAt
		out.MatchId, out.Region, out.Team, out.MatchedAt = &mid, &reg, &team, &at
		if t.RoomID != "" {
			room := t.RoomID
			out.RoomId = &room
		}
		if !t.SeatHeldUntil.IsZero() {
			until := t.SeatHeldUntil
			out.SeatHeldUntil = &until
		}
	}
	return out
}

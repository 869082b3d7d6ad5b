package api

import (
	"net/http"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/rooms"
)

// SendMessage implements POST /v1/rooms/{roomId}/messages.
func (s *Server) SendMessage(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId, params oapi.SendMessageParams) {
	s.idempotent(w, r, params.IdempotencyKey, func(w http.ResponseWriter, r *http.Request) {
		var p rooms.MessageParams
		if err := decodeBody(r, &p, false, jsonType); err != nil {
			s.writeError(w, r, err)
			return
		}
		p.Key = s.keyOf(params.IdempotencyKey) // the room remembers it too
		sent, err := s.rooms.SendMessage(r.Context(), userFrom(r.Context()), roomID, p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		keepReceipt(w, sent.Receipt)
		writeJSON(w, http.StatusAccepted, oapi.MessageSent{Version: sent.Version})
	})
}

// ListMessages implements GET /v1/rooms/{roomId}/messages.
func (s *Server) ListMessages(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId, params oapi.ListMessagesParams) {
	q := rooms.MessageQuery{Limit: deref(params.Limit), Before: deref(params.Before)}
	ms, err := s.rooms.Messages(r.Context(), userFrom(r.Context()), roomID, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := oapi.MessageList{Messages: make([]oapi.Message, len(ms))}
	for i, m := range ms {
		out.Messages[i] = oapi.Message{Version: m.Version, From: m.From, Type: m.Type, Data: m.Data, Ts: m.TS}
		if len(m.To) > 0 {
			out.Messages[i].To = &m.To
		}
		if m.MessageID != "" {
			out.Messages[i].MessageId = &m.MessageID
		}
	}
	writeJSON(w, http.StatusOK, out)
}

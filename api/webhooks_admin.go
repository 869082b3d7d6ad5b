package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/webhook/deadletter"
	"github.com/realsync/realsync/rooms"
)

// The webhook admin routes (issue 16 item 6): the dead letters of every
// shard listed, one replayed. Both behind the admin token (serveAdmin);
// the queue is Config.DeadLetters (store/webhooks, wired by cmd/realsyncd).

// maxDeadLettersPage is the largest limit of GET
// /v1/admin/webhooks/dead-letters (openapi.yaml).
const maxDeadLettersPage = 100

// errNoDeadLetters: the server was built without Config.DeadLetters (the
// routes are 404 NOT_FOUND then).
var errNoDeadLetters = errors.New("webhook dead letters are not served by this server")

// deadLetterBody is oapi.DeadLetter with the event kept as the JSON it was
// delivered as (oapi's map would decode and re-encode it).
type deadLetterBody struct {
	ID        string          `json:"id"`
	MessageID string          `json:"messageId"`
	Endpoint  string          `json:"endpoint"`
	Type      string          `json:"type"`
	Event     json.RawMessage `json:"event"`
	Attempts  int             `json:"attempts"`
	FailedAt  time.Time       `json:"failedAt"`
	LastError string          `json:"lastError"`
}

// ListWebhookDeadLetters implements GET /v1/admin/webhooks/dead-letters.
func (s *Server) ListWebhookDeadLetters(w http.ResponseWriter, r *http.Request, params oapi.ListWebhookDeadLettersParams) {
	if s.deadLetters == nil {
		s.writeError(w, r, fmt.Errorf("%w: %w", errNoDeadLetters, errRouteNotFound))
		return
	}
	if err := canonicalInts(r.URL.Query(), "limit"); err != nil {
		s.writeError(w, r, err)
		return
	}
	limit := 20
	if params.Limit != nil {
		limit = *params.Limit
		if limit < 1 || limit > maxDeadLettersPage {
			s.writeError(w, r, rooms.Invalid("limit", "must be 1..%d", maxDeadLettersPage))
			return
		}
	}
	list, next, err := s.deadLetters.DeadLetters(r.Context(), deref(params.Cursor), limit)
	if errors.Is(err, deadletter.ErrBadCursor) {
		err = rooms.Invalid("cursor", "is not a cursor of this listing")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		DeadLetters []deadLetterBody `json:"deadLetters"`
		NextCursor  *string          `json:"nextCursor"`
	}{DeadLetters: make([]deadLetterBody, len(list))}
	for i, d := range list {
		ev := json.RawMessage(d.Event)
		if !json.Valid(ev) { // written by the scripts as JSON; never sent broken
			ev = json.RawMessage(`{}`)
		}
		out.DeadLetters[i] = deadLetterBody{ID: d.ID, MessageID: d.MessageID, Endpoint: d.Endpoint, Type: d.Type, Event: ev,
			Attempts: d.Attempts, FailedAt: d.FailedAt.UTC(), LastError: d.LastError}
	}
	if next != "" {
		out.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, out)
}

// ReplayWebhookDeadLetter implements POST
// /v1/admin/webhooks/dead-letters/{deadLetterId}/replay: 202 once the dead
// letter is back in the deliveries.
func (s *Server) ReplayWebhookDeadLetter(w http.ResponseWriter, r *http.Request, deadLetterID string) {
	if s.deadLetters == nil {
		s.writeError(w, r, fmt.Errorf("%w: %w", errNoDeadLetters, errRouteNotFound))
		return
	}
	if err := s.deadLetters.ReplayDeadLetter(r.Context(), deadLetterID); err != nil {
		if errors.Is(err, deadletter.ErrNotFound) {
			err = fmt.Errorf("no dead letter %q (replayed already, trimmed, or never was): %w", deadLetterID, err)
		}
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

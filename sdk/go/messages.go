package realsync

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// SendMessage sends a message of type typ with data (any value that
// encodes to JSON, at most 4 KiB) to the room (POST
// /v1/rooms/{roomId}/messages): to everyone, or only to the players in to.
// An API key with rooms:write sends as the server (from 0). Returns the
// message's room version. Safe to send again with ctx from
// WithIdempotencyKey: without a key, a message sent again is posted twice.
func (c *Client) SendMessage(ctx context.Context, roomID, typ string, data any, to ...int) (int64, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("realsync: message data: %w", err)
	}
	body := MessageRequest{Type: typ, Data: raw}
	if len(to) > 0 {
		body.To = &to
	}
	r, err := c.API.SendMessageWithResponse(ctx, roomID, &SendMessageParams{IdempotencyKey: idempotencyKey(ctx)}, body)
	if err != nil {
		return 0, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusAccepted); err != nil {
		return 0, err
	}
	m, err := decoded(r.JSON202)
	if err != nil {
		return 0, err
	}
	return m.Version, nil
}

// ListMessages returns the room's messages the caller may see, newest
// first (GET /v1/rooms/{roomId}/messages): at most limit (1..100; 0 for
// the server's 50), only those below version before (0: from the newest).
func (c *Client) ListMessages(ctx context.Context, roomID string, limit int, before int64) ([]Message, error) {
	var p ListMessagesParams
	if limit > 0 {
		l := strconv.Itoa(limit)
		p.Limit = &l
	}
	if before > 0 {
		b := strconv.FormatInt(before, 10)
		p.Before = &b
	}
	r, err := c.API.ListMessagesWithResponse(ctx, roomID, &p)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	m, err := decoded(r.JSON200)
	if err != nil {
		return nil, err
	}
	return m.Messages, nil
}

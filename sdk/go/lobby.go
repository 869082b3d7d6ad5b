package realsync

import (
	"context"
	"net/http"
	"strings"
)

// ListRooms returns a page of public rooms (GET /v1/rooms; players, or an
// API key with rooms:read). p may be nil (the first 20 waiting rooms,
// newest first). p.Attr filters by attribute: keys "map" (equality) or
// "rank.gte", "rank.lte", "rank.gt", "rank.lt" (numeric bounds), sent as
// attr.<key>; the "attr." prefix may be written too. Pass the page's
// NextCursor as p.Cursor for the next page (nil on the last one).
func (c *Client) ListRooms(ctx context.Context, p *ListRoomsParams) (*RoomList, error) {
	if p != nil && p.Attr != nil {
		q := *p
		attr := make(map[string]string, len(*p.Attr))
		for k, v := range *p.Attr {
			attr["attr."+strings.TrimPrefix(k, "attr.")] = v
		}
		q.Attr, p = &attr, &q
	}
	r, err := c.API.ListRoomsWithResponse(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return decoded(r.JSON200)
}

// QuickJoin joins the best joinable public room of a mode, or creates one
// when q.Create is set (POST /v1/matchmaking/quick-join; players only).
// Created tells which. Errors: 404 NO_MATCH. Safe to send again with ctx
// from WithIdempotencyKey.
func (c *Client) QuickJoin(ctx context.Context, q QuickJoinRequest) (*QuickJoined, error) {
	r, err := c.API.QuickJoinWithResponse(ctx, &QuickJoinParams{IdempotencyKey: idempotencyKey(ctx)}, q)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK, http.StatusCreated); err != nil {
		return nil, err
	}
	j := r.JSON201
	if j == nil {
		j = r.JSON200
	}
	if j == nil {
		return nil, errNoBody
	}
	return joined(c, j, j.Room.Id, j.PlayerId), nil
}

// LobbyStats returns the live room and player counts (GET
// /v1/lobby/stats; players, or an API key with rooms:read).
func (c *Client) LobbyStats(ctx context.Context) (*LobbyStats, error) {
	r, err := c.API.LobbyStatsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return decoded(r.JSON200)
}

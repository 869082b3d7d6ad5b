package realsync

import (
	"context"
	"errors"
	"net/http"
	"strconv"
)

// errNoBody is returned when a success answer carried no JSON body.
var errNoBody = errors.New("realsync: the answer has no JSON body")

// decoded returns v, or errNoBody when the answer's JSON did not decode.
func decoded[T any](v *T) (*T, error) {
	if v == nil {
		return nil, errNoBody
	}
	return v, nil
}

// CreateRoom creates a room with the caller as its owner, player 1
// (POST /v1/rooms). Players only: an API key is 403 SCOPE_REQUIRED (a
// dedicated server creates its rooms with a host identity token, see
// examples/dedicated-server). Errors: 422 VALIDATION_FAILED naming each
// bad field, 409 OWNED_ROOMS_LIMIT or JOINED_ROOMS_LIMIT. Safe to send again
// with ctx from WithIdempotencyKey.
func (c *Client) CreateRoom(ctx context.Context, room CreateRoomRequest) (*RoomJoined, error) {
	r, err := c.API.CreateRoomWithResponse(ctx, &CreateRoomParams{IdempotencyKey: idempotencyKey(ctx)}, room)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusCreated); err != nil {
		return nil, err
	}
	return c.roomJoined(r.JSON201)
}

// roomJoined notes the playerId of a create or join answer (see
// Client.players).
func (c *Client) roomJoined(j *RoomJoined) (*RoomJoined, error) {
	if j == nil {
		return nil, errNoBody
	}
	return joined(c, j, j.Room.Id, j.PlayerId), nil
}

// GetRoom returns the room with its players (GET /v1/rooms/{roomId}).
// Errors: 404 ROOM_NOT_FOUND (also a private room the caller is not in).
func (c *Client) GetRoom(ctx context.Context, roomID string) (*Room, error) {
	r, err := c.API.GetRoomWithResponse(ctx, roomID)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return decoded(r.JSON200)
}

// UpdateRoom changes the fields of u that are set (PATCH /v1/rooms/{roomId};
// the owner, or an API key with rooms:write) and returns the room.
// Errors: 403 NOT_OWNER, 409 INVALID_TRANSITION or ROOM_FINISHED, 422.
func (c *Client) UpdateRoom(ctx context.Context, roomID string, u UpdateRoomRequest) (*Room, error) {
	r, err := c.API.UpdateRoomWithResponse(ctx, roomID, u)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return decoded(r.JSON200)
}

// SetStatus moves the room to status s (waiting⇄playing,
// waiting|playing→finished), as UpdateRoom.
func (c *Client) SetStatus(ctx context.Context, roomID string, s Status) (*Room, error) {
	return c.UpdateRoom(ctx, roomID, UpdateRoomRequest{Status: &s})
}

// DeleteRoom closes the room (DELETE /v1/rooms/{roomId}; the owner, or an
// API key with rooms:admin): its streams get room_closed, reason closed.
func (c *Client) DeleteRoom(ctx context.Context, roomID string) error {
	r, err := c.API.DeleteRoomWithResponse(ctx, roomID)
	if err != nil {
		return err
	}
	return expect(r.HTTPResponse, r.Body, http.StatusNoContent)
}

// JoinRoom joins a public room (POST /v1/rooms/{roomId}/join); a member
// gets its own playerId back. Players only. Errors: 404 ROOM_NOT_FOUND,
// 409 ROOM_NOT_JOINABLE, ROOM_FULL or JOINED_ROOMS_LIMIT, 403 BANNED.
func (c *Client) JoinRoom(ctx context.Context, roomID string) (*RoomJoined, error) {
	r, err := c.API.JoinRoomWithResponse(ctx, roomID)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return c.roomJoined(r.JSON200)
}

// JoinByCode joins the room of an invite code (POST
// /v1/rooms/join-by-code), as JoinRoom; a wrong code is 404 ROOM_NOT_FOUND.
func (c *Client) JoinByCode(ctx context.Context, code string) (*RoomJoined, error) {
	r, err := c.API.JoinRoomByCodeWithResponse(ctx, JoinByCodeRequest{InviteCode: code})
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return c.roomJoined(r.JSON200)
}

// LeaveRoom leaves the room (POST /v1/rooms/{roomId}/leave). Players only.
// Errors: 403 NOT_A_MEMBER.
func (c *Client) LeaveRoom(ctx context.Context, roomID string) error {
	r, err := c.API.LeaveRoomWithResponse(ctx, roomID)
	if err != nil {
		return err
	}
	return expect(r.HTTPResponse, r.Body, http.StatusNoContent)
}

// Kick removes a player (DELETE /v1/rooms/{roomId}/players/{playerId}; the
// owner, or an API key with rooms:admin); ban also keeps the player's user
// out of the room for its lifetime. The player's streams get player_left,
// reason kicked. Errors: 404 PLAYER_NOT_FOUND, 422 (the owner kicking
// themself).
func (c *Client) Kick(ctx context.Context, roomID string, playerID int, ban bool) error {
	var p KickPlayerParams
	if ban {
		p.Ban = &ban
	}
	r, err := c.API.KickPlayerWithResponse(ctx, roomID, strconv.Itoa(playerID), &p)
	if err != nil {
		return err
	}
	return expect(r.HTTPResponse, r.Body, http.StatusNoContent)
}

// ReserveSeats holds a seat of a waiting room for each of userIDs until
// they join or ttlSeconds pass (0: the server's default, 15; at most 300)
// (POST /v1/rooms/{roomId}/reservations): the owner, or an API key with
// rooms:write, as a matchmaker. Errors: 409 ROOM_NOT_JOINABLE unless
// waiting, 409 USER_BANNED when the room banned any of userIDs (the detail
// names them; servers before it answered 403 BANNED), 409 ROOM_FULL when
// the seats taken and held would pass maxPlayers. A refusal holds no seat.
func (c *Client) ReserveSeats(ctx context.Context, roomID string, userIDs []string, ttlSeconds int) (*SeatReservation, error) {
	body := ReserveSeatsRequest{UserIds: userIDs}
	if ttlSeconds > 0 {
		body.TtlSeconds = &ttlSeconds
	}
	r, err := c.API.ReserveSeatsWithResponse(ctx, roomID, body)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusCreated); err != nil {
		return nil, err
	}
	return decoded(r.JSON201)
}

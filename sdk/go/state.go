package realsync

import (
	"context"
	"net/http"
	"strconv"
)

// GetState returns the room's state with its versions (GET
// /v1/rooms/{roomId}/state; members, or an API key with rooms:read).
func (c *Client) GetState(ctx context.Context, roomID string) (*StateView, error) {
	r, err := c.API.GetRoomStateWithResponse(ctx, roomID)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return decoded(r.JSON200)
}

// PatchState merge-patches the room's state (PATCH
// /v1/rooms/{roomId}/state): each key of patch replaces the key's value
// whole, a nil value deletes the key. An API key with rooms:write writes
// any key (the state event says by 0); a player the keys the room's
// statePolicy allows (403 STATE_KEY_FORBIDDEN). Returns the new versions.
func (c *Client) PatchState(ctx context.Context, roomID string, patch State) (*StateVersions, error) {
	return c.patchState(ctx, roomID, patch, nil)
}

// PatchStateIf is PatchState applied only while the state is at
// stateVersion (If-Match): else 412 VERSION_MISMATCH and nothing changes.
// Read the state (GetState, or a stream's events), compute, PatchStateIf,
// and on VERSION_MISMATCH read again: no update is lost.
func (c *Client) PatchStateIf(ctx context.Context, roomID string, stateVersion int64, patch State) (*StateVersions, error) {
	m := `"` + strconv.FormatInt(stateVersion, 10) + `"`
	return c.patchState(ctx, roomID, patch, &m)
}

func (c *Client) patchState(ctx context.Context, roomID string, patch State, ifMatch *string) (*StateVersions, error) {
	r, err := c.API.PatchRoomStateWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, roomID,
		&PatchRoomStateParams{IfMatch: ifMatch}, patch)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusOK); err != nil {
		return nil, err
	}
	return decoded(r.JSON200)
}

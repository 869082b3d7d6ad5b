package rooms

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the room domain. Stores and the service wrap them with
// %w; the HTTP layer maps each to one status and code in a single table.
var (
	ErrRoomNotFound      = errors.New("room not found")
	ErrPlayerNotFound    = errors.New("player not found")
	ErrNotOwner          = errors.New("only the room owner may do this")
	ErrNotMember         = errors.New("only members of the room may do this")
	ErrStateKeyForbidden = errors.New("this state key may not be written by the caller")
	ErrRoomFull          = errors.New("room is full")
	ErrNotJoinable       = errors.New("room is not joinable")
	ErrInvalidTransition = errors.New("status change not allowed")
	ErrRoomFinished      = errors.New("room is finished and read-only until it is closed")
	ErrTooManyStreams    = fmt.Errorf("a player may hold at most %d event streams of one room", MaxStreamsPerPlayer)
	ErrVersionMismatch   = errors.New("stateVersion does not match If-Match")
	ErrOwnedRoomsLimit   = errors.New("the user owns as many rooms at once as allowed")
	ErrJoinedRoomsLimit  = errors.New("the user is in as many rooms at once as allowed")
	ErrStreamLimit       = errors.New("the user holds as many event streams open at once as allowed")
	ErrTooLarge          = errors.New("payload too large")
	ErrValidation        = errors.New("validation failed")
	ErrUnavailable       = errors.New("store unavailable")
	// ErrBanned: the caller was kicked from the room with a ban and may not
	// join it again.
	ErrBanned = errors.New("you are banned from this room")
	// ErrUserBanned: a seat reservation named a user the room banned (a
	// BannedUsersError names them; their own join would be ErrBanned).
	ErrUserBanned = errors.New("a user named is banned from this room")
	// ErrScopeRequired: an API key without the scope the action needs, or
	// an API key on an action only players may do.
	ErrScopeRequired = errors.New("scope required")
	// ErrInboxFull: the recipient follows others, and their log holds as
	// many events of senders they do not follow, which none of their
	// platforms was delivered, as it takes (half of
	// REALSYNC_OFFLINE_MAX): a direct message or an
	// invite of such a sender is refused until the recipient reads them,
	// follows the sender, or they expire.
	ErrInboxFull = errors.New("the recipient's inbox holds as many unread messages and invites from others as it takes; send again once they have read some")
	// ErrKeyReused: an Idempotency-Key used again with another request.
	ErrKeyReused = errors.New("idempotency key used with another request")
)

// FieldError names one field that breaks a documented constraint.
type FieldError struct {
	Field   string
	Message string
}

// ValidationError lists every invalid field of a request. It matches
// ErrValidation with errors.Is.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + " " + f.Message
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrValidation) true.
func (e *ValidationError) Is(target error) bool { return target == ErrValidation }

// Invalid returns a ValidationError for one field.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Fields: []FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// fieldErrors collects field errors and returns nil when there are none.
type fieldErrors []FieldError

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return &ValidationError{Fields: f}
}

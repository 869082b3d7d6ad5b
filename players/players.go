// Package players is the domain of a player beyond rooms: the personal
// event stream (GET /v1/me/events), sessions per platform, online status
// and the users a player follows. It imports no adapter: the store
// implements what the sse package's personal streams need, the api
// package serves it.
package players

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/realsync/realsync/rooms"
)

// Platforms a session declares (?platform=): one session per user and
// platform by default (Policy).
const (
	PlatformPC      = "pc"
	PlatformConsole = "console"
	PlatformMobile  = "mobile"
	PlatformWeb     = "web"
)

// Platforms is the documented set, in the order statuses list them.
var Platforms = []string{PlatformPC, PlatformConsole, PlatformMobile, PlatformWeb}

// Policy says what a new session does to an open one of the same user and
// platform (REALSYNC_SESSION_POLICY).
type Policy string

const (
	// PolicyReplace (the default): the old session gets session_replaced
	// and ends, on whatever instance it is.
	PolicyReplace Policy = "replace"
	// PolicyRejectNew: the new session is refused (ErrSessionExists, 409)
	// while the old one holds its lease.
	PolicyRejectNew Policy = "reject-new"
	// PolicyAllowMultiple: any number of sessions per platform (bounded by
	// the per-user stream quota when one is set).
	PolicyAllowMultiple Policy = "allow-multiple"
)

// ParsePolicy reads a policy name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicyReplace, PolicyRejectNew, PolicyAllowMultiple:
		return p, nil
	}
	return "", fmt.Errorf("unknown session policy %q (want replace, reject-new or allow-multiple)", s)
}

// Limits of the presence routes.
const (
	// MaxPresenceIDs is the most user ids one GET /v1/presence reads.
	MaxPresenceIDs = 100
	// MaxFollowing is the most users one user follows (PUT /v1/me/following).
	MaxFollowing = 500
	// MaxFollowingSent bounds the ids one PUT /v1/me/following sends,
	// duplicates included (MaxFollowing counts distinct ones): ten times
	// as many, so a list with repeats is taken while the work one body
	// makes stays bounded (the 80 KiB body cap bounds it too).
	MaxFollowingSent = 10 * MaxFollowing
	// MaxUserIDLen bounds a user id (rooms.MaxUserIDLen).
	MaxUserIDLen = rooms.MaxUserIDLen
)

// Errors of this package; api/errors.go maps them to problems.
var (
	// ErrInvalidPlatform: a missing or unknown platform (400).
	ErrInvalidPlatform = errors.New("invalid platform")
	// ErrSessionExists: the policy is reject-new and the user has a session
	// on the platform (409). A store says how long that session may still
	// hold the platform with a *SessionExistsError.
	ErrSessionExists = errors.New("a session of this user on this platform is open")
	// ErrPlayersOnly: a server credential (an API key) has no personal
	// stream (403 SCOPE_REQUIRED).
	ErrPlayersOnly = fmt.Errorf("only a player has a personal stream: %w", rooms.ErrScopeRequired)
	// ErrInvalidUserIDs: an empty, too long or too large list of user ids
	// (400).
	ErrInvalidUserIDs = errors.New("invalid user ids")
)

// CheckPlatform returns ErrInvalidPlatform (saying which are valid) unless
// p is one of Platforms.
func CheckPlatform(p string) error {
	if !slices.Contains(Platforms, p) {
		return fmt.Errorf("%w: %q is not one of %s", ErrInvalidPlatform, p, strings.Join(Platforms, ", "))
	}
	return nil
}

// CheckUserIDs checks a list of user ids: min..max ids, each a user id
// (rooms.ValidUserID: 1..MaxUserIDLen bytes of UTF-8 without commas,
// spaces, or control or format characters). Duplicates are allowed (the
// caller drops them).
func CheckUserIDs(ids []string, min, max int) error {
	if len(ids) < min || len(ids) > max {
		return fmt.Errorf("%w: %d ids, want %d to %d", ErrInvalidUserIDs, len(ids), min, max)
	}
	for i, id := range ids {
		if !rooms.ValidUserID(id) {
			return fmt.Errorf("%w: id %d is empty, longer than %d bytes, not UTF-8, or holds a comma, a space, or a control or format character", ErrInvalidUserIDs, i, MaxUserIDLen)
		}
	}
	return nil
}

// Status is a user's online status: online while any session holds a
// lease, with the platforms of those sessions (in the order of Platforms).
// Version orders a user's statuses: a later change has a larger one, also
// across the user going offline (the Redis clock in µs, kept increasing),
// so a status older than one already shown is dropped. An offline user
// whose status was never recorded (or is gone) has Version 0.
type Status struct {
	UserID    string
	Online    bool
	Platforms []string
	Version   int64
}

// Event returns the presence event of s.
func (s Status) Event(ts string) PresenceEvent {
	p := s.Platforms
	if p == nil {
		p = []string{}
	}
	return PresenceEvent{Type: EventPresence, UserID: s.UserID, Online: s.Online, Platforms: p, Version: s.Version, TS: ts}
}

// SessionExistsError is ErrSessionExists (errors.Is) for a session of
// Platform, with Left, the time until the open session's lease runs out
// unless its instance renews it (0: unknown): a new session is refused
// at least that long; one whose client is still connected renews it, and
// a retry then is refused again.
type SessionExistsError struct {
	Platform string
	Left     time.Duration
}

func (e *SessionExistsError) Error() string {
	return fmt.Sprintf("%v (platform %s)", ErrSessionExists, e.Platform)
}

// Is makes errors.Is(err, ErrSessionExists) hold.
func (e *SessionExistsError) Is(target error) bool { return target == ErrSessionExists }

// RetryAfter is how long a new session is refused at least: Left (0:
// unknown).
func (e *SessionExistsError) RetryAfter() time.Duration { return e.Left }

package players

import (
	"context"
	"fmt"
	"slices"

	"github.com/realsync/realsync/rooms"
)

// Store is what the presence routes need from storage (the store package
// implements it): statuses by user, and each user's following.
type Store interface {
	// Statuses returns the status of each user, in order (offline,
	// Version 0, for a user never seen).
	Statuses(ctx context.Context, users []string) ([]Status, error)
	// SetFollowing replaces the users user follows and tells user's
	// personal streams on every instance.
	SetFollowing(ctx context.Context, user string, ids []string) error
	// Follows says whether user follows other.
	Follows(ctx context.Context, user, other string) (bool, error)
}

// Service checks and serves the presence routes.
type Service struct{ store Store }

// NewService returns a Service on store.
func NewService(store Store) *Service { return &Service{store: store} }

// Presence returns the status of each of ids (1..MaxPresenceIDs, in order,
// duplicates kept). Errors: ErrInvalidUserIDs, rooms.ErrUnavailable.
func (s *Service) Presence(ctx context.Context, ids []string) ([]Status, error) {
	if err := CheckUserIDs(ids, 1, MaxPresenceIDs); err != nil {
		return nil, err
	}
	return s.store.Statuses(ctx, ids)
}

// Follows says whether user follows other: an inbox keeps a share of its
// rate for the senders its user follows (the API's limits). Errors:
// rooms.ErrUnavailable.
func (s *Service) Follows(ctx context.Context, user, other string) (bool, error) {
	return s.store.Follows(ctx, user, other)
}

// SetFollowing makes player u follow ids (0..MaxFollowing distinct ones,
// duplicates dropped before they are counted; at most MaxFollowingSent
// sent) and returns them sorted. A user following themself is allowed
// (their own status then reaches their stream). Errors: ErrInvalidUserIDs
// (nothing changed), rooms.ErrScopeRequired for an API key,
// rooms.ErrUnavailable.
func (s *Service) SetFollowing(ctx context.Context, u rooms.User, ids []string) ([]string, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return nil, err
	}
	if len(ids) > MaxFollowingSent {
		return nil, fmt.Errorf("%w: %d ids sent, duplicates included, want at most %d", ErrInvalidUserIDs, len(ids), MaxFollowingSent)
	}
	if err := CheckUserIDs(ids, 0, MaxFollowingSent); err != nil {
		return nil, err
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > MaxFollowing {
		return nil, fmt.Errorf("%w: %d distinct ids, want 0 to %d", ErrInvalidUserIDs, len(ids), MaxFollowing)
	}
	if err := s.store.SetFollowing(ctx, u.ID, ids); err != nil {
		return nil, err
	}
	return ids, nil
}

// FollowConsent is matchmaking's party consent by following
// (REALSYNC_PARTY_CONSENT=follow): a member consents to every party of
// the users they follow.
type FollowConsent struct{ Store Store }

// Consents reports whether member follows leader.
func (f FollowConsent) Consents(ctx context.Context, member, leader string) (bool, error) {
	return f.Store.Follows(ctx, member, leader)
}

// Refusal says what a member who does not consent has not done.
func (FollowConsent) Refusal() string {
	return "does not follow you: a user consents to be in a player's party by following them (PUT /v1/me/following)"
}

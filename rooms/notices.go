package rooms

import (
	"context"
	"time"
)

// noticeTimeout bounds the notices of one request, sent after its change
// was made: a client that hangs up, or a request timeout, does not cut
// them short.
const noticeTimeout = 5 * time.Second

// noticeContext is ctx without its cancellation, bounded by noticeTimeout.
func noticeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), noticeTimeout)
}

// Notifier tells users, beyond the room's own stream, what a room did to
// them: their personal stream gets it (players implements it), also when
// they are not connected to the room, or offline.
type Notifier interface {
	// Kicked tells user uid they were removed from room (banned: for good).
	Kicked(ctx context.Context, uid, room string, banned bool) error
	// Closed tells each of uids that room closed for reason.
	Closed(ctx context.Context, uids []string, room string, reason CloseReason) error
}

// membersOf returns the user ids of room id's players (none when it
// cannot be read: the notice is then not sent), and of player pid's user
// when pid > 0.
func (s *Service) membersOf(ctx context.Context, id string, pid int) (all []string, of string) {
	r, _, err := s.store.Get(ctx, id, false)
	if err != nil {
		return nil, ""
	}
	for _, p := range r.Players {
		all = append(all, p.UserID)
		if p.PlayerID == pid {
			of = p.UserID
		}
	}
	return all, of
}

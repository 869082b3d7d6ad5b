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

// userOf returns the user id of room id's player pid ("" when it cannot
// be read: the notice is then not sent).
func (s *Service) userOf(ctx context.Context, id string, pid int) string {
	r, _, err := s.store.Get(ctx, id, false)
	if err != nil {
		return ""
	}
	for _, p := range r.Players {
		if p.PlayerID == pid {
			return p.UserID
		}
	}
	return ""
}

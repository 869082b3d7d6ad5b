package feed

import (
	"context"
	"strings"

	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/sessions"
)

// The feed carries the users' channels (store/sessions, store/userlog): a
// user's logged events and control messages, and the user's status
// changes. A sink that is no sse.UserSink receives none of them.

// SubscribeUser implements sse.UserFeed.
func (f *Feed) SubscribeUser(ctx context.Context, uid string) error {
	return f.mux.Subscribe(ctx, f.userShard(uid), f.cfg.UserChannel(uid))
}

// UnsubscribeUser implements sse.UserFeed.
func (f *Feed) UnsubscribeUser(uid string) {
	f.mux.Unsubscribe(f.userShard(uid), f.cfg.UserChannel(uid))
}

// SubscribeStatus implements sse.UserFeed.
func (f *Feed) SubscribeStatus(ctx context.Context, uid string) error {
	return f.mux.Subscribe(ctx, f.userShard(uid), f.cfg.StatusChannel(uid))
}

// UnsubscribeStatus implements sse.UserFeed.
func (f *Feed) UnsubscribeStatus(uid string) {
	f.mux.Unsubscribe(f.userShard(uid), f.cfg.StatusChannel(uid))
}

// userChannel reads a user channel ("{<tag>}:uch:<userId>") or a status
// channel ("{<tag>}}:st:<userId>", store/sessions.StatusChannel: its
// infix's brace follows the tag's own): the infix right after the hash
// tag, the rest the user's id, which may hold either infix itself (a
// follower of "ev}:uch:bob7" was sent its status as bob7's logged events,
// which failed to parse: a tester's find).
func userChannel(channel string) (uid string, user, status bool) {
	i := strings.IndexByte(channel, '}')
	if i < 0 {
		return "", false, false
	}
	rest := channel[i:]
	if strings.HasPrefix(rest, "}}") {
		rest = rest[1:]
	}
	if uid, ok := strings.CutPrefix(rest, sessions.UserChannelInfix); ok {
		return uid, true, false
	}
	if uid, ok := strings.CutPrefix(rest, sessions.StatusChannelInfix); ok {
		return uid, false, true
	}
	return "", false, false
}

// userMessage hands a message of a user or status channel to the sink;
// reports whether channel was one.
func (f *Feed) userMessage(channel, payload string) bool {
	uid, user, status := userChannel(channel)
	us, ok := f.sink.(sse.UserSink)
	switch {
	case user && ok:
		if payload == "F" {
			us.DeliverUser(uid, sse.UserEvent{Control: true})
		} else if e, err := sessions.ParseUserEvent(payload); err == nil {
			us.DeliverUser(uid, e)
		}
	case status && ok:
		us.DeliverStatus(sessions.ParseStatus(uid, payload))
	}
	return user || status
}

// userResubscribed tells the sink a user or status channel was
// resubscribed; reports whether channel was one.
func (f *Feed) userResubscribed(channel string) bool {
	uid, user, status := userChannel(channel)
	us, ok := f.sink.(sse.UserSink)
	switch {
	case user && ok:
		us.ResubscribedUser(uid)
	case status && ok:
		us.ResubscribedStatus(uid)
	}
	return user || status
}

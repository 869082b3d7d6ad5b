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

// userMessage hands a message of a user or status channel to the sink;
// reports whether channel was one.
func (f *Feed) userMessage(channel, payload string) bool {
	us, ok := f.sink.(sse.UserSink)
	if _, uid, found := strings.Cut(channel, sessions.UserChannelInfix); found {
		if ok {
			if payload == "F" {
				us.DeliverUser(uid, sse.UserEvent{Control: true})
			} else if e, err := sessions.ParseUserEvent(payload); err == nil {
				us.DeliverUser(uid, e)
			}
		}
		return true
	}
	if _, uid, found := strings.Cut(channel, sessions.StatusChannelInfix); found {
		if ok {
			us.DeliverStatus(sessions.ParseStatus(uid, payload))
		}
		return true
	}
	return false
}

// userResubscribed tells the sink a user or status channel was
// resubscribed; reports whether channel was one.
func (f *Feed) userResubscribed(channel string) bool {
	us, ok := f.sink.(sse.UserSink)
	if _, uid, found := strings.Cut(channel, sessions.UserChannelInfix); found {
		if ok {
			us.ResubscribedUser(uid)
		}
		return true
	}
	if _, uid, found := strings.Cut(channel, sessions.StatusChannelInfix); found {
		if ok {
			us.ResubscribedStatus(uid)
		}
		return true
	}
	return false
}

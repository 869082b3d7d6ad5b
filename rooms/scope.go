package rooms

import (
	"fmt"
	"strings"
)

// Scope is a power of the server: what an API key (a dedicated game server
// or a back office) may do to any room. Players never hold scopes.
type Scope uint8

// The scopes. ScopeRead reads any room, public or private, with its
// players, invite code, state, every message, and its event stream without
// being a player (no presence). ScopeWrite writes any state key (the state
// event says by 0), sends messages as the server (from 0) and changes room
// fields as the owner could. ScopeAdmin closes any room and kicks (and
// bans) any player.
const (
	ScopeRead Scope = 1 << iota
	ScopeWrite
	ScopeAdmin
)

// scopeNames are the scopes' names, in order.
var scopeNames = []struct {
	s    Scope
	name string
}{{ScopeRead, "rooms:read"}, {ScopeWrite, "rooms:write"}, {ScopeAdmin, "rooms:admin"}}

// String is the scope's name ("rooms:read"), or the names of a set joined
// by commas.
func (s Scope) String() string {
	var out []string
	for _, n := range scopeNames {
		if s&n.s != 0 {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ",")
}

// ParseScopes reads a comma-separated list of scope names ("rooms:read,
// rooms:write"); at least one, each known, none twice.
func ParseScopes(list string) (Scope, error) {
	var out Scope
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		var s Scope
		for _, n := range scopeNames {
			if n.name == name {
				s = n.s
			}
		}
		switch {
		case s == 0:
			return 0, fmt.Errorf("unknown scope %q (known: rooms:read, rooms:write, rooms:admin)", name)
		case out&s != 0:
			return 0, fmt.Errorf("scope %q given twice", name)
		}
		out |= s
	}
	return out, nil
}

// Can reports whether u is the server holding scope s. A player (Server
// false) never can, whatever Scopes says.
func (u User) Can(s Scope) bool { return u.Server && u.Scopes&s == s && s != 0 }

// RequireScope is nil when u may act as the server with scope s: a player
// gets nil too (the player rules apply to them); the server without s gets
// ErrScopeRequired naming s.
func RequireScope(u User, s Scope) error {
	if u.Server && !u.Can(s) {
		return ScopeRequired(s)
	}
	return nil
}

// ScopeRequired is ErrScopeRequired naming the scope that was missing.
func ScopeRequired(s Scope) error {
	return fmt.Errorf("this needs the scope %s, which the API key does not have: %w", s, ErrScopeRequired)
}

// PlayersOnly refuses the server what only players do (create, join,
// leave, quick-join, their own rooms, stream tokens): ErrScopeRequired
// saying a player token is needed; nil for players.
func PlayersOnly(u User) error {
	if u.Server {
		return fmt.Errorf("only players may do this: it needs a player token, not an API key: %w", ErrScopeRequired)
	}
	return nil
}

// Package redisurl parses Redis URLs without ever putting their
// credentials in an error: a URL's user name and password are secrets,
// and errors end up in logs.
package redisurl

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// hidden stands for a URL's user information in errors.
const hidden = "xxxxx"

// Parse is redis.ParseURL with an error that shows none of raw's user
// information (user name and password): it shows raw with that part
// replaced by xxxxx, or, when only that part is wrong, says so.
func Parse(raw string) (*redis.Options, error) {
	o, err := redis.ParseURL(raw)
	if err == nil {
		return o, nil
	}
	safe := Redact(raw)
	if safe == raw {
		return nil, err // no user information to hide
	}
	if _, serr := redis.ParseURL(safe); serr != nil {
		return nil, serr // names safe, not raw
	}
	return nil, errors.New("the user name or password part of the URL is not valid (not shown): percent-encode its special characters, such as % as %25 and / as %2F")
}

// Redact returns raw with its user information, everything from "://" to
// the last "@", replaced by xxxxx. The last "@" and not the authority's
// end: a password may hold an unescaped "/", "?" or "#", which would end
// the authority early and leave the rest of the password in view (a host
// name never holds "@").
func Redact(raw string) string {
	i := strings.Index(raw, "://")
	j := strings.LastIndex(raw, "@")
	if i < 0 || j < i+3 {
		return raw
	}
	return raw[:i+3] + hidden + raw[j:]
}

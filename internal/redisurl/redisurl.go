// Package redisurl parses Redis URLs without ever putting their
// credentials in an error: a URL's user name and password are secrets,
// and errors end up in logs.
package redisurl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// hidden stands for a URL's user information in errors.
const hidden = "xxxxx"

// MaxPool bounds the URL's pool options (pool_size, min_idle_conns,
// max_idle_conns, max_active_conns, pipeline_pool_size): go-redis takes
// any number and panics when it builds the pool (a channel of that size).
const MaxPool = 10_000

// Parse is redis.ParseURL with an error that shows none of raw's user
// information (user name and password): it shows raw with that part
// replaced by xxxxx, or, when only that part is wrong, says so. Options
// redis.ParseURL takes but the client cannot work with are refused too:
// a pool option outside 0..MaxPool (go-redis panics), a dial_timeout or
// pool_timeout of 0 or below (for go-redis, no timeout: a dial or a wait
// for a connection then fails at once, every time), a max_retries below
// -1 (no command is ever sent), a client_name Redis refuses (a space, a
// rune outside printable ASCII).
func Parse(raw string) (*redis.Options, error) {
	o, err := redis.ParseURL(raw)
	if err == nil {
		if err := usable(o); err != nil {
			return nil, err
		}
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

func usable(o *redis.Options) error {
	for _, n := range []struct {
		name string
		v    int
	}{{"pool_size", o.PoolSize}, {"min_idle_conns", o.MinIdleConns}, {"max_idle_conns", o.MaxIdleConns},
		{"max_active_conns", o.MaxActiveConns}, {"pipeline_pool_size", o.PipelinePoolSize}} {
		if n.v < 0 || n.v > MaxPool {
			return fmt.Errorf("%s=%d: must be 0..%d (0: go-redis' default)", n.name, n.v, MaxPool)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial_timeout", o.DialTimeout}, {"pool_timeout", o.PoolTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%s: must be above 0 (0 or below turns it off in go-redis, and every dial or wait for a connection fails at once); leave it out for the default", d.name)
		}
	}
	if o.MaxRetries < -1 {
		// go-redis runs a command max_retries+1 times: below -1, never,
		// answering nil for an error (an operations tester's find)
		return fmt.Errorf("max_retries=%d: must be -1 (no retry) or more (0: go-redis' default)", o.MaxRetries)
	}
	if strings.ContainsFunc(o.ClientName, func(r rune) bool { return r < '!' || r > '~' }) {
		return fmt.Errorf("client_name %q: Redis takes printable ASCII only, no space (CLIENT SETNAME refuses it at every connection)", o.ClientName)
	}
	return nil
}

// Redact returns raw with its user information, everything before the
// last "@" from "://" (or from the start: an address without a scheme,
// "user:pw@host:6379", or one whose "://" comes after the "@"), replaced
// by xxxxx. The last "@" and not the authority's end: a password may hold
// an unescaped "/", "?", "#" or "://", which would end the authority early
// and leave the rest of the password in view (a host name never holds
// "@").
func Redact(raw string) string {
	j := strings.LastIndex(raw, "@")
	if j < 0 {
		return raw
	}
	if i := strings.Index(raw, "://"); i >= 0 && i+3 <= j && !strings.Contains(raw[:i], "@") && !strings.Contains(raw[:i], ":") {
		return raw[:i+3] + hidden + raw[j:]
	}
	return hidden + raw[j:]
}

package limits

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Set is the limits in force, by key "<name>.<scope>" ("create.user",
// "create.ip", "messages.room"). A key missing or Zero: no limit. Off: none
// at all.
type Set struct {
	Off    bool
	Limits map[string]Limit
}

// Get returns the limit of name in scope (Zero when there is none).
func (s Set) Get(name string, scope Scope) Limit {
	if s.Off {
		return Limit{}
	}
	return s.Limits[name+"."+string(scope)]
}

// known lists every limit name with its scopes, the first being the one a
// bare name in REALSYNC_RATE_LIMITS sets.
var known = map[string][]Scope{
	"auth":     {IP},
	"create":   {User, IP},
	"join":     {User, IP},
	"write":    {User, IP},
	"direct":   {User, IP},
	"read":     {User, IP},
	"stream":   {User, IP},
	"opens":    {User},
	"guess":    {User, IP},
	"guests":   {IP},
	"messages": {Room},
	"patches":  {Room},
}

func per(rate int, period time.Duration, burst int) Limit {
	return Limit{Rate: rate, Period: period, Burst: burst}
}

// Defaults are the limits when REALSYNC_RATE_LIMITS sets nothing. Per
// user, near Unity Lobby's per-player table (≈ 1 request/s for queries and
// joins, 20 creates/min) but with room for a real-time game's reads and
// writes; per client address (IPv6: /64) several times the per-user ones,
// so a few dozen players behind one NAT (a LAN party, a campus) never meet
// them. README's configuration section explains each.
func Defaults() Set {
	return Set{Limits: map[string]Limit{
		"auth.ip":     per(10, time.Second, 100),
		"create.user": per(20, time.Minute, 10),
		"create.ip":   per(120, time.Minute, 60),
		"join.user":   per(2, time.Second, 10),
		"join.ip":     per(20, time.Second, 100),
		"write.user":  per(20, time.Second, 40),
		"write.ip":    per(100, time.Second, 200),
		// what lands in other users' personal logs, kept there
		// REALSYNC_OFFLINE_TTL (7 days) whether read or not: a chat's pace
		"direct.user": per(60, time.Minute, 20),
		"direct.ip":   per(600, time.Minute, 100),
		"read.user":   per(10, time.Second, 30),
		"read.ip":     per(100, time.Second, 300),
		"stream.user": per(2, time.Second, 20),
		"stream.ip":   per(20, time.Second, 100),
		"opens.user":  per(60, time.Minute, 30),
		"guess.user":  per(10, time.Minute, 10),
		"guess.ip":    per(30, time.Minute, 30),
		// new guest accounts: every per-user bound (following lists,
		// idempotency answers, room quotas) is per account, so the
		// accounts one address makes bound what it may store
		"guests.ip":     per(60, time.Hour, 60),
		"messages.room": per(20, time.Second, 40),
		"patches.room":  per(30, time.Second, 60),
	}}
}

// maxCount bounds rates and bursts.
const maxCount = 1_000_000

// Parse reads REALSYNC_RATE_LIMITS: "" for the defaults, "off" for no
// limits at all, or comma-separated overrides of the defaults:
//
//	item  = name ["." scope] "=" ( rate [":burst=" count] | "off" )
//	rate  = count "/" ( "s" | "m" | "h" )
//
// e.g. "create=10/m,join=60/m:burst=10,read.ip=200/s,guess.ip=off". A bare
// name sets its first scope (user; ip for auth; room for messages and
// patches). Without a burst, the burst is the rate's count (10/m: 10 at
// once, then one every 6 s). Counts are 1..1000000. Every bad item is
// reported.
func Parse(s string) (Set, error) {
	set := Defaults()
	s = strings.TrimSpace(s)
	if s == "" {
		return set, nil
	}
	if s == "off" {
		return Set{Off: true}, nil
	}
	var errs []string
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		key, l, err := parseItem(strings.TrimSpace(item))
		if err == nil && seen[key] {
			err = fmt.Errorf("%s is set twice", key)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q: %v", strings.TrimSpace(item), err))
			continue
		}
		seen[key] = true
		set.Limits[key] = l
	}
	if len(errs) > 0 {
		return Set{}, fmt.Errorf("%s (want name[.scope]=count/s|m|h[:burst=count] or name[.scope]=off, e.g. create=10/m,join.ip=20/s:burst=100)",
			strings.Join(errs, "; "))
	}
	return set, nil
}

func parseItem(item string) (string, Limit, error) {
	lhs, rhs, ok := strings.Cut(item, "=")
	if !ok {
		return "", Limit{}, fmt.Errorf("no '='")
	}
	key, err := parseKey(strings.TrimSpace(lhs))
	if err != nil {
		return "", Limit{}, err
	}
	rhs = strings.TrimSpace(rhs)
	if rhs == "off" {
		return key, Limit{}, nil
	}
	rate, burst, hasBurst := strings.Cut(rhs, ":")
	count, unit, ok := strings.Cut(rate, "/")
	if !ok {
		return "", Limit{}, fmt.Errorf("rate %q is not count/s, count/m or count/h", rate)
	}
	n, err := parseCount(count)
	if err != nil {
		return "", Limit{}, err
	}
	period, ok := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if !ok {
		return "", Limit{}, fmt.Errorf("unit %q is not s, m or h", unit)
	}
	l := Limit{Rate: n, Period: period, Burst: n}
	if hasBurst {
		b, ok := strings.CutPrefix(burst, "burst=")
		if !ok {
			return "", Limit{}, fmt.Errorf("%q is not burst=count", burst)
		}
		if l.Burst, err = parseCount(b); err != nil {
			return "", Limit{}, err
		}
	}
	return key, l, nil
}

func parseKey(lhs string) (string, error) {
	name, scope, scoped := strings.Cut(lhs, ".")
	scopes, ok := known[name]
	if !ok {
		return "", fmt.Errorf("unknown limit %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if !scoped {
		return name + "." + string(scopes[0]), nil
	}
	if !slices.Contains(scopes, Scope(scope)) {
		return "", fmt.Errorf("%s has no scope %q (it has %v)", name, scope, scopes)
	}
	return lhs, nil
}

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxCount {
		return 0, fmt.Errorf("count %q is not an integer 1..%d", s, maxCount)
	}
	return n, nil
}

// Scopes lists the scopes of limit name (none for an unknown name).
func Scopes(name string) []Scope { return slices.Clone(known[name]) }

// Names lists the limit names, sorted.
func Names() []string {
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// String renders the set in the grammar Parse reads, sorted by key.
func (s Set) String() string {
	if s.Off {
		return "off"
	}
	keys := make([]string, 0, len(s.Limits))
	for k := range s.Limits {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		l := s.Limits[k]
		if l.Zero() {
			parts[i] = k + "=off"
			continue
		}
		unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[l.Period]
		parts[i] = fmt.Sprintf("%s=%d/%s:burst=%d", k, l.Rate, unit, l.Burst)
	}
	return strings.Join(parts, ",")
}

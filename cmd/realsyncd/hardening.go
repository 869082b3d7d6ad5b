package main

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/rooms"
)

// hardening holds the raw values of the hardening settings until they are
// checked (parseHardening).
type hardening struct {
	modes, regions, cors, requestTimeout string
	maxInFlight, inFlightWait            string
}

// parseHardening checks the hardening settings into c, reporting each bad
// value through bad, naming its variable.
func parseHardening(h hardening, c *Config, bad func(name, msg string)) {
	var ok bool
	if c.Modes, ok = nameList(h.modes); !ok {
		bad("REALSYNC_MODES", "must be a comma list of names matching "+rooms.NamePattern+" (unset: any such name)")
	}
	if c.Regions, ok = nameList(h.regions); !ok {
		bad("REALSYNC_REGIONS", "must be a comma list of names matching "+rooms.NamePattern+" (unset: any such name)")
	}
	if c.CORSOrigins, ok = originList(h.cors); !ok {
		bad("REALSYNC_CORS_ORIGINS", "must be a comma list of origins such as https://game.example or http://localhost:5173 (scheme, host, optional port 1..65535 but not the scheme's own, 80 or 443, which browsers leave out; no path), or * alone")
	}
	var err error
	if c.RequestTimeout, err = time.ParseDuration(h.requestTimeout); err != nil || c.RequestTimeout < 100*time.Millisecond || c.RequestTimeout > 10*time.Minute {
		bad("REALSYNC_REQUEST_TIMEOUT", "must be a duration from 100ms to 10m such as 10s")
	}
	if c.Admission.Max, err = strconv.Atoi(h.maxInFlight); err != nil || c.Admission.Max < 0 || c.Admission.Max > 1_000_000 {
		bad("REALSYNC_MAX_IN_FLIGHT", "must be a whole number from 0 (no bound) to 1000000 such as 512")
	}
	// (below the request timeout only when admission is on: the default
	// wait must not refuse a short timeout that worked before)
	if c.Admission.Wait, err = time.ParseDuration(h.inFlightWait); err != nil || c.Admission.Wait < 0 || c.Admission.Wait > 5*time.Second ||
		c.Admission.Max > 0 && c.RequestTimeout > 0 && c.Admission.Wait >= c.RequestTimeout {
		bad("REALSYNC_IN_FLIGHT_WAIT", "must be a duration from 0 to 5s, below REALSYNC_REQUEST_TIMEOUT, such as 500ms")
	}
}

// nameList reads a comma list of mode or region names, without repeats;
// "" is none (any name).
func nameList(s string) ([]string, bool) {
	if strings.TrimSpace(s) == "" {
		return nil, true
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !rooms.ValidName(n) || slices.Contains(out, n) {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// originList reads a comma list of origins (scheme://host[:port], as a
// browser sends them in Origin: without the scheme's default port, which
// would never match), or "*" alone; "" is none (no CORS).
func originList(s string) ([]string, bool) {
	if strings.TrimSpace(s) == "" {
		return nil, true
	}
	var out []string
	for _, o := range strings.Split(s, ",") {
		o = strings.TrimSpace(o)
		if o == "*" {
			out = append(out, o)
			continue
		}
		u, err := url.Parse(o)
		// a "*" within an origin is a wildcard to rs/cors ("https://*"
		// allowed every https origin, "https://game.example*" also
		// game.example.evil.com: an abuse tester's find); only "*" alone
		// means any
		if err != nil || strings.Contains(o, "*") || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" ||
			u.Fragment != "" || u.User != nil || strings.HasSuffix(o, "/") || o != strings.ToLower(u.Scheme)+"://"+u.Host ||
			strings.HasSuffix(u.Host, ":") || u.Port() == defaultPort(u.Scheme) || !originPort(u.Port()) {
			return nil, false
		}
		out = append(out, o)
	}
	if len(out) > 1 && slices.Contains(out, "*") {
		return nil, false
	}
	return out, true
}

// originPort: a port as a browser writes it in Origin, 1..65535 without a
// leading zero, or none (a tester's find: :99999 was taken, and matched
// no browser).
func originPort(port string) bool {
	if port == "" {
		return true
	}
	n, ok := portNumber(port)
	return ok && n >= 1 && n <= 65535 && port[0] != '0'
}

// defaultPort is the port an http or https origin has when it names none:
// browsers leave it out of Origin.
func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

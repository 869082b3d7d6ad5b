package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr returns the address a request's per-address limits count on:
// the peer's; or, when the peer is one of the trusted proxies, the
// rightmost X-Forwarded-For hop that is not a trusted proxy (hops to its
// left may be made up by the client; each trusted proxy appends the
// address it got the request from). A hop that is not an address stops
// the walk at the last trusted hop. IPv4-mapped IPv6 is IPv4; an IPv6
// address counts as its /64, the block one subscriber usually holds, so
// a client cannot multiply its budget by changing its address in it.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	addr, ok := parseHop(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr // not from a TCP listener (tests); still one bucket per value
	}
	if isTrusted(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, ok := parseHop(strings.TrimSpace(hops[i]))
			if !ok {
				break
			}
			addr = hop
			if !isTrusted(hop, trusted) {
				break
			}
		}
	}
	return addrKey(addr)
}

// parseHop reads "ip", "ip:port" or "[ipv6]:port".
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// isTrusted: a link-local peer's zone (fe80::1%eth0) is not compared, as
// the trusted ranges have none (netip's Contains never matches a zoned
// address).
func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	a = a.WithZone("")
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// addrKey is an IPv4 address as it is, an IPv6 address as its /64.
func addrKey(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}

package api

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.0.2.7/32")}
	tests := []struct {
		name    string
		peer    string   // RemoteAddr
		xff     []string // X-Forwarded-For headers, in order
		trusted []netip.Prefix
		want    string
	}{
		{name: "PeerWithoutProxies", peer: "203.0.113.5:4000", want: "203.0.113.5"},
		{name: "UntrustedPeerXFFIgnored", peer: "203.0.113.5:4000", xff: []string{"198.51.100.1"}, trusted: trusted, want: "203.0.113.5"},
		{name: "NoProxiesConfiguredXFFIgnored", peer: "10.1.1.1:4000", xff: []string{"198.51.100.1"}, want: "10.1.1.1"},
		{name: "TrustedPeerOneHop", peer: "10.1.1.1:4000", xff: []string{"198.51.100.1"}, trusted: trusted, want: "198.51.100.1"},
		{name: "SpoofedLeftHopsIgnored", peer: "10.1.1.1:4000", xff: []string{"1.2.3.4, 5.6.7.8, 198.51.100.1"}, trusted: trusted, want: "198.51.100.1"},
		{name: "ChainOfTrustedProxies", peer: "10.1.1.1:4000", xff: []string{"1.2.3.4, 198.51.100.1, 10.2.2.2, 192.0.2.7"}, trusted: trusted, want: "198.51.100.1"},
		{name: "SeveralHeadersJoined", peer: "10.1.1.1:4000", xff: []string{"1.2.3.4", "198.51.100.1, 10.9.9.9"}, trusted: trusted, want: "198.51.100.1"},
		{name: "AllTrustedLeftmost", peer: "10.1.1.1:4000", xff: []string{"10.3.3.3, 10.2.2.2"}, trusted: trusted, want: "10.3.3.3"},
		{name: "GarbageHopStopsAtLastTrusted", peer: "10.1.1.1:4000", xff: []string{"1.2.3.4, not-an-ip, 10.2.2.2"}, trusted: trusted, want: "10.2.2.2"},
		{name: "GarbageRightmostIsPeer", peer: "10.1.1.1:4000", xff: []string{"1.2.3.4, <script>"}, trusted: trusted, want: "10.1.1.1"},
		{name: "EmptyXFFIsPeer", peer: "10.1.1.1:4000", xff: []string{""}, trusted: trusted, want: "10.1.1.1"},
		{name: "HopWithPort", peer: "10.1.1.1:4000", xff: []string{"198.51.100.1:5555"}, trusted: trusted, want: "198.51.100.1"},
		{name: "IPv6PeerAs64", peer: "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:4000", want: "2001:db8:1:2::/64"},
		{name: "IPv6SameSubnetSameKey", peer: "[2001:db8:1:2::1]:4000", want: "2001:db8:1:2::/64"},
		{name: "IPv6HopAs64", peer: "[fd00::1]:4000", xff: []string{"2001:db8:9:9:1::5"}, trusted: trusted, want: "2001:db8:9:9::/64"},
		{name: "IPv6BracketedHopWithPort", peer: "[fd00::1]:4000", xff: []string{"[2001:db8:9:9::5]:443"}, trusted: trusted, want: "2001:db8:9:9::/64"},
		{name: "IPv4MappedIsIPv4", peer: "[::ffff:203.0.113.9]:4000", want: "203.0.113.9"},
		{name: "ZoneDropped", peer: "[fe80::1%eth0]:4000", want: "fe80::/64"},
		// a link-local proxy: its zone is no part of the match (netip's
		// Contains never matched a zoned peer: its XFF was ignored)
		{name: "ZonedTrustedPeer", peer: "[fe80::1%eth0]:4000", xff: []string{"198.51.100.1"}, trusted: []netip.Prefix{netip.MustParsePrefix("fe80::/10")}, want: "198.51.100.1"},
		{name: "ZonedTrustedHop", peer: "10.1.1.1:4000", xff: []string{"198.51.100.1, fe80::7%eth1"}, trusted: append(trusted, netip.MustParsePrefix("fe80::7/128")), want: "198.51.100.1"},
		{name: "NotAnAddress", peer: "pipe", want: "pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/rooms", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r, tt.trusted); got != tt.want {
				t.Fatalf("clientAddr = %q, want %q", got, tt.want)
			}
		})
	}
}

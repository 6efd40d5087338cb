package gen

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCheckDst(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ipv6 bool
		ok   bool
	}{
		{"198.18.0.2", false, true},
		{"198.19.255.255", false, true},
		{"198.20.0.1", false, false},
		{"10.1.1.1", true, false},
		{"::ffff:198.18.0.2", false, true}, // IPv4-mapped: the IPv4 address counts
		{"2001:2::2", true, true},
		{"2001:2::2", false, false}, // IPv6 not allowed
		{"2001:3::2", true, false},
	} {
		err := CheckDst(netip.MustParseAddr(tc.addr), tc.ipv6)
		var re *RangeError
		if tc.ok != (err == nil) || !tc.ok && !errors.As(err, &re) {
			t.Errorf("CheckDst(%s, ipv6 %v) = %v, want ok %v or a *RangeError", tc.addr, tc.ipv6, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		ipv6 bool
		want string
	}{
		{false, "10.1.1.1 is outside 198.18.0.0/15, the range reserved for benchmarking (RFC 2544)"},
		{true, "10.1.1.1 is outside 198.18.0.0/15 (IPv6: 2001:2::/48), the ranges reserved for benchmarking (RFC 2544, RFC 5180)"},
	} {
		if got := CheckDst(netip.MustParseAddr("10.1.1.1"), tc.ipv6).Error(); got != tc.want {
			t.Errorf("ipv6 %v: %q, want %q", tc.ipv6, got, tc.want)
		}
	}
}

func TestPeerIP(t *testing.T) {
	for src, want := range map[string]string{
		"198.18.3.1": "198.18.3.2", // the other end of test-bed link 3
		"198.18.3.2": "198.18.3.1",
		"198.18.3.7": "198.18.0.2", // not a test-bed host
		"10.0.0.1":   "198.18.0.2",
		"2001:2::1":  "198.18.0.2",
	} {
		if got := PeerIP(netip.MustParseAddr(src)); got.String() != want {
			t.Errorf("PeerIP(%s) = %s, want %s", src, got, want)
		}
	}
}

package engine

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseMatch(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Match
		str  string
	}{
		{"", Match{}, "all"},
		{"all", Match{}, "all"},
		{"proto=udp,port=4789", Match{IPProto: 17, DstPort: 4789}, "proto=udp,port=4789"},
		{"port=80", Match{DstPort: 80}, "port=80"},
		{"ether=arp", Match{EtherType: 0x0806}, "ether=arp"},
		{"ether=0x88B5", Match{EtherType: 0x88b5}, "ether=0x88b5"},
		{"ether=ipv6, proto=icmpv6", Match{EtherType: 0x86dd, IPProto: 58}, "ether=ipv6,proto=icmpv6"},
		{"proto=112", Match{IPProto: 112}, "proto=112"},
		{"dst=198.18.0.0/15,proto=tcp", Match{IPProto: 6, Dst: netip.MustParsePrefix("198.18.0.0/15")}, "proto=tcp,dst=198.18.0.0/15"},
		{"dst=2001:db8::1", Match{Dst: netip.MustParsePrefix("2001:db8::1/128")}, "dst=2001:db8::1/128"},
	} {
		m, err := ParseMatch(c.in)
		if err != nil || m != c.want {
			t.Errorf("ParseMatch(%q) = %+v, %v; want %+v", c.in, m, err, c.want)
			continue
		}
		if m.String() != c.str {
			t.Errorf("%+v.String() = %q, want %q", m, m.String(), c.str)
		}
		if back, err := ParseMatch(m.String()); err != nil || back != m {
			t.Errorf("ParseMatch(%q) = %+v, %v: does not read back", m.String(), back, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"proto", "KEY=VALUE"},
		{"colour=red", "KEY is one of"},
		{"port=0", "1 to 65535"},
		{"port=70000", "1 to 65535"},
		{"port=80x", "1 to 65535"},
		{"proto=foo", "a protocol is"},
		{"proto=0", "a protocol is"},
		{"ether=0x0100", "an EtherType is"},
		{"ether=2048", "an EtherType is"},
		{"port=1,port=2", "given twice"},
		{"dst=198.18.0.1/15", "host bits set"},
		{"dst=::ffff:198.18.0.0/111", "IPv4-mapped"},
		{"dst=nowhere", "a destination is"},
		{"proto=icmp,port=7", "ports are UDP's or TCP's"},
		{"ether=arp,proto=udp", "no such frame is IP"},
		{"ether=ipv6,dst=198.18.0.0/15", "another family"},
	} {
		if _, err := ParseMatch(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseMatch(%q): %v, want an error saying %q", c.in, err, c.want)
		}
	}
}

func TestConfigMatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Interface = "eth0"
	cfg.UDPPort, cfg.Match = 9, Match{IPProto: 6}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "UDPPort and Match both set") {
		t.Errorf("UDPPort and Match: %v", err)
	}
	cfg.UDPPort, cfg.Match = 9, Match{}
	if got := cfg.steering(); got != (Match{IPProto: 17, DstPort: 9}) {
		t.Errorf("UDPPort 9 steers %v", got)
	}
	cfg.UDPPort, cfg.Match = 0, Match{Dst: netip.MustParsePrefix("198.18.0.1/24")}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "host bits") {
		t.Errorf("a prefix with host bits: %v", err)
	}
}

package engine_test

import (
	"testing"

	"github.com/xdpeng/xdpeng/engine"
)

func TestParseRxMetadata(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want engine.RxMetadata
		str  string
	}{
		{"", 0, "none"},
		{"none", 0, "none"},
		{"hash", engine.RxHash, "hash"},
		{"vlan,hash", engine.RxHash | engine.RxVLAN, "hash,vlan"},
		{"timestamp,hash,vlan", engine.RxHash | engine.RxTimestamp | engine.RxVLAN, "hash,timestamp,vlan"},
	} {
		got, err := engine.ParseRxMetadata(tc.in)
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseRxMetadata(%q) = %v (%s), %v; want %v (%s)", tc.in, uint8(got), got, err, uint8(tc.want), tc.str)
		}
	}
	for _, bad := range []string{"rss", "hash,", "hash,,vlan"} {
		if _, err := engine.ParseRxMetadata(bad); err == nil {
			t.Errorf("ParseRxMetadata(%q) succeeded", bad)
		}
	}
}

func TestHashKindString(t *testing.T) {
	for k, want := range map[engine.HashKind]string{
		0:             "l2",
		engine.HashL4: "l4",
		engine.HashL3IPv4 | engine.HashL4 | engine.HashL4UDP: "ipv4,l4,udp",
		1 << 12: "0x1000",
	} {
		if got := k.String(); got != want {
			t.Errorf("HashKind(%#x).String() = %q, want %q", uint32(k), got, want)
		}
	}
}

// TestRxMetadataSimulated checks that a batch without metadata (Simulate,
// an engine without Config.RxMetadata) answers ok false.
func TestRxMetadataSimulated(t *testing.T) {
	frames := [][]byte{make([]byte, 64)}
	var okHash, okTS, okVLAN bool
	_, err := engine.Simulate(engine.HandlerFunc(func(b *engine.Batch) {
		_, _, okHash = b.RxHash(0)
		_, okTS = b.RxTimestamp(0)
		_, okVLAN = b.RxVLAN(0)
	}), frames)
	if err != nil {
		t.Fatal(err)
	}
	if okHash || okTS || okVLAN {
		t.Errorf("metadata in a batch without it: hash %v, timestamp %v, VLAN %v", okHash, okTS, okVLAN)
	}
}

package main

import (
	"reflect"
	"testing"

	"github.com/xdpeng/xdpeng/engine/handler"
)

func TestCountNames(t *testing.T) {
	for p := 0; p < 256; p++ {
		name := protocolName(uint8(p))
		if n, ok := protocolNumber(name); !ok || n != uint8(p) {
			t.Errorf("protocolNumber(%q) = %d, %v; want %d", name, n, ok, p)
		}
	}
	for _, bad := range []string{"other", "ip/256", "ip/-1", "ip/017", "ip/", "udp/9"} {
		if n, ok := protocolNumber(bad); ok {
			t.Errorf("protocolNumber(%q) = %d, want not ok", bad, n)
		}
	}
	if got := topN(map[string]uint64{"a": 1, "b": 3, "c": 3, "z": 0}, 2); !reflect.DeepEqual(got, []countEntry{{"b", 3}, {"c", 3}}) {
		t.Errorf("topN = %v", got)
	}
	// Ties in key order, numbers as numbers, the same every time.
	ports := map[string]uint64{"udp/10": 5, "udp/9": 5, "tcp/80": 5, "udp/100": 5, "udp/11": 7, "udp/09x": 5}
	want := []countEntry{{"udp/11", 7}, {"tcp/80", 5}, {"udp/9", 5}, {"udp/09x", 5}, {"udp/10", 5}, {"udp/100", 5}}
	for range 20 {
		if got := topN(ports, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("topN = %v, want %v", got, want)
		}
	}
	if got := delta(map[string]uint64{"a": 5, "b": 2}, map[string]uint64{"a": 3, "b": 2}); !reflect.DeepEqual(got, map[string]uint64{"a": 2}) {
		t.Errorf("delta = %v", got)
	}
}

func TestHashKey(t *testing.T) {
	if got := hashKey(0xab); got != "0x000000ab" {
		t.Errorf("hashKey(0xab) = %q", got)
	}
}

// The maps count prints: names as xdp1's, "other" for what is not IP or
// beyond the EtherTypes counted apart.
func TestCountMaps(t *testing.T) {
	s := handler.CountStats{
		ByProtocol: map[uint8]uint64{17: 5, 47: 1}, NonIP: 3,
		ByPort:      map[handler.PortKey]uint64{{Proto: 17, Port: 53}: 5},
		ByEtherType: map[uint16]uint64{0x0806: 2}, OtherEtherTypes: 1,
	}
	for _, c := range []struct {
		got, want map[string]uint64
	}{
		{protocolCounts(s), map[string]uint64{"udp": 5, "gre": 1, "other": 3}},
		{portCounts(s), map[string]uint64{"udp/53": 5}},
		{etherTypeCounts(s), map[string]uint64{"0x0806": 2, "other": 1}},
		{hashCounts(handler.FlowStats{ByHash: map[uint32]uint64{0xab: 4}}), map[string]uint64{"0x000000ab": 4}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	if m := etherTypeCounts(handler.CountStats{}); m != nil {
		t.Errorf("no EtherType counted: %v, want nil (left out of the JSON)", m)
	}
}

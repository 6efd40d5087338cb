package main

// What count prints of a handler's counts: keys named as xdp1 and
// xdp-bench name them ("udp", "udp/53", "0x0806", "0x1234abcd"), ranked.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/internal/counter"
)

// protocolCounts names the keys of s.ByProtocol (protocolName), with the
// frames that are not IP as "other".
func protocolCounts(s handler.CountStats) map[string]uint64 {
	m := make(map[string]uint64, len(s.ByProtocol)+1)
	for p, v := range s.ByProtocol {
		m[protocolName(p)] += v
	}
	if s.NonIP != 0 {
		m["other"] = s.NonIP
	}
	return m
}

// portCounts names the keys of s.ByPort: "udp/53".
func portCounts(s handler.CountStats) map[string]uint64 {
	m := make(map[string]uint64, len(s.ByPort))
	for k, v := range s.ByPort {
		m[k.String()] += v
	}
	return m
}

// etherTypeCounts names the keys of s.ByEtherType, "0x0806", with the
// types beyond those counted apart as "other"; nil when there are none.
func etherTypeCounts(s handler.CountStats) map[string]uint64 {
	if len(s.ByEtherType) == 0 && s.OtherEtherTypes == 0 {
		return nil
	}
	m := make(map[string]uint64, len(s.ByEtherType)+1)
	for et, v := range s.ByEtherType {
		m[fmt.Sprintf("0x%04x", et)] += v
	}
	if s.OtherEtherTypes != 0 {
		m["other"] = s.OtherEtherTypes
	}
	return m
}

// hashCounts names the keys of s.ByHash: "0x1234abcd".
func hashCounts(s handler.FlowStats) map[string]uint64 {
	m := make(map[string]uint64, len(s.ByHash))
	for h, v := range s.ByHash {
		m[hashKey(h)] += v
	}
	return m
}

// hashKey is how count spells an RX hash.
func hashKey(hash uint32) string { return fmt.Sprintf("0x%08x", hash) }

// countEntry is one counter of a map of named counts.
type countEntry struct {
	Key   string
	Count uint64
}

// topN returns the n largest entries of m (all of them if n <= 0), largest
// first, ties in the order of their keys with numbers compared as numbers
// ("udp/9" before "udp/10"), leaving out zeros.
func topN(m map[string]uint64, n int) []countEntry {
	e := make([]countEntry, 0, len(m))
	for k, v := range m {
		if v != 0 {
			e = append(e, countEntry{k, v})
		}
	}
	sort.Slice(e, func(i, j int) bool {
		if e[i].Count != e[j].Count {
			return e[i].Count > e[j].Count
		}
		return keyLess(e[i].Key, e[j].Key)
	})
	if n > 0 && len(e) > n {
		e = e[:n]
	}
	return e
}

// keyLess orders keys such as "udp/9" and "udp/10": runs of digits compare
// as numbers, the rest byte by byte.
func keyLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digits is the length of the run of ASCII digits at the start of s.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// delta returns m minus prev, key by key, for rates between two snapshots.
// Counters only grow, so a key missing from prev counts from zero.
func delta(m, prev map[string]uint64) map[string]uint64 {
	d := make(map[string]uint64, len(m))
	for k, v := range m {
		if n := counter.Sub(v, prev[k]); n != 0 {
			d[k] = n
		}
	}
	return d
}

// protocolNames are the IANA keywords of the protocols worth a name here;
// the rest are "ip/N".
var protocolNames = map[uint8]string{
	0:   "hopopt",
	1:   "icmp",
	2:   "igmp",
	4:   "ipip",
	6:   "tcp",
	17:  "udp",
	41:  "ipv6",
	43:  "ipv6-route",
	44:  "ipv6-frag",
	47:  "gre",
	50:  "esp",
	51:  "ah",
	58:  "icmpv6",
	60:  "ipv6-opts",
	89:  "ospf",
	103: "pim",
	112: "vrrp",
	115: "l2tp",
	132: "sctp",
	136: "udplite",
	137: "mpls-in-ip",
	143: "ethernet",
}

var protocolNumbers = func() map[string]uint8 {
	m := make(map[string]uint8, len(protocolNames))
	for n, s := range protocolNames {
		m[s] = n
	}
	return m
}()

// protocolName is how count names IP protocol p: its IANA
// keyword where known ("udp"), else "ip/N".
func protocolName(p uint8) string {
	if s, ok := protocolNames[p]; ok {
		return s
	}
	return "ip/" + strconv.Itoa(int(p))
}

// protocolNumber is the inverse of protocolName; ok is false for "other"
// and unknown names.
func protocolNumber(name string) (p uint8, ok bool) {
	if p, ok := protocolNumbers[name]; ok {
		return p, true
	}
	num, found := strings.CutPrefix(name, "ip/")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != num {
		return 0, false
	}
	return uint8(n), true
}

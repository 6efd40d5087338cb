package handler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/counter"
)

// Counter indexes. One flat array holds every counter a Count keeps,
// so that the private and the published copy are two arrays of one shape:
// IP protocols 0..255, then non-IP and malformed frames, then one block of
// 65536 destination ports per counted transport protocol.
const (
	idxNonIP     = 256
	idxMalformed = 257
	idxPorts     = 512
	idxUDPPorts  = idxPorts
	idxTCPPorts  = idxPorts + 1<<16
	numCounters  = idxPorts + 2<<16

	// maxEtherTypes is how many distinct non-IP EtherTypes a handler
	// counts by name; the rest share one "other" counter. Non-IP frames
	// are rare on a data path, so a short list searched linearly is
	// enough and costs 200 bytes instead of a 65536-entry array.
	maxEtherTypes = 16
)

// Count counts the frames of one queue by IP protocol and by UDP and
// TCP destination port, then drops them: the xdp1 sample's view, in
// userspace. Frames that are not IP are counted as "other" and by
// EtherType.
//
// The worker's goroutine counts in private arrays and, at the end of each
// batch, publishes the counters the batch changed with atomic stores, so
// Stats may be called from any goroutine while the worker runs, and the
// hot path takes no lock and allocates nothing. A handler holds two arrays
// of 131584 counters (about 2 MiB).
type Count struct {
	// counts is written by the worker only.
	counts [numCounters]uint64
	// touched lists the counters changed in the current batch: each frame
	// changes at most three (protocol, port, malformed).
	touched [3*engine.MaxBatch + 1]uint32
	etypes  [maxEtherTypes]uint16
	ecounts [maxEtherTypes + 1]uint64
	nEtypes int

	// pub is what readers see.
	pub     [numCounters]atomic.Uint64
	pubEt   [maxEtherTypes]atomic.Uint32 // EtherType | 1<<16 once the slot is used
	pubEcnt [maxEtherTypes + 1]atomic.Uint64
}

// NewCount returns a handler with all counters at zero.
func NewCount() *Count { return new(Count) }

// Hints declares that a Count never transmits.
func (h *Count) Hints() engine.Hints { return engine.Hints{ReceiveOnly: true} }

// Handle counts every frame of b and leaves it dropped.
func (h *Count) Handle(b *engine.Batch) {
	var s packet.Summary
	n := 0
	// A batch of one flow changes the same counters over and over;
	// skipping repeats of the last protocol and port keeps the list short.
	lastProto, lastPort := uint32(1<<31), uint32(1<<31)
	nonIP := false
	for i := 0; i < b.Len(); i++ {
		ok := packet.Parse(b.Frame(i), &s)
		if !ok {
			h.counts[idxMalformed]++
			h.touched[n] = idxMalformed
			n++
		}
		if s.L3 == 0 {
			h.counts[idxNonIP]++
			h.countEtherType(s.EtherType)
			nonIP = true
			continue
		}
		p := uint32(s.Proto)
		h.counts[p]++
		if p != lastProto {
			h.touched[n] = p
			n++
			lastProto = p
		}
		if s.L4Off == 0 {
			continue // a non-first fragment, truncated, or not UDP/TCP
		}
		var k uint32
		switch s.Proto {
		case packet.ProtoUDP:
			k = idxUDPPorts + uint32(s.DstPort)
		case packet.ProtoTCP:
			k = idxTCPPorts + uint32(s.DstPort)
		default:
			continue
		}
		h.counts[k]++
		if k != lastPort {
			h.touched[n] = k
			n++
			lastPort = k
		}
	}
	if nonIP {
		h.touched[n] = idxNonIP
		n++
		h.publishEtherTypes()
	}
	h.publish(h.touched[:n])
}

// publish copies the changed counters to the published array. A counter
// listed twice is stored once: the second time its published value is
// already current, and a plain load is much cheaper than a store.
func (h *Count) publish(touched []uint32) {
	for _, k := range touched {
		v := h.counts[k]
		if h.pub[k].Load() != v {
			h.pub[k].Store(v)
		}
	}
}

func (h *Count) countEtherType(et uint16) {
	for i := 0; i < h.nEtypes; i++ {
		if h.etypes[i] == et {
			h.ecounts[i]++
			return
		}
	}
	if h.nEtypes < maxEtherTypes {
		h.etypes[h.nEtypes] = et
		h.ecounts[h.nEtypes] = 1
		h.nEtypes++
		return
	}
	h.ecounts[maxEtherTypes]++
}

func (h *Count) publishEtherTypes() {
	for i := 0; i < h.nEtypes; i++ {
		// The type is stored before the count, so a reader that sees a
		// count sees its type.
		h.pubEt[i].Store(uint32(h.etypes[i]) | 1<<16)
		h.pubEcnt[i].Store(h.ecounts[i])
	}
	h.pubEcnt[maxEtherTypes].Store(h.ecounts[maxEtherTypes])
}

// CountStats are frame counts by protocol and port, of one queue or summed
// over several. Every frame is counted once in ByProtocol; IP frames with a
// complete UDP or TCP header also once in ByPort; non-IP frames also once
// in ByEtherType.
type CountStats struct {
	// Frames is the number of frames counted: the sum of ByProtocol.
	Frames uint64 `json:"frames"`
	// ByProtocol counts IP frames by protocol name ("udp", "tcp", "icmp",
	// "icmpv6", ..., "ip/N" for protocols without a name here) and non-IP
	// frames as "other".
	ByProtocol map[string]uint64 `json:"by_protocol"`
	// ByPort counts UDP and TCP frames by destination port, as "udp/53".
	// Non-first fragments and frames cut inside the transport header have
	// no port and appear only in ByProtocol.
	ByPort map[string]uint64 `json:"by_port"`
	// ByEtherType counts non-IP frames by EtherType ("0x0806"); beyond 16
	// distinct types per queue, the rest are counted as "other".
	ByEtherType map[string]uint64 `json:"by_ethertype,omitempty"`
	// Malformed frames ended inside a header they announced (packet.Parse
	// reported them incomplete); they are counted in ByProtocol too, as
	// far as they could be read.
	Malformed uint64 `json:"malformed"`
}

// Stats reads the handler's published counters. It may be called from any
// goroutine while the worker runs; each counter is exact as of the end of
// some batch, and all of them are once the worker has stopped.
func (h *Count) Stats() CountStats {
	s := CountStats{ByProtocol: map[string]uint64{}, ByPort: map[string]uint64{}}
	for p := 0; p < 256; p++ {
		if v := h.pub[p].Load(); v != 0 {
			s.ByProtocol[ProtocolName(uint8(p))] += v
			s.Frames += v
		}
	}
	if v := h.pub[idxNonIP].Load(); v != 0 {
		s.ByProtocol["other"] += v
		s.Frames += v
	}
	s.Malformed = h.pub[idxMalformed].Load()
	for port := 0; port < 1<<16; port++ {
		if v := h.pub[idxUDPPorts+port].Load(); v != 0 {
			s.ByPort["udp/"+strconv.Itoa(port)] = v
		}
		if v := h.pub[idxTCPPorts+port].Load(); v != 0 {
			s.ByPort["tcp/"+strconv.Itoa(port)] = v
		}
	}
	for i := range h.pubEt {
		et := h.pubEt[i].Load()
		if et == 0 {
			break // slots are used in order
		}
		if v := h.pubEcnt[i].Load(); v != 0 {
			s.addEtherType(fmt.Sprintf("0x%04x", uint16(et)), v)
		}
	}
	if v := h.pubEcnt[maxEtherTypes].Load(); v != 0 {
		s.addEtherType("other", v)
	}
	return s
}

func (s *CountStats) addEtherType(k string, v uint64) {
	if s.ByEtherType == nil {
		s.ByEtherType = map[string]uint64{}
	}
	s.ByEtherType[k] += v
}

// Add adds o's counts to s.
func (s *CountStats) Add(o CountStats) {
	if s.ByProtocol == nil {
		s.ByProtocol = map[string]uint64{}
	}
	if s.ByPort == nil {
		s.ByPort = map[string]uint64{}
	}
	s.Frames += o.Frames
	s.Malformed += o.Malformed
	for k, v := range o.ByProtocol {
		s.ByProtocol[k] += v
	}
	for k, v := range o.ByPort {
		s.ByPort[k] += v
	}
	for k, v := range o.ByEtherType {
		s.addEtherType(k, v)
	}
}

// CountEntry is one counter of a CountStats map.
type CountEntry struct {
	Key   string
	Count uint64
}

// Top returns the n largest entries of m (all of them if n <= 0), largest
// first, ties in the order of their keys with numbers compared as numbers
// ("udp/9" before "udp/10"), leaving out zeros.
func Top(m map[string]uint64, n int) []CountEntry {
	e := make([]CountEntry, 0, len(m))
	for k, v := range m {
		if v != 0 {
			e = append(e, CountEntry{k, v})
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

// Delta returns m minus prev, key by key, for rates between two snapshots.
// Counters only grow, so a key missing from prev counts from zero.
func Delta(m, prev map[string]uint64) map[string]uint64 {
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

// ProtocolName is the name CountStats uses for IP protocol p: its IANA
// keyword where known ("udp"), else "ip/N".
func ProtocolName(p uint8) string {
	if s, ok := protocolNames[p]; ok {
		return s
	}
	return "ip/" + strconv.Itoa(int(p))
}

// ProtocolNumber is the inverse of ProtocolName; ok is false for "other"
// and unknown names.
func ProtocolNumber(name string) (p uint8, ok bool) {
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

// CountGroup makes one Count per queue and sums their counts: pass
// its Handler method as Config.Handler. Its zero value is ready to use
// (var g handler.CountGroup; cfg.Handler = g.Handler); it must not be
// copied after first use.
type CountGroup struct {
	mu       sync.Mutex
	handlers []*Count
}

// Handler makes the handler of one queue's worker.
func (g *CountGroup) Handler(queue int) engine.Handler {
	h := NewCount()
	g.mu.Lock()
	g.handlers = append(g.handlers, h)
	g.mu.Unlock()
	return h
}

// Stats sums the counts of every queue.
func (g *CountGroup) Stats() CountStats {
	g.mu.Lock()
	hs := append([]*Count(nil), g.handlers...)
	g.mu.Unlock()
	s := CountStats{ByProtocol: map[string]uint64{}, ByPort: map[string]uint64{}}
	for _, h := range hs {
		s.Add(h.Stats())
	}
	return s
}

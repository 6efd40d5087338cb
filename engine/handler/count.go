package handler

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
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

// PortKey is a transport protocol, packet.ProtoUDP or packet.ProtoTCP,
// and a destination port: a key of CountStats.ByPort.
type PortKey struct {
	Proto uint8
	Port  uint16
}

// String writes k as "udp/53" or "tcp/443" ("ip/N/PORT" for another
// protocol, which Count never makes).
func (k PortKey) String() string {
	switch k.Proto {
	case packet.ProtoUDP:
		return "udp/" + strconv.Itoa(int(k.Port))
	case packet.ProtoTCP:
		return "tcp/" + strconv.Itoa(int(k.Port))
	}
	return "ip/" + strconv.Itoa(int(k.Proto)) + "/" + strconv.Itoa(int(k.Port))
}

// CountStats are frame counts by protocol and port, of one queue or summed
// over several. Every frame is counted once, in ByProtocol or in NonIP; IP
// frames with a complete UDP or TCP header also once in ByPort; non-IP
// frames also once in ByEtherType or OtherEtherTypes. The maps of a
// CountStats from Stats are the caller's; they hold no zero counts.
type CountStats struct {
	// Frames is the number of frames counted: the sum of ByProtocol and
	// NonIP.
	Frames uint64
	// ByProtocol counts IP frames by protocol number (IPv4's protocol,
	// IPv6's next header after the extension headers).
	ByProtocol map[uint8]uint64
	// NonIP counts the frames that are not IP.
	NonIP uint64
	// ByPort counts UDP and TCP frames by destination port. Non-first
	// fragments and frames cut inside the transport header have no port
	// and appear only in ByProtocol.
	ByPort map[PortKey]uint64
	// ByEtherType counts non-IP frames by EtherType, up to 16 distinct
	// types per queue; OtherEtherTypes counts those of further types.
	ByEtherType     map[uint16]uint64
	OtherEtherTypes uint64
	// Malformed frames ended inside a header they announced (packet.Parse
	// reported them incomplete); they are counted in ByProtocol or NonIP
	// too, as far as they could be read.
	Malformed uint64
}

// Stats reads the handler's published counters. It may be called from any
// goroutine while the worker runs; each counter is exact as of the end of
// some batch, and all of them are once the worker has stopped.
func (h *Count) Stats() CountStats {
	s := CountStats{ByProtocol: map[uint8]uint64{}, ByPort: map[PortKey]uint64{}, ByEtherType: map[uint16]uint64{}}
	for p := 0; p < 256; p++ {
		if v := h.pub[p].Load(); v != 0 {
			s.ByProtocol[uint8(p)] += v
			s.Frames += v
		}
	}
	s.NonIP = h.pub[idxNonIP].Load()
	s.Frames += s.NonIP
	s.Malformed = h.pub[idxMalformed].Load()
	for port := 0; port < 1<<16; port++ {
		if v := h.pub[idxUDPPorts+port].Load(); v != 0 {
			s.ByPort[PortKey{packet.ProtoUDP, uint16(port)}] = v
		}
		if v := h.pub[idxTCPPorts+port].Load(); v != 0 {
			s.ByPort[PortKey{packet.ProtoTCP, uint16(port)}] = v
		}
	}
	for i := range h.pubEt {
		et := h.pubEt[i].Load()
		if et == 0 {
			break // slots are used in order
		}
		if v := h.pubEcnt[i].Load(); v != 0 {
			s.ByEtherType[uint16(et)] += v
		}
	}
	s.OtherEtherTypes = h.pubEcnt[maxEtherTypes].Load()
	return s
}

// Add adds o's counts to s.
func (s *CountStats) Add(o CountStats) {
	if s.ByProtocol == nil {
		s.ByProtocol = map[uint8]uint64{}
	}
	if s.ByPort == nil {
		s.ByPort = map[PortKey]uint64{}
	}
	if s.ByEtherType == nil {
		s.ByEtherType = map[uint16]uint64{}
	}
	s.Frames += o.Frames
	s.NonIP += o.NonIP
	s.OtherEtherTypes += o.OtherEtherTypes
	s.Malformed += o.Malformed
	for k, v := range o.ByProtocol {
		s.ByProtocol[k] += v
	}
	for k, v := range o.ByPort {
		s.ByPort[k] += v
	}
	for k, v := range o.ByEtherType {
		s.ByEtherType[k] += v
	}
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
	var s CountStats
	for _, h := range hs {
		s.Add(h.Stats())
	}
	return s
}

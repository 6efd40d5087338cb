//go:build linux

package engine_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// metaFrame is what a handler read of one frame's receive metadata.
type metaFrame struct {
	srcPort         uint16
	hash            uint32
	kind            engine.HashKind
	hashOK          bool
	tsOK            bool
	tci, vlanProto  uint16
	vlanOK, inlined bool // inlined: the frame still holds a VLAN tag
}

// metaRecorder keeps the metadata of every frame its handlers see.
type metaRecorder struct {
	mu     sync.Mutex
	frames []metaFrame
}

func (r *metaRecorder) Handle(b *engine.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range b.Len() {
		var m metaFrame
		m.hash, m.kind, m.hashOK = b.RxHash(i)
		_, m.tsOK = b.RxTimestamp(i)
		m.tci, m.vlanOK = b.RxVLAN(i)
		var protoOK bool
		if m.vlanProto, protoOK = b.RxVLANProtocol(i); protoOK != m.vlanOK {
			panic("RxVLAN and RxVLANProtocol disagree on ok")
		}
		f := b.Frame(i)
		l3 := 14
		if binary.BigEndian.Uint16(f[12:]) == 0x8100 {
			m.inlined, l3 = true, 18
		}
		ihl := int(f[l3]&0xf) * 4
		m.srcPort = binary.BigEndian.Uint16(f[l3+ihl:])
		r.frames = append(r.frames, m)
	}
}

// TestRxMetadataVeth checks what veth gives the metadata kfuncs: a hash
// and the VLAN tag its skb carried for frames the generator's stack sent
// (AF_PACKET, through a VLAN device for the tag), no hardware timestamp,
// and nothing at all for frames redirected into it (live frames, through
// ndo_xdp_xmit: no skb).
func TestRxMetadataVeth(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	if err := bpf.CheckKfuncs(bpf.KfuncRxHash, bpf.KfuncRxTimestamp, bpf.KfuncRxVLANTag); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	if err := bpf.CheckAdjustMeta(); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	l := bed.Links[0]
	const vlanID, vlanSrcPort, flows, perFlow, live = 7, 5000, 8, 50, 400
	rec := &metaRecorder{}
	cfg := rxdropConfig(bed)
	cfg.RxMetadata = engine.RxHash | engine.RxTimestamp | engine.RxVLAN
	cfg.Handler = func(int) engine.Handler { return rec }
	cfg.FillSize, cfg.RxSize = 4096, 4096
	r := start(t, bed, cfg)

	base := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: 64,
	}
	frame := func(src uint16) []byte {
		c := base
		c.SrcPort = src
		f := make([]byte, c.Size)
		if _, err := packet.BuildUDP(f, c); err != nil {
			t.Fatal(err)
		}
		return f
	}
	var stack [][]byte
	for k := range flows {
		for range perFlow {
			stack = append(stack, frame(uint16(2000+k)))
		}
	}
	ps := openPacketSocket(t, bed, 0)
	ps.send(t, stack...)
	var tagged [][]byte
	for range perFlow {
		tagged = append(tagged, frame(vlanSrcPort))
	}
	// The kernel here has no VLAN devices: a tc program at the
	// generator end's egress tags the frames as one would, in the skb
	// (bpf_skb_vlan_push), and veth hands the tag over in the skb.
	tagger := vlanTagger(t, bed, vlanID)
	ps.send(t, tagged...)
	tagger.Close()
	if st := send(t, bed, 0, gen.Config{Frame: base, Count: live, Rate: 20_000, Threads: 1}); st.Sent != live {
		t.Fatalf("generator sent %d, want %d", st.Sent, live)
	}
	total := uint64(len(stack) + len(tagged) + live)
	s := r.finish(total)
	if got := s.Total().RxPackets; got != total {
		t.Fatalf("received %d frames, want %d", got, total)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	hashOf := map[uint16]uint32{}
	n := map[uint16]int{}
	for _, m := range rec.frames {
		n[m.srcPort]++
		if m.tsOK {
			t.Errorf("port %d: a receive timestamp on veth, which has no hardware time", m.srcPort)
		}
		switch p := m.srcPort; {
		case p == base.SrcPort:
			if m.hashOK || m.vlanOK {
				t.Errorf("live frame: hash ok %v, VLAN ok %v: want none (no skb behind an ndo_xdp_xmit frame)", m.hashOK, m.vlanOK)
			}
			continue
		case p == vlanSrcPort:
			if !m.vlanOK || m.tci&0xfff != vlanID || m.vlanProto != 0x8100 || m.inlined {
				t.Errorf("tagged frame: tag %#x proto %#x ok %v, tag still in the frame %v; want VLAN %d, 0x8100, taken off", m.tci, m.vlanProto, m.vlanOK, m.inlined, vlanID)
			}
		default:
			if m.vlanOK {
				t.Errorf("untagged frame from port %d: VLAN tag %#x", p, m.tci)
			}
		}
		if !m.hashOK {
			t.Errorf("frame from port %d sent by the stack: no RX hash", m.srcPort)
			continue
		}
		if m.kind&engine.HashL4 == 0 {
			t.Errorf("frame from port %d: hash kind %v, want an L4 hash (veth's skb hash covers the ports)", m.srcPort, m.kind)
		}
		if h, seen := hashOf[m.srcPort]; seen && h != m.hash {
			t.Errorf("flow from port %d: hashes %#x and %#x", m.srcPort, h, m.hash)
		}
		hashOf[m.srcPort] = m.hash
	}
	if n[base.SrcPort] != live || n[vlanSrcPort] != perFlow {
		t.Errorf("frames seen per source port %v: want %d live (port %d), %d tagged (port %d), %d per stack flow", n, live, base.SrcPort, perFlow, vlanSrcPort, perFlow)
	}
	distinct := map[uint32]bool{}
	for _, h := range hashOf {
		distinct[h] = true
	}
	if len(distinct) != flows+1 {
		t.Errorf("%d flows sent by the stack gave %d distinct hashes %v", flows+1, len(distinct), hashOf)
	}
}

// vlanTagger attaches to the generator end of the bed's first link, at tc
// egress, a program that gives every frame VLAN tag id in the skb, as a
// VLAN device on a device with VLAN offload does. Close detaches it.
func vlanTagger(t *testing.T, bed *testbed.Bed, id uint16) io.Closer {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.SchedCLS,
		Instructions: asm.Instructions{
			// bpf_skb_vlan_push(skb, htons(ETH_P_8021Q), id)
			asm.Mov.Imm(asm.R2, int32(htons(0x8100))),
			asm.Mov.Imm(asm.R3, int32(id)),
			asm.FnSkbVlanPush.Call(),
			asm.Mov.Imm(asm.R0, 0), // TC_ACT_OK
			asm.Return(),
		},
		License: "GPL",
	})
	if err != nil {
		t.Fatalf("load the VLAN tagger: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	var lk link.Link
	if err := bed.InGen(func() (err error) {
		lk, err = link.AttachTCX(link.TCXOptions{Interface: bed.Links[0].GenIndex, Program: prog, Attach: ebpf.AttachTCXEgress})
		return err
	}); err != nil {
		t.Fatalf("attach the VLAN tagger to %s: %v", bed.Links[0].Gen, err)
	}
	t.Cleanup(func() { lk.Close() })
	return lk
}

// TestRxMetadataRefused checks that what cannot give metadata is refused
// before anything is attached.
func TestRxMetadataRefused(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	for _, tc := range []struct {
		name string
		mod  func(*engine.Config)
	}{
		{"generic XDP", func(c *engine.Config) { c.XDPMode = engine.XDPGeneric }},
		{"unknown kind", func(c *engine.Config) { c.RxMetadata = 1 << 6 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rxdropConfig(bed)
			cfg.RxMetadata = engine.RxHash
			tc.mod(&cfg)
			err := bed.InDUT(func() error {
				e, err := engine.New(cfg)
				if err == nil {
					e.Close()
				}
				return err
			})
			if !errors.Is(err, engine.ErrRxMetadata) {
				t.Fatalf("engine.New: %v, want ErrRxMetadata", err)
			}
			t.Log(err)
			if h := testbedtest.ReadHooksIn(t, bed.DUTNS, bed.Links[0].DUT); !h.Empty() {
				t.Errorf("a refused engine left hooks on the device: %+v", h)
			}
		})
	}
}

// TestFlowCountVeth counts flows by RX hash (handler.FlowGroup, what count
// --by rxhash runs): the stack's frames by flow, the live frames as
// unhashed, every frame once.
func TestFlowCountVeth(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	if err := bpf.CheckKfuncs(bpf.KfuncRxHash); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	if err := bpf.CheckAdjustMeta(); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	l := bed.Links[0]
	const flows, perFlow, live = 6, 40, 300
	var g handler.FlowGroup
	cfg := rxdropConfig(bed)
	cfg.RxMetadata = engine.RxHash
	cfg.Handler = g.Handler
	cfg.FillSize, cfg.RxSize = 4096, 4096
	r := start(t, bed, cfg)
	base := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: 64,
	}
	var stack [][]byte
	for k := range flows {
		c := base
		c.DstPort = uint16(100 + k)
		f := make([]byte, c.Size)
		if _, err := packet.BuildUDP(f, c); err != nil {
			t.Fatal(err)
		}
		for range perFlow {
			stack = append(stack, f)
		}
	}
	openPacketSocket(t, bed, 0).send(t, stack...)
	if st := send(t, bed, 0, gen.Config{Frame: base, Count: live, Rate: 20_000, Threads: 1}); st.Sent != live {
		t.Fatalf("generator sent %d, want %d", st.Sent, live)
	}
	total := uint64(len(stack) + live)
	if got := r.finish(total).Total().RxPackets; got != total {
		t.Fatalf("received %d frames, want %d", got, total)
	}
	s := g.Stats()
	if s.Frames != total || s.Unhashed != live || s.Overflow != 0 || len(s.ByHash) != flows {
		t.Fatalf("flow counts %+v: want %d frames, %d unhashed, %d flows", s, total, live, flows)
	}
	for k, v := range s.ByHash {
		if v != perFlow {
			t.Errorf("flow %#08x: %d frames, want %d", k, v, perFlow)
		}
	}
}

// TestRxMetadataMultiBuffer: with MultiBuffer on a bed of MTU 9000, the
// metadata of a frame of several segments is in front of its first. The
// generator end's stack sends (AF_PACKET, so veth gets skbs) 9014-byte
// frames, three segments of 4096-byte UMEM frames, and 64-byte ones over 4
// flows, then the same through a VLAN tagger: every frame has an L4 hash,
// the same for every frame of a flow whatever its segments and another for
// each flow, and exactly the second half has the VLAN tag. (veth's hash
// is the skb's flow hash, which covers the VLAN id: a flow's tagged frames
// have a hash of their own.)
func TestRxMetadataMultiBuffer(t *testing.T) {
	bed := testbedtest.NewConfig(t, testbed.Config{MTU: 9000})
	if err := bpf.CheckKfuncs(bpf.KfuncRxHash, bpf.KfuncRxVLANTag); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	if err := bpf.CheckAdjustMeta(); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	l := bed.Links[0]
	const jumbo, small, flows, perFlow, vlanID = 9014, 64, 4, 25, 9
	var frames [][]byte
	for range perFlow {
		for k := range flows {
			for _, size := range []int{jumbo, small} {
				c := genToDUT(l, size)
				c.SrcPort = uint16(2000 + k)
				f := make([]byte, size)
				if _, err := packet.BuildUDP(f, c); err != nil {
					t.Fatal(err)
				}
				frames = append(frames, f)
			}
		}
	}
	type seen struct {
		srcPort, tci   uint16
		segs, length   int
		hash           uint32
		kind           engine.HashKind
		hashOK, vlanOK bool
	}
	var mu sync.Mutex
	var got []seen
	cfg := rxdropConfig(bed)
	cfg.MultiBuffer, cfg.FrameSize = true, 4096
	cfg.RxMetadata = engine.RxHash | engine.RxVLAN
	cfg.Handler = func(int) engine.Handler {
		return engine.HandlerFunc(func(b *engine.Batch) {
			mu.Lock()
			defer mu.Unlock()
			for i := range b.Len() {
				var m seen
				m.hash, m.kind, m.hashOK = b.RxHash(i)
				m.tci, m.vlanOK = b.RxVLAN(i)
				m.srcPort = binary.BigEndian.Uint16(b.Frame(i)[packet.EthHdrLen+20:])
				m.segs, m.length = b.Segments(i), b.PacketLen(i)
				got = append(got, m)
			}
		})
	}
	r := start(t, bed, cfg)
	ps := openPacketSocket(t, bed, 0)
	ps.send(t, frames...)
	tagger := vlanTagger(t, bed, vlanID)
	ps.send(t, frames...)
	tagger.Close()
	total := uint64(2 * len(frames))
	s := r.finish(total)
	if got := s.Total().RxPackets; got != total {
		t.Fatalf("received %d frames, want %d", got, total)
	}
	mu.Lock()
	defer mu.Unlock()
	type flow struct {
		srcPort uint16
		tagged  bool
	}
	hashOf := map[flow]uint32{}
	segs := map[int]int{}
	tagged := 0
	for i, m := range got {
		segs[m.segs]++
		if want := map[int]int{jumbo: 3, small: 1}[m.length]; m.segs != want {
			t.Errorf("frame %d: %d bytes in %d segments, want %d", i, m.length, m.segs, want)
		}
		if !m.hashOK || m.kind&engine.HashL4 == 0 {
			t.Errorf("frame %d (port %d, %d segments): hash ok %v, kind %v: want an L4 hash", i, m.srcPort, m.segs, m.hashOK, m.kind)
			continue
		}
		fl := flow{m.srcPort, m.vlanOK}
		if h, ok := hashOf[fl]; ok && h != m.hash {
			t.Errorf("flow %+v: hashes %#x and %#x (frame %d, %d segments)", fl, h, m.hash, i, m.segs)
		}
		hashOf[fl] = m.hash
		if m.vlanOK != (i >= len(frames)) || m.vlanOK && m.tci&0xfff != vlanID {
			t.Errorf("frame %d of %d (%d segments): VLAN tag %#x, ok %v; want VLAN %d on the second half only", i, len(got), m.segs, m.tci, m.vlanOK, vlanID)
		}
		if m.vlanOK {
			tagged++
		}
	}
	distinct := map[uint32]bool{}
	for _, h := range hashOf {
		distinct[h] = true
	}
	t.Logf("%d frames by segments %v, hashes by flow %v, %d tagged", len(got), segs, hashOf, tagged)
	if len(hashOf) != 2*flows || len(distinct) != 2*flows {
		t.Errorf("%d flows, each untagged and tagged, gave hashes %v: want %d distinct", flows, hashOf, 2*flows)
	}
	if segs[3] != len(frames) || segs[1] != len(frames) {
		t.Errorf("frames by segments %v: want %d of 3 and %d of 1", segs, len(frames), len(frames))
	}
}

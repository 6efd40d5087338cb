//go:build linux

package netdev

import (
	"strconv"
)

// TxNeed is what a device needs before XDP frames can be sent into it: frames
// redirected to it (bpf_redirect, a devmap; xdpeng gen) and AF_XDP zero-copy
// transmit both go through the driver's ndo_xdp_xmit or its XDP transmit
// rings. AF_XDP copy-mode transmit does not: it hands the device an skb
// (xsk_generic_xmit in net/xdp/xsk.c) and works on every device.
type TxNeed int

const (
	// TxUnknown: the kernel does not report XDP features, so only trying
	// tells.
	TxUnknown TxNeed = iota
	// TxReady: the device has ndo-xmit now; nothing is needed.
	TxReady
	// TxNeedsProgram: the driver runs native XDP but allocates its XDP
	// transmit rings, and sets ndo-xmit, only while an XDP program is
	// attached to the device. Attach one (xdp_pass) and probe again.
	TxNeedsProgram
	// TxNeedsPeer: a veth takes XDP frames only while its peer, which
	// receives them, has an XDP program attached or GRO enabled.
	TxNeedsPeer
	// TxUnsupported: the device cannot take XDP frames.
	TxUnsupported
)

// String returns "unknown", "ready", "needs-program", "needs-peer" or
// "unsupported".
func (t TxNeed) String() string {
	switch t {
	case TxUnknown:
		return "unknown"
	case TxReady:
		return "ready"
	case TxNeedsProgram:
		return "needs-program"
	case TxNeedsPeer:
		return "needs-peer"
	case TxUnsupported:
		return "unsupported"
	}
	return "TxNeed(" + strconv.Itoa(int(t)) + ")"
}

// The XDP modes Plan names, spelled as XDPModeName spells them.
const (
	ModeNative  = "native"
	ModeGeneric = "generic"
)

// Plan is what xdpeng does on a device, derived from its Facts alone.
type Plan struct {
	// FeaturesKnown is false where the kernel does not report XDP features;
	// the fields then say what xdpeng tries: native XDP, copy mode, no
	// multi-buffer, transmit unknown.
	FeaturesKnown bool
	// XDPMode is "native" where the driver runs XDP itself (basic), else
	// "generic", which works on every device, on the skb. Zero-copy needs
	// native.
	XDPMode string
	// ZeroCopy says AF_XDP sockets can bind in zero-copy mode
	// (xsk-zerocopy); otherwise only copy mode works.
	ZeroCopy bool
	// MultiBuffer says frames larger than one UMEM frame arrive as several
	// descriptors (XDP_USE_SG) in copy mode: the device has rx-sg
	// (Documentation/networking/af_xdp.rst, "Probing for Multi-Buffer
	// Support").
	MultiBuffer bool
	// ZeroCopyMaxSegs is the most descriptors a packet may span in
	// zero-copy mode: 1 without zero-copy multi-buffer, 0 without zero-copy.
	ZeroCopyMaxSegs int
	// Transmit is what sending XDP frames into the device needs.
	Transmit TxNeed
}

// Plan derives what xdpeng does on the device.
func (f *Facts) Plan() Plan {
	p := Plan{XDPMode: ModeNative, Transmit: TxUnknown}
	if f.Features == nil {
		return p
	}
	x := f.Features.XDP
	p.FeaturesKnown = true
	// Every in-tree driver with native XDP sets basic since Linux 6.3
	// (commit 66c0e13ad236, "drivers: net: turn on XDP features"); the
	// rest get XDP only in generic mode (dev_xdp_attach in net/core/dev.c
	// refuses native mode without ndo_bpf). veth clears every bit while
	// its peer has more transmit than it has receive queues
	// (veth_set_xdp_features in drivers/net/veth.c), and then refuses
	// native XDP too.
	if !x.Has(XDPBasic) {
		p.XDPMode = ModeGeneric
	}
	p.ZeroCopy = x.Has(XDPXSKZeroCopy)
	if p.ZeroCopy {
		p.ZeroCopyMaxSegs = max(int(f.Features.ZCMaxSegs), 1)
	}
	p.MultiBuffer = x.Has(XDPRxSG)
	p.Transmit = f.txNeed()
	return p
}

// SendNeed is what sending out of the device takes for a sender of XDP
// frames (xdp: redirected frames, a generator's bpf_redirect) or of AF_XDP
// frames: those go through the driver's XDP transmit in zero-copy mode
// (zeroCopy says the sender may bind so, and the device has it), while copy
// mode hands the device skbs and works on every device (TxReady).
func (p Plan) SendNeed(xdp, zeroCopy bool) TxNeed {
	if !xdp && !(zeroCopy && p.ZeroCopy) {
		return TxReady
	}
	return p.Transmit
}

// txNeed: __xdp_enqueue in kernel/bpf/devmap.c refuses a redirected frame
// unless the target has ndo-xmit, so the flag alone says whether transmit
// works now; the rest says what would make it work.
func (f *Facts) txNeed() TxNeed {
	x := f.Features.XDP
	switch {
	case x.Has(XDPNdoXmit):
		return TxReady
	case f.Driver == "veth" && x.Has(XDPBasic):
		// veth_set_xdp_features: ndo-xmit while the peer has an XDP
		// program or GRO (Linux 6.4; 6.3 looked at the device itself).
		return TxNeedsPeer
	case x.Has(XDPBasic) && f.XDP.Mode != ModeNative:
		// i40e, ice, ixgbe, igb, igc, bnxt, ena, gve, stmmac, virtio_net
		// and others call xdp_features_set_redirect_target from their XDP
		// setup, when a program is attached; xdp-trafficgen attaches
		// xdp_pass for them (driver_needs_xdp_pass). mlx5 sets ndo-xmit
		// without a program.
		return TxNeedsProgram
	}
	// No native XDP, or a native program is attached and ndo-xmit is still
	// missing: the driver has no ndo_xdp_xmit.
	return TxUnsupported
}

// MTULimit is the largest MTU that AF_XDP sockets with one UMEM frame size
// receive whole on a device.
type MTULimit struct {
	FrameSize, Headroom int
	// Single is the limit with one frame per packet.
	Single int
	// MultiBuffer is the limit with packets spread over several frames
	// (XDP_USE_SG), 0 where the device cannot do that in this mode.
	MultiBuffer int
}

// MTULimit returns the largest MTUs the device could be given for
// frameSize-byte UMEM frames with headroom bytes of UMEM headroom, in
// zero-copy or copy mode, in the XDP mode Plan picks: what probe reports.
// Neither is above the device's MaxMTU, since no larger MTU can be set.
// MultiBuffer counts only what the facts say the device does: rx-sg in copy
// mode (up to CopyModeMaxFrags frames), zero-copy segments above one in
// zero-copy mode; it is 0 otherwise, and where the kernel reports no
// features. A driver may refuse single-buffer native XDP at a smaller MTU
// (veth_xdp_set: about a page less headroom and skb overhead); attaching
// then fails and says so.
//
// The engine's refusal of a run whose frames do not fit the device's MTU
// answers another question, about the MTU the device has now and a
// configuration whose XDP mode and multi-buffer are already checked; both
// compute the limit with FrameMTU.
func (f *Facts) MTULimit(frameSize, headroom int, zeroCopy bool) MTULimit {
	l := MTULimit{FrameSize: frameSize, Headroom: headroom, Single: FrameMTU(frameSize, headroom, 1)}
	p := f.Plan()
	switch {
	case zeroCopy && p.ZeroCopyMaxSegs > 1:
		l.MultiBuffer = FrameMTU(frameSize, headroom, p.ZeroCopyMaxSegs)
	case !zeroCopy && p.MultiBuffer:
		l.MultiBuffer = FrameMTU(frameSize, headroom, CopyModeMaxFrags)
	}
	if f.MaxMTU > 0 {
		l.Single = min(l.Single, f.MaxMTU)
		l.MultiBuffer = min(l.MultiBuffer, f.MaxMTU)
	}
	return l
}

//go:build linux

package netdev

import (
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/difftest"
)

// facts describes a device with a 9000-byte MaxMTU and, if mode is not "",
// an XDP program attached in that mode.
func facts(driver string, x XDPFeatures, zcSegs uint32, mode string) *Facts {
	f := &Facts{
		Info:     Info{Name: "eth0", Driver: driver, MTU: 1500},
		MaxMTU:   9000,
		Features: &DevFeatures{XDP: x, ZCMaxSegs: zcSegs},
	}
	if mode != "" {
		f.XDP.XDPState = XDPState{ProgID: 7, Mode: mode}
	}
	return f
}

func TestPlan(t *testing.T) {
	const (
		vethBase = XDPBasic | XDPRedirect | XDPRxSG
		i40eBase = XDPBasic | XDPRedirect | XDPXSKZeroCopy
	)
	for _, tc := range []struct {
		name string
		f    *Facts
		want Plan
	}{
		{"veth, peer with GRO", facts("veth", vethBase|XDPNdoXmit|XDPNdoXmitSG, 0, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, MultiBuffer: true, Transmit: TxReady}},
		{"veth, peer without XDP or GRO", facts("veth", vethBase, 0, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, MultiBuffer: true, Transmit: TxNeedsPeer}},
		{"veth, more peer tx queues than rx queues", facts("veth", 0, 0, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeGeneric, Transmit: TxUnsupported}},
		{"loopback", facts("", 0, 0, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeGeneric, Transmit: TxUnsupported}},
		{"loopback with a generic program", facts("", 0, 0, ModeGeneric),
			Plan{FeaturesKnown: true, XDPMode: ModeGeneric, Transmit: TxUnsupported}},
		{"i40e without a program", facts("i40e", i40eBase, 1, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, ZeroCopy: true, ZeroCopyMaxSegs: 1, Transmit: TxNeedsProgram}},
		{"i40e with a program", facts("i40e", i40eBase|XDPNdoXmit|XDPNdoXmitSG, 1, ModeNative),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, ZeroCopy: true, ZeroCopyMaxSegs: 1, Transmit: TxReady}},
		{"i40e with a generic program", facts("i40e", i40eBase, 1, ModeGeneric),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, ZeroCopy: true, ZeroCopyMaxSegs: 1, Transmit: TxNeedsProgram}},
		{"ice, zero-copy multi-buffer", facts("ice", i40eBase|XDPRxSG, 5, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, ZeroCopy: true, MultiBuffer: true, ZeroCopyMaxSegs: 5, Transmit: TxNeedsProgram}},
		{"mlx5", facts("mlx5_core", XDPBasic|XDPRedirect|XDPNdoXmit|XDPXSKZeroCopy|XDPRxSG, 1, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, ZeroCopy: true, MultiBuffer: true, ZeroCopyMaxSegs: 1, Transmit: TxReady}},
		{"native XDP without ndo_xdp_xmit, program attached", facts("qede", XDPBasic, 0, ModeNative),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, Transmit: TxUnsupported}},
		// A zero-copy driver that leaves xdp-zc-max-segs out.
		{"zero-copy without max segs", facts("xyz", XDPBasic|XDPXSKZeroCopy, 0, ""),
			Plan{FeaturesKnown: true, XDPMode: ModeNative, ZeroCopy: true, ZeroCopyMaxSegs: 1, Transmit: TxNeedsProgram}},
		{"kernel before 6.3", &Facts{Info: Info{Driver: "veth"}},
			Plan{XDPMode: ModeNative, Transmit: TxUnknown}},
	} {
		if diff := difftest.Diff(tc.want, tc.f.Plan()); diff != "" {
			t.Errorf("%s: Plan (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestTxNeedString(t *testing.T) {
	for n, want := range map[TxNeed]string{
		TxUnknown: "unknown", TxReady: "ready", TxNeedsProgram: "needs-program",
		TxNeedsPeer: "needs-peer", TxUnsupported: "unsupported", 42: "TxNeed(42)",
	} {
		if got := n.String(); got != want {
			t.Errorf("TxNeed(%d).String() = %q, want %q", int(n), got, want)
		}
	}
}

func TestFrameMTU(t *testing.T) {
	for _, tc := range []struct {
		frame, headroom, frames, want int
	}{
		{2048, 0, 1, 1774}, // what engine.Config documents
		{4096, 0, 1, 3822},
		{2048, 256, 1, 1518},
		{4096, 0, 3, 3*3840 - 18},
		{2048, 0, CopyModeMaxFrags, 18*1792 - 18},
		{256, 0, 1, 0},
		{274, 0, 1, 0},
		{275, 0, 1, 1},
		{2048, 0, 0, 0},
		{512, 512, 4, 0},
	} {
		if got := FrameMTU(tc.frame, tc.headroom, tc.frames); got != tc.want {
			t.Errorf("FrameMTU(%d, %d, %d) = %d, want %d", tc.frame, tc.headroom, tc.frames, got, tc.want)
		}
	}
}

func TestMTULimit(t *testing.T) {
	veth := facts("veth", XDPBasic|XDPRedirect|XDPRxSG, 0, "")
	veth.MaxMTU = 65535
	for _, tc := range []struct {
		name     string
		f        *Facts
		frame    int
		zeroCopy bool
		want     MTULimit
	}{
		{"veth copy 2048", veth, 2048, false, MTULimit{FrameSize: 2048, Single: 1774, MultiBuffer: 18*1792 - 18}},
		{"veth copy 4096, capped by max MTU", veth, 4096, false, MTULimit{FrameSize: 4096, Single: 3822, MultiBuffer: 65535}},
		{"veth zero-copy", veth, 4096, true, MTULimit{FrameSize: 4096, Single: 3822}},
		{"ice zero-copy, 5 segments", facts("ice", XDPBasic|XDPXSKZeroCopy|XDPRxSG, 5, ""), 2048, true,
			MTULimit{FrameSize: 2048, Single: 1774, MultiBuffer: 5*1792 - 18}},
		{"i40e zero-copy, no multi-buffer", facts("i40e", XDPBasic|XDPXSKZeroCopy, 1, ""), 2048, true,
			MTULimit{FrameSize: 2048, Single: 1774}},
		{"no rx-sg", facts("x", XDPBasic, 0, ""), 2048, false, MTULimit{FrameSize: 2048, Single: 1774}},
		{"small max MTU", &Facts{MaxMTU: 1500, Features: &DevFeatures{XDP: XDPRxSG}}, 4096, false,
			MTULimit{FrameSize: 4096, Single: 1500, MultiBuffer: 1500}},
		{"no max MTU", &Facts{Features: &DevFeatures{XDP: XDPRxSG}}, 4096, false,
			MTULimit{FrameSize: 4096, Single: 3822, MultiBuffer: 18*3840 - 18}},
	} {
		if diff := difftest.Diff(tc.want, tc.f.MTULimit(tc.frame, 0, tc.zeroCopy)); diff != "" {
			t.Errorf("%s: MTULimit (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := veth.MTULimit(2048, 256, false); got.Single != 1518 || got.Headroom != 256 {
		t.Errorf("with 256 bytes of headroom: %+v", got)
	}
}

// SendNeed: XDP frames need what Transmit says; AF_XDP frames only in
// zero-copy mode, where the device has it; copy mode works everywhere.
func TestSendNeed(t *testing.T) {
	zc := Plan{ZeroCopy: true, Transmit: TxNeedsProgram}
	noZC := Plan{Transmit: TxNeedsProgram}
	for _, tc := range []struct {
		p           Plan
		xdp, zcMode bool
		want        TxNeed
	}{
		{zc, true, false, TxNeedsProgram},
		{zc, false, true, TxNeedsProgram},
		{zc, false, false, TxReady},
		{noZC, false, true, TxReady},
		{noZC, true, true, TxNeedsProgram},
	} {
		if got := tc.p.SendNeed(tc.xdp, tc.zcMode); got != tc.want {
			t.Errorf("%+v.SendNeed(xdp %v, zero-copy %v) = %v, want %v", tc.p, tc.xdp, tc.zcMode, got, tc.want)
		}
	}
}

//go:build linux

package netdev

import (
	"slices"
	"testing"
)

func TestXDPFeaturesNames(t *testing.T) {
	for _, tc := range []struct {
		f    XDPFeatures
		want string
	}{
		{0, "none"},
		{XDPBasic | XDPRedirect | XDPRxSG, "basic,redirect,rx-sg"},
		// Every bit of NETDEV_XDP_ACT_MASK (127), in the spec's order.
		{127, "basic,redirect,ndo-xmit,xsk-zerocopy,hw-offload,rx-sg,ndo-xmit-sg"},
		// A bit from a later kernel.
		{XDPNdoXmit | 1<<9, "ndo-xmit,0x200"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("XDPFeatures(%#x).String() = %q, want %q", uint64(tc.f), got, tc.want)
		}
	}
	if XDPFeatures(0).Names() != nil {
		t.Error("Names of no features is not nil")
	}
	if got := XDPRxMetadata(7).String(); got != "timestamp,hash,vlan-tag" {
		t.Errorf("XDPRxMetadata(7) = %q", got)
	}
	if got := XSKFeatures(7).String(); got != "tx-timestamp,tx-checksum,tx-launch-time-fifo" {
		t.Errorf("XSKFeatures(7) = %q", got)
	}
}

func TestXDPFeaturesHas(t *testing.T) {
	f := XDPBasic | XDPNdoXmit
	if !f.Has(XDPBasic) || !f.Has(XDPBasic|XDPNdoXmit) || f.Has(XDPBasic|XDPRxSG) || f.Has(XDPXSKZeroCopy) {
		t.Errorf("Has is wrong for %v", f)
	}
	if !f.Has(0) {
		t.Error("every set has the empty set")
	}
	if !XDPRxMetadata(3).Has(XDPRxMetaHash) || XSKFeatures(1).Has(XSKTxChecksum) {
		t.Error("Has is wrong for metadata or xsk features")
	}
}

func TestParseDevFeatures(t *testing.T) {
	// The kernel's reply for a veth whose peer has GRO on (Linux 6.18):
	// ifindex 3, xdp-features 103, rx-metadata 7, xsk-features 0.
	veth := []byte{
		1, 1, 0, 0,
		8, 0, 1, 0, 3, 0, 0, 0,
		12, 0, 3, 0, 103, 0, 0, 0, 0, 0, 0, 0,
		12, 0, 5, 0, 7, 0, 0, 0, 0, 0, 0, 0,
		12, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	}
	got, err := parseDevFeatures(veth)
	if err != nil {
		t.Fatal(err)
	}
	want := DevFeatures{XDP: XDPBasic | XDPRedirect | XDPNdoXmit | XDPRxSG | XDPNdoXmitSG, RxMetadata: 7}
	if got != want {
		t.Errorf("veth: got %+v, want %+v", got, want)
	}

	// A zero-copy NIC on Linux 6.3: xdp-features and xdp-zc-max-segs, no
	// metadata attributes.
	nic := []byte{
		1, 1, 0, 0,
		8, 0, 1, 0, 5, 0, 0, 0,
		12, 0, 3, 0, 0x2f, 0, 0, 0, 0, 0, 0, 0,
		8, 0, 4, 0, 5, 0, 0, 0,
	}
	got, err = parseDevFeatures(nic)
	if err != nil {
		t.Fatal(err)
	}
	want = DevFeatures{XDP: XDPBasic | XDPRedirect | XDPNdoXmit | XDPXSKZeroCopy | XDPRxSG, ZCMaxSegs: 5}
	if got != want {
		t.Errorf("nic: got %+v, want %+v", got, want)
	}

	for name, msg := range map[string][]byte{
		"short":        {1, 1},
		"short u64":    {1, 1, 0, 0, 8, 0, 3, 0, 1, 0, 0, 0},
		"short u32":    {1, 1, 0, 0, 6, 0, 4, 0, 1, 0, 0, 0},
		"bad attr len": {1, 1, 0, 0, 64, 0, 3, 0, 1, 0, 0, 0},
	} {
		if _, err := parseDevFeatures(msg); err == nil {
			t.Errorf("%s message accepted", name)
		}
	}
}

func TestGenlHeader(t *testing.T) {
	h := genlHeader{cmd: netdevCmdDevGet, version: netdevFamilyVers}
	if got := h.Serialize(); !slices.Equal(got, []byte{1, 1, 0, 0}) || h.Len() != len(got) {
		t.Errorf("genlHeader = % x (Len %d)", got, h.Len())
	}
}

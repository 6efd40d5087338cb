package main

import (
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

func TestPlanTx(t *testing.T) {
	facts := func(driver string, x netdev.XDPFeatures, progMode string) *netdev.Facts {
		f := &netdev.Facts{Info: netdev.Info{Name: "eth0", Driver: driver}, Features: &netdev.DevFeatures{XDP: x}}
		if progMode != "" {
			f.XDP.XDPState = netdev.XDPState{ProgID: 7, Mode: progMode}
		}
		return f
	}
	const (
		i40e     = netdev.XDPBasic | netdev.XDPRedirect | netdev.XDPXSKZeroCopy
		vethPeer = netdev.XDPBasic | netdev.XDPRedirect | netdev.XDPNdoXmit
		vethNone = netdev.XDPBasic | netdev.XDPRedirect
	)
	for _, tc := range []struct {
		name      string
		f         *netdev.Facts
		mode      string
		xdp, zc   bool
		attach    bool
		note, err string
	}{
		{name: "gen on i40e", f: facts("i40e", i40e, ""), mode: xdpPassAuto, xdp: true, attach: true},
		{name: "gen on i40e, never", f: facts("i40e", i40e, ""), mode: xdpPassNever, xdp: true, note: "only while an XDP program is attached, and --xdp-pass never"},
		{name: "gen on i40e with a native program", f: facts("i40e", i40e|netdev.XDPNdoXmit, "native"), mode: xdpPassAuto, xdp: true},
		{name: "gen on i40e with a generic program", f: facts("i40e", i40e, "generic"), mode: xdpPassAuto, xdp: true,
			err: "has XDP program id 7 in generic mode, which is not ours to replace"},
		{name: "txonly zero-copy on i40e", f: facts("i40e", i40e, ""), mode: xdpPassAuto, zc: true, attach: true},
		{name: "txonly copy on i40e", f: facts("i40e", i40e, ""), mode: xdpPassAuto},
		{name: "txonly auto on virtio_net: no zero-copy", f: facts("virtio_net", netdev.XDPBasic|netdev.XDPRedirect, ""), mode: xdpPassAuto, zc: true},
		{name: "gen on veth with a ready peer", f: facts("veth", vethPeer, ""), mode: xdpPassAuto, xdp: true},
		{name: "gen on veth, always", f: facts("veth", vethPeer, ""), mode: xdpPassAlways, xdp: true, attach: true},
		{name: "always with a program there", f: facts("veth", vethPeer, "native"), mode: xdpPassAlways, xdp: true, note: "already has XDP program id 7"},
		{name: "gen on veth, peer without XDP or GRO", f: facts("veth", vethNone, ""), mode: xdpPassAuto, xdp: true,
			err: "its peer has neither, so every frame would be dropped: turn GRO on at the peer"},
		{name: "txonly on veth, peer without XDP or GRO", f: facts("veth", vethNone, ""), mode: xdpPassAuto, zc: true},
		{name: "gen on lo", f: facts("", 0, ""), mode: xdpPassAuto, xdp: true, err: "eth0 (no driver) takes no XDP frames (ndo-xmit is not among its XDP features"},
		{name: "txonly on lo", f: facts("", 0, ""), mode: xdpPassAuto, zc: true},
		{name: "kernel without features", f: &netdev.Facts{Info: netdev.Info{Name: "eth0"}}, mode: xdpPassAuto, xdp: true},
	} {
		p, err := planTx(tc.f, tc.mode, tc.xdp, tc.zc)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case p.attach != tc.attach || !strings.Contains(p.note, tc.note) || (tc.note == "" && p.note != ""):
			t.Errorf("%s: %+v, want attach %v, note %q", tc.name, p, tc.attach, tc.note)
		}
	}
	if checkXDPPass("sometimes") == nil {
		t.Error("--xdp-pass sometimes accepted")
	}
}

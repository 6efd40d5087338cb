//go:build linux

package netdev_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/google/go-cmp/cmp"
	"github.com/safchain/ethtool"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// probe runs netdev.Probe(dev) through in (bed.InDUT or bed.InGen), and skips
// the test where the kernel does not report XDP features.
func probe(t *testing.T, in func(func() error) error, dev string) *netdev.Facts {
	t.Helper()
	var f *netdev.Facts
	err := in(func() (err error) {
		f, err = netdev.Probe(dev)
		return err
	})
	if err != nil {
		t.Fatalf("Probe(%s): %v", dev, err)
	}
	if f.Features == nil {
		privtest.Unsupported(t, "%s: %v", dev, netdev.ErrNoXDPFeatures)
	}
	return f
}

func TestProbeVeth(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	l := bed.Links[0]
	f := probe(t, bed.InDUT, l.DUT)

	if f.Index != l.DUTIndex || f.Driver != "veth" || f.MTU != 1500 || f.MinMTU != 68 || f.MaxMTU != 65535 {
		t.Errorf("Probe(%s) = %+v, MTU limits %d-%d", l.DUT, f.Info, f.MinMTU, f.MaxMTU)
	}
	// veth_get_channels: rx and tx, in use and allocated.
	want := netdev.Channels{Rx: 2, Tx: 2, MaxRx: 2, MaxTx: 2}
	if f.Channels == nil || *f.Channels != want {
		t.Errorf("Channels = %+v, want %+v", f.Channels, want)
	}
	if out, err := exec.Command("ip", "netns", "exec", bed.DUTNS, "ethtool", "-l", l.DUT).Output(); err != nil {
		t.Logf("ethtool -l %s: %v; compared with the bed's queue count only", l.DUT, err)
	} else if diff := cmp.Diff(parseEthtoolChannels(t, out), f.Channels); diff != "" {
		t.Errorf("Channels differ from ethtool -l (-ethtool +Probe):\n%s", diff)
	}

	// The known veth facts (veth_set_xdp_features in drivers/net/veth.c):
	// the bed has GRO on gen0, so dut0 also takes redirected frames.
	x := f.Features.XDP
	for _, must := range []netdev.XDPFeatures{netdev.XDPBasic, netdev.XDPRedirect, netdev.XDPRxSG, netdev.XDPNdoXmit, netdev.XDPNdoXmitSG} {
		if !x.Has(must) {
			t.Errorf("features %v lack %v", x, must)
		}
	}
	if x.Has(netdev.XDPXSKZeroCopy) || x.Has(netdev.XDPHWOffload) || f.Features.ZCMaxSegs != 0 {
		t.Errorf("features %v, zc max segs %d: veth has no zero-copy and no offload", x, f.Features.ZCMaxSegs)
	}
	if f.XDP != (netdev.XDPAttachment{}) {
		t.Errorf("XDP = %+v, want nothing attached", f.XDP)
	}
	wantPlan := netdev.Plan{FeaturesKnown: true, XDPMode: netdev.ModeNative, MultiBuffer: true, Transmit: netdev.TxReady}
	if diff := cmp.Diff(wantPlan, f.Plan()); diff != "" {
		t.Errorf("Plan (-want +got):\n%s", diff)
	}
	if got := f.MTULimit(2048, 0, false); got.Single != 1774 || got.MultiBuffer != 18*1792-18 {
		t.Errorf("MTULimit(2048) = %+v", got)
	}
}

// parseEthtoolChannels reads the output of `ethtool -l`.
func parseEthtoolChannels(t *testing.T, out []byte) *netdev.Channels {
	t.Helper()
	var ch netdev.Channels
	fields := map[string][2]*int{
		"RX": {&ch.MaxRx, &ch.Rx}, "TX": {&ch.MaxTx, &ch.Tx},
		"Other": {&ch.MaxOther, &ch.Other}, "Combined": {&ch.MaxCombined, &ch.Combined},
	}
	section := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Pre-set maximums"):
			section = 0
			continue
		case strings.HasPrefix(line, "Current hardware settings"):
			section = 1
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		dst, known := fields[strings.TrimSpace(key)]
		if !ok || !known || section < 0 {
			continue
		}
		if val = strings.TrimSpace(val); val == "n/a" {
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil {
			t.Fatalf("ethtool -l: %q: %v", line, err)
		}
		*dst[section] = n
	}
	if section != 1 {
		t.Fatalf("ethtool -l printed no current settings:\n%s", out)
	}
	return &ch
}

// TestProbeVethPeer checks that a veth's ndo-xmit follows its peer: GRO or an
// XDP program on gen0 makes dut0 take XDP frames, neither does not.
func TestProbeVethPeer(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	setGRO := func(on bool) {
		t.Helper()
		err := bed.InGen(func() error {
			et, err := ethtool.NewEthtool()
			if err != nil {
				return err
			}
			defer et.Close()
			return et.Change(l.Gen, map[string]bool{"rx-gro": on})
		})
		if err != nil {
			t.Fatalf("set GRO %v on %s: %v", on, l.Gen, err)
		}
	}

	setGRO(false)
	f := probe(t, bed.InDUT, l.DUT)
	if x := f.Features.XDP; x.Has(netdev.XDPNdoXmit) || x.Has(netdev.XDPNdoXmitSG) || !x.Has(netdev.XDPBasic) {
		t.Errorf("peer without GRO or XDP: features %v, want basic without ndo-xmit", x)
	}
	if got := f.Plan().Transmit; got != netdev.TxNeedsPeer {
		t.Errorf("peer without GRO or XDP: Transmit = %v, want %v", got, netdev.TxNeedsPeer)
	}

	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "nd_pass",
		Type:         ebpf.XDP,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		t.Fatalf("load XDP program: %v", err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	progID, _ := info.ID()

	var lk link.Link
	var genXDP netdev.XDPAttachment
	err = bed.InGen(func() (err error) {
		if lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.GenIndex}); err != nil {
			return err
		}
		genXDP, err = netdev.XDPAttachmentOf(l.GenIndex)
		return err
	})
	if err != nil {
		t.Fatalf("attach XDP to %s: %v", l.Gen, err)
	}
	defer lk.Close()
	linkInfo, err := lk.Info()
	if err != nil {
		t.Fatal(err)
	}
	want := netdev.XDPAttachment{
		XDPState: netdev.XDPState{ProgID: uint32(progID), Mode: netdev.ModeNative},
		ProgName: "nd_pass", LinkID: uint32(linkInfo.ID), OwnerPID: os.Getpid(), OwnerComm: ownComm(t),
	}
	if diff := cmp.Diff(want, genXDP); diff != "" {
		t.Errorf("XDPAttachmentOf(%s) (-want +got):\n%s", l.Gen, diff)
	}

	f = probe(t, bed.InDUT, l.DUT)
	if x := f.Features.XDP; !x.Has(netdev.XDPNdoXmit | netdev.XDPNdoXmitSG) {
		t.Errorf("peer with XDP: features %v, want ndo-xmit and ndo-xmit-sg", x)
	}
	if got := f.Plan().Transmit; got != netdev.TxReady {
		t.Errorf("peer with XDP: Transmit = %v, want %v", got, netdev.TxReady)
	}
	if f.XDP.ProgID != 0 {
		t.Errorf("%s has program %d attached; the program is on %s", l.DUT, f.XDP.ProgID, l.Gen)
	}

	if err := lk.Close(); err != nil {
		t.Fatal(err)
	}
	setGRO(true)
	f = probe(t, bed.InDUT, l.DUT)
	if got := f.Plan().Transmit; got != netdev.TxReady {
		t.Errorf("peer with GRO: Transmit = %v, want %v", got, netdev.TxReady)
	}
}

// ownComm is this process's name as /proc shows it.
func ownComm(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestProbeLoopback checks a device without native XDP: the loopback device
// of the bed's fresh DUT namespace.
func TestProbeLoopback(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	f := probe(t, bed.InDUT, "lo")
	if f.Features.XDP != 0 || f.Channels != nil {
		t.Errorf("lo: features %v, channels %+v; want none", f.Features.XDP, f.Channels)
	}
	// lo has neither a driver nor a link kind (netlink's generic "device").
	if f.Driver != "" || f.DriverLabel() != "no driver" {
		t.Errorf("lo: driver %q (%s), want none", f.Driver, f.DriverLabel())
	}
	want := netdev.Plan{FeaturesKnown: true, XDPMode: netdev.ModeGeneric, Transmit: netdev.TxUnsupported}
	if diff := cmp.Diff(want, f.Plan()); diff != "" {
		t.Errorf("lo: Plan (-want +got):\n%s", diff)
	}

	err := bed.InDUT(func() error {
		_, err := netdev.Features(9999)
		if !errors.Is(err, unix.ENODEV) || errors.Is(err, netdev.ErrNoXDPFeatures) {
			t.Errorf("Features of a missing index: %v, want ENODEV", err)
		}
		_, err = netdev.Probe("nosuchdev0")
		var ne *netdev.NoInterfaceError
		if !errors.As(err, &ne) {
			t.Errorf("Probe of a missing device: %v, want a NoInterfaceError", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

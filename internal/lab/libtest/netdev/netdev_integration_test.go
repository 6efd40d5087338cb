//go:build linux

package netdev_test

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

func TestLookupVeth(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	l := bed.Links[0]
	err := bed.InDUT(func() error {
		info, err := netdev.Lookup(l.DUT)
		if err != nil {
			return err
		}
		if info.Index != l.DUTIndex || info.MAC.String() != l.DUTMAC.String() || info.Driver != "veth" ||
			info.RxQueues != 2 || info.TxQueues != 2 || info.MTU != 1500 {
			t.Errorf("Lookup(%s) = %+v", l.DUT, info)
		}
		// gen0 lives in the other namespace.
		_, err = netdev.Lookup(l.Gen)
		var ne *netdev.NoInterfaceError
		if !errors.As(err, &ne) {
			t.Errorf("Lookup(%s) in the DUT namespace = %v, want a NoInterfaceError", l.Gen, err)
		}
		napis, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		// veth has one NAPI per receive queue once GRO is on.
		if len(napis) != 2 {
			t.Errorf("NAPIs(%s) = %+v, want 2", l.DUT, napis)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestXDPAttachedAndCounters(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
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
	wantID, _ := info.ID()

	err = bed.InDUT(func() error {
		st, err := netdev.XDPAttached(l.DUTIndex)
		if err != nil {
			return err
		}
		if st != (netdev.XDPState{}) {
			t.Errorf("before attach: %+v, want nothing", st)
		}
		lk, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.DUTIndex})
		if err != nil {
			return err
		}
		defer lk.Close()
		st, err = netdev.XDPAttached(l.DUTIndex)
		if err != nil {
			return err
		}
		if st.ProgID != uint32(wantID) || st.Mode != "native" {
			t.Errorf("after attach: %+v, want program %d native", st, wantID)
		}
		stats, err := netdev.Counters(l.DUT)
		if err != nil {
			return err
		}
		if _, ok := stats["rx_queue_0_xdp_packets"]; !ok {
			t.Errorf("no rx_queue_0_xdp_packets in %v", stats)
		}
		qs, err := netdev.VethQueueCounters(l.DUT)
		if err != nil {
			return err
		}
		if len(qs) != 1 || qs[0].Queue != 0 {
			t.Errorf("VethQueueCounters = %+v, want queue 0", qs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := netdev.Counters("nosuchdev0"); err == nil {
		t.Error("Counters of a missing device: no error")
	}
}

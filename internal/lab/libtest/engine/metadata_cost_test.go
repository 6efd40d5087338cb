//go:build linux && measure

// The cost of the receive metadata program, measured in place: the kernel
// does not test-run a device-bound program, so progbench cannot. Run with
//
//	sudo go test -tags measure -count=1 -run RxMetadataCost -v ./engine/
//
// It turns on the kernel's BPF run-time statistics (BPF_ENABLE_STATS) for
// its duration, for every program on the machine.

package engine_test

import (
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestRxMetadataCost runs the plain and the metadata steering programs in
// turn under the same traffic, frames the peer's stack sent (AF_PACKET:
// veth has an skb, the kfuncs work) and live frames (none), and logs each
// program's ns per run as the kernel counted them.
func TestRxMetadataCost(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	if err := bpf.CheckAdjustMeta(); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	l := bed.Links[0]
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	base := packet.UDPConfig{SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()), SrcPort: 1234, DstPort: 9, Size: 64}
	f := make([]byte, 64)
	if _, err := packet.BuildUDP(f, base); err != nil {
		t.Fatal(err)
	}
	var stack [][]byte
	for range 50000 {
		stack = append(stack, f)
	}
	ps := openPacketSocket(t, bed, 0)
	for round := range 3 {
		for _, m := range []engine.RxMetadata{0, engine.RxHash, engine.RxHash | engine.RxTimestamp | engine.RxVLAN} {
			cfg := rxdropConfig(bed)
			cfg.RxMetadata = m
			cfg.Handler = func(int) engine.Handler { return engine.HandlerFunc(func(b *engine.Batch) {}) }
			r := start(t, bed, cfg)
			var prog *ebpf.Program
			if err := bed.InDUT(func() error {
				s, err := netdev.XDPAttached(l.DUTIndex)
				if err != nil {
					return err
				}
				prog, err = ebpf.NewProgramFromID(ebpf.ProgramID(s.ProgID))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			read := func() (uint64, uint64) {
				s, err := prog.Stats()
				if err != nil {
					t.Fatal(err)
				}
				return s.RunCount, uint64(s.Runtime)
			}
			n0, d0 := read()
			ps.send(t, stack...)
			n1, d1 := read()
			if g := send(t, bed, 0, gen.Config{Frame: base, Count: 200000, Rate: 200_000, Threads: 1}); g.Sent != 200000 {
				t.Fatalf("generator sent %d of 200000", g.Sent)
			}
			n2, d2 := read()
			t.Logf("round %d meta %-22s stack: %6d runs %.1f ns/run; live: %6d runs %.1f ns/run", round, m, n1-n0, float64(d1-d0)/float64(n1-n0), n2-n1, float64(d2-d1)/float64(n2-n1))
			prog.Close()
			r.stop()
			r.close()
		}
	}
}

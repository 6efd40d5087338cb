package gen

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/stamp"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func monotonicNS(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// TestProgramStamps runs the generator's program without sending
// (BPF_PROG_TEST_RUN returns the frame as the program left it) and checks
// what it wrote: sequence numbers stepping by the thread count from the
// thread's index, the kernel clock, a checksum that verifies, also when the
// program rewrites a frame it stamped before (as live frames' recycled
// pages are) and rewrites ports too.
func TestProgramStamps(t *testing.T) {
	privtest.Root(t)
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		v6    bool
		ports int
	}{
		{"IPv4", false, 1},
		{"IPv6 ports", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			cfg.Stamp, cfg.RunID, cfg.Ports, cfg.Frame.DstPort = true, 0xabcd, tc.ports, 5000
			if tc.v6 {
				cfg.Frame.SrcIP, cfg.Frame.DstIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
				cfg.Frame.Size = 90
			}
			cfg.CPUs = online[:min(2, len(online))]
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			frame := make([]byte, cfg.Frame.Size)
			if _, err := stamp.BuildUDP(frame, cfg.Frame, stamp.Stamp{RunID: cfg.RunID}); err != nil {
				t.Fatal(err)
			}
			prog, err := load(cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()

			// The thread that runs on the last CPU has index len-1.
			idx := len(cfg.CPUs) - 1
			errc := make(chan error, 1)
			var outs [][]byte
			var times [][2]uint64
			go func() {
				// Never unlocked: the thread's affinity is changed.
				if err := cpuset.Pin(cfg.CPUs[idx]); err != nil {
					errc <- err
					return
				}
				in := frame
				for range 4 {
					before := monotonicNS(t)
					ret, out, err := prog.objs.XdpGen.Test(in)
					after := monotonicNS(t)
					if err != nil {
						errc <- err
						return
					}
					if ret != 4 { // XDP_REDIRECT
						t.Errorf("verdict %d, want XDP_REDIRECT", ret)
					}
					outs, times = append(outs, out), append(times, [2]uint64{before, after})
					in = out // the next run finds this run's stamp
				}
				errc <- nil
			}()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			for k, out := range outs {
				s, ok := stamp.Find(out)
				wantSeq := uint32(idx + k*len(cfg.CPUs))
				if !ok || s.RunID != cfg.RunID || s.Seq != wantSeq {
					t.Errorf("run %d: stamp %+v, %v; want run id %#x, seq %d", k, s, ok, cfg.RunID, wantSeq)
				}
				if s.TimeNS < times[k][0] || s.TimeNS > times[k][1] {
					t.Errorf("run %d: stamp time %d outside the run [%d, %d]", k, s.TimeNS, times[k][0], times[k][1])
				}
				checkUDP(t, out, tc.v6, k == 0)
			}
		})
	}
}

// TestRunStampsLiveFrames sends stamped frames for real (each method) and
// captures them on the DUT: the program's writes reach the wire, every
// sequence number 0..n-1 arrives once, each thread's send times rise with
// its sequence numbers, and every checksum verifies.
func TestRunStampsLiveFrames(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		privtest.Root(t)
		online, err := cpuset.Online()
		if err != nil {
			t.Fatal(err)
		}
		threads := min(2, len(online))
		p := newVethPair(t, threads)
		p.method = m
		p.attachDUT(t, 2) // XDP_PASS: frames reach the packet socket
		const n = 3000
		fd := p.capture(t, n+100)
		cfg := p.config(n)
		cfg.Rate = 20000 // paced, so the packet socket keeps up
		cfg.Stamp, cfg.RunID = true, 0x5eed
		cfg.Threads, cfg.CPUs = threads, online[:threads]
		start := monotonicNS(t)
		s := p.run(t, context.Background(), cfg)
		end := monotonicNS(t)
		if s.Sent != n {
			t.Fatalf("Sent %d, want %d", s.Sent, n)
		}
		sent := make([]uint64, n) // send time by sequence number
		buf := make([]byte, 2048)
		got := 0
		for deadline := time.Now().Add(2 * time.Second); got < n && time.Now().Before(deadline); {
			m, _, _, _, err := unix.Recvmsg(fd, buf, nil, unix.MSG_DONTWAIT)
			if err == unix.EAGAIN {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			st, ok := stamp.Find(buf[:m])
			if !ok {
				continue // the stack's own frames
			}
			if st.RunID != cfg.RunID || st.Seq >= n || sent[st.Seq] != 0 {
				t.Fatalf("stamp %+v: wrong run, out of range or seen twice", st)
			}
			if st.TimeNS < start || st.TimeNS > end {
				t.Fatalf("stamp %+v: time outside the run [%d, %d]", st, start, end)
			}
			sent[st.Seq] = st.TimeNS
			checkUDP(t, buf[:m], false, got == 0)
			got++
		}
		if got != n {
			t.Fatalf("captured %d stamped frames, want %d", got, n)
		}
		for i := range threads {
			var stream []uint64
			for seq := i; seq < n; seq += threads {
				stream = append(stream, sent[seq])
			}
			if !slices.IsSorted(stream) {
				t.Errorf("thread %d: send times do not rise with sequence numbers", i)
			}
		}
	})
}

// TestProgramUnstampedLeavesFrame: without Stamp (and one port) the program
// sends the template byte for byte, as before stamping existed.
func TestProgramUnstampedLeavesFrame(t *testing.T) {
	privtest.Root(t)
	cfg := validConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, cfg.Frame.Size)
	if _, err := packet.BuildUDP(frame, cfg.Frame); err != nil {
		t.Fatal(err)
	}
	prog, err := load(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	ret, out, err := prog.objs.XdpGen.Test(frame)
	if err != nil || ret != 4 {
		t.Fatalf("verdict %d, %v; want XDP_REDIRECT", ret, err)
	}
	if !slices.Equal(out, frame) {
		t.Errorf("frame changed:\n% x\nwant\n% x", out, frame)
	}
}

package main

// The frame options of the AF_XDP modes through the binary on a test bed:
// -f, --headroom, -u, --huge-pages, -F, txonly -F for jumbo frames and
// testbed up --mtu, and the bad input only a device shows wrong.

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/hugetest"
)

// runReceiver starts a receiving mode on dut0 with --json, waits until its
// program is attached, runs sender in the generator namespace, lets the
// last frames arrive, stops the receiver with Ctrl-C and returns both
// outputs.
func runReceiver(t *testing.T, bed *testbed.Bed, bin string, recv []string, sender ...string) (r, s result) {
	t.Helper()
	p := startIn(t, bed.DUTNS, append([]string{bin}, recv...)...)
	if _, ok := waitHooks(t, bed.DUTNS, "dut0", func(h testbedtest.Hooks) bool { return h.XDPProg != 0 }); !ok {
		p.signal(t, syscall.SIGKILL)
		t.Fatalf("nothing attached:\n%s", p.wait(t))
	}
	s = runIn(t, 60*time.Second, bed.GenNS, append([]string{bin}, sender...)...)
	time.Sleep(300 * time.Millisecond)
	p.signal(t, syscall.SIGINT)
	r = p.wait(t)
	if s.code != 0 {
		t.Fatalf("%s:\n%s", sender[0], s)
	}
	if r.code != 0 {
		t.Fatalf("%s:\n%s", recv[0], r)
	}
	return r, s
}

// TestCLIFrameOptions runs rxdrop with each frame option on live frames:
// every frame the generator sent is received or counted as a socket drop,
// and the summary says what the UMEM was.
func TestCLIFrameOptions(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, tc := range []struct {
		args []string
		want umemJSON
	}{
		{[]string{"-f", "2048"}, umemJSON{FrameSize: 2048}},
		{[]string{"-f", "4096"}, umemJSON{FrameSize: 4096}},
		{[]string{"--headroom", "256"}, umemJSON{FrameSize: 2048, Headroom: 256}},
		{[]string{"--headroom", "1024", "-f", "4096"}, umemJSON{FrameSize: 4096, Headroom: 1024}},
		{[]string{"-u", "--huge-pages", "off"}, umemJSON{FrameSize: 2048, Unaligned: true}},
		{[]string{"-u", "-f", "4096", "--huge-pages", "off"}, umemJSON{FrameSize: 4096, Unaligned: true}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			recv := append([]string{"rxdrop", "-i", "dut0", "--json"}, tc.args...)
			r, s := runReceiver(t, bed, bin, recv, "gen", "-i", "gen0", "--count", "100000", "--rate", "200000", "--json")
			var gs genSummary
			summaryLine(t, s.stdout, &gs)
			var rs xskSummary
			summaryLine(t, r.stdout, &rs)
			t.Logf("gen sent %d; rxdrop received %d (%d bytes), xdp stats %+v, umem %+v", gs.TxPackets, rs.RxPackets, rs.RxBytes, rs.XDPStats, rs.Umem)
			// gen's default -s 64 counts the FCS: 60-byte frames.
			if gs.TxPackets != 100000 || rs.RxPackets+rs.XDPStats.Drops() != gs.TxPackets || rs.RxBytes != rs.RxPackets*60 {
				t.Errorf("sent %d, received %d (%d bytes) + socket drops %d", gs.TxPackets, rs.RxPackets, rs.RxBytes, rs.XDPStats.Drops())
			}
			if rs.XDPStats.RxInvalidDescs != 0 {
				t.Errorf("rx_invalid_descs %d", rs.XDPStats.RxInvalidDescs)
			}
			if rs.Umem != tc.want {
				t.Errorf("umem %+v, want %+v", rs.Umem, tc.want)
			}
		})
	}
}

// TestCLIUnalignedHugePages: rxdrop -u puts the UMEM in huge pages when the
// pool has them and says so; without, it says that it fell back to normal
// pages, and --huge-pages on refuses with what to do.
func TestCLIUnalignedHugePages(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	t.Run("free", func(t *testing.T) {
		hugetest.Reserve(t, 8)
		p := startIn(t, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-u", "--huge-pages", "on")
		if !p.waitOutput(10*time.Second, false, func(s string) bool { return strings.Contains(s, "UMEM:") }) {
			p.signal(t, syscall.SIGKILL)
			t.Fatalf("no UMEM line:\n%s", p.wait(t))
		}
		p.signal(t, syscall.SIGINT)
		r := p.wait(t)
		if r.code != 0 || !strings.Contains(r.stdout, "UMEM: 2048-byte frames, unaligned chunks, in huge pages of 2048 kB") {
			t.Errorf("rxdrop -u with huge pages:\n%s", r)
		}
	})
	t.Run("none free", func(t *testing.T) {
		hugetest.Hold(t, 1)
		r, _ := runReceiver(t, bed, bin, []string{"rxdrop", "-i", "dut0", "-u", "--json"}, "gen", "-i", "gen0", "--count", "1000", "--json")
		var rs xskSummary
		summaryLine(t, r.stdout, &rs)
		if rs.Umem.HugePages || !strings.Contains(rs.Umem.Note, "they are in normal pages") || rs.RxPackets+rs.XDPStats.Drops() != 1000 {
			t.Errorf("rxdrop -u without huge pages: umem %+v, received %d\n%s", rs.Umem, rs.RxPackets, r)
		}
		refused := runIn(t, 20*time.Second, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-u", "--huge-pages", "on", "-d", "1s")
		checkRefused(t, refused, badInput{want: []string{"huge pages of 2048 kB and the pool has 0 free", "echo ", "/proc/sys/vm/nr_hugepages",
			"or leave --huge-pages at auto"}})
	})
}

type txOnlyJSON struct {
	TxPackets uint64   `json:"tx_packets"`
	TxBytes   uint64   `json:"tx_bytes"`
	Umem      umemJSON `json:"umem"`
	XDPStats  struct {
		TxInvalidDescs uint64 `json:"tx_invalid_descs"`
	} `json:"xdp_stats"`
}

// TestCLIJumboFrames is the jumbo path end to end: a bed made with
// testbed up --mtu 9000, txonly -F sending 9014-byte frames into rxdrop -F
// and l2fwd -F on dut0: every frame counted once, bytes = frames x 9014, no
// invalid descriptor.
func TestCLIJumboFrames(t *testing.T) {
	bin := buildCLI(t)
	name := testbed.UniqueName("j")
	up := startCmd(t, exec.Command(bin, "testbed", "up", "--name", name, "--mtu", "9000")).wait(t)
	t.Cleanup(func() {
		if err := testbed.Down(name); err != nil {
			t.Errorf("remove test bed: %v", err)
		}
	})
	if up.code != 0 || !strings.Contains(up.stdout, "MTU          9000") || !strings.Contains(up.stdout, "txonly -i gen0 -F -s 9018") {
		t.Fatalf("testbed up --mtu 9000:\n%s", up)
	}
	bed, err := testbed.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	const count, size = 20000, 9014
	for _, mode := range []string{"rxdrop", "l2fwd"} {
		for _, fs := range []string{"2048", "4096"} {
			t.Run(mode+"/"+fs, func(t *testing.T) {
				recv := []string{mode, "-i", "dut0", "-F", "-f", fs, "--json"}
				r, s := runReceiver(t, bed, bin, recv, "txonly", "-i", "gen0", "-F", "-f", fs, "--size", fmt.Sprint(size+4), // with the FCS
					"--count", fmt.Sprint(count), "--rate", "50000", "--json")
				var ts txOnlyJSON
				summaryLine(t, s.stdout, &ts)
				var rs xskSummary
				summaryLine(t, r.stdout, &rs)
				t.Logf("txonly sent %d (%d bytes); %s received %d (%d bytes), sent back %d, xdp stats %+v", ts.TxPackets, ts.TxBytes,
					mode, rs.RxPackets, rs.RxBytes, rs.TxPackets, rs.XDPStats)
				if ts.TxPackets != count || ts.TxBytes != count*size || ts.XDPStats.TxInvalidDescs != 0 || !ts.Umem.MultiBuffer {
					t.Errorf("txonly: %+v", ts)
				}
				if rs.RxPackets+rs.XDPStats.Drops() != count || rs.RxBytes != rs.RxPackets*size {
					t.Errorf("sent %d != received %d (%d bytes) + socket drops %d", count, rs.RxPackets, rs.RxBytes, rs.XDPStats.Drops())
				}
				if !strings.Contains(rs.XDPStats.RxDroppedReason, "segments") {
					t.Errorf("%s -F: rx_dropped_reason %q does not name the segments the fill ring lacked", mode, rs.XDPStats.RxDroppedReason)
				}
				if rs.XDPStats.RxInvalidDescs != 0 || rs.XDPStats.TxInvalidDescs != 0 || !rs.Umem.MultiBuffer {
					t.Errorf("%s: xdp stats %+v, umem %+v", mode, rs.XDPStats, rs.Umem)
				}
				if mode == "l2fwd" && (rs.TxPackets+rs.TxRingFull+rs.HandlerDropped != rs.RxPackets || rs.TxBytes != rs.TxPackets*size || rs.TxPackets == 0) {
					t.Errorf("l2fwd: rx %d != tx %d + tx ring full %d + dropped %d (tx %d bytes)", rs.RxPackets, rs.TxPackets, rs.TxRingFull, rs.HandlerDropped, rs.TxBytes)
				}
			})
		}
	}
	// Without -F the MTU does not fit, and the message says what does.
	refused := runIn(t, 20*time.Second, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-d", "1s")
	checkRefused(t, refused, badInput{want: []string{"dut0 has MTU 9000", "do not fit in 2048-byte UMEM frames", "use -F (multi-buffer"}})
}

// TestCLIFrameBadInput is the bad input of the frame options that only a
// device shows wrong.
func TestCLIFrameBadInput(t *testing.T) {
	bed := testbedtest.NewConfig(t, testbed.Config{MTU: 65535})
	small := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, tc := range []struct {
		name string
		ns   string
		args []string
		want []string
	}{
		{"headroom without MTU room", small.DUTNS, []string{"rxdrop", "-i", "dut0", "--headroom", "512", "-d", "1s"},
			[]string{"after 768 bytes of headroom (the kernel's 256 and the UMEM's 512)", "use --frame-size 4096"}},
		{"-F without MTU room", bed.DUTNS, []string{"rxdrop", "-i", "dut0", "-F", "-d", "1s"},
			[]string{"dut0 has MTU 65535: its frames need 37 UMEM frames of 2048 bytes", "more than the 18", "use --frame-size 4096"}},
		{"txonly frames beyond the MTU", small.GenNS, []string{"txonly", "-i", "gen0", "-F", "--size", "9018", "--count", "10"},
			[]string{"9014-byte frames do not fit gen0's MTU of 1500", "testbed up --mtu 9000"}},
		{"txonly frames beyond 18 UMEM frames", bed.GenNS, []string{"txonly", "-i", "gen0", "-F", "--size", "40000", "--count", "10"},
			[]string{"--size 40000", "at most 36864 in 18 UMEM frames of 2048 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readHooks(t, bed.DUTNS, "dut0")
			checkRefused(t, runIn(t, 20*time.Second, tc.ns, append([]string{bin}, tc.args...)...), badInput{want: tc.want})
			if h := readHooks(t, bed.DUTNS, "dut0"); !h.Equal(before) {
				t.Errorf("dut0: hooks %+v after a refused command, %+v before", h, before)
			}
		})
	}
}

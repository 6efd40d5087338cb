package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
)

func TestAdvise(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // the whole message
	}{
		{&engine.MTUError{Device: "eth9", MTU: 1775, FrameSize: 2048, MaxMTU: 1774},
			"eth9 has MTU 1775: its frames (up to 1793 bytes) do not fit in 2048-byte UMEM frames after the kernel's 256 bytes of headroom: use --frame-size 4096, or -F (multi-buffer: a frame in several UMEM frames)"},
		{&engine.MTUError{Device: "eth9", MTU: 9000, FrameSize: 4096, MaxMTU: 3822},
			"eth9 has MTU 9000: its frames (up to 9018 bytes) do not fit in 4096-byte UMEM frames after the kernel's 256 bytes of headroom: use -F (multi-buffer: a frame in several UMEM frames), or lower it to at most 3822 (ip link set eth9 mtu 3822)"},
		{&engine.MTUError{Device: "eth9", MTU: 9000, FrameSize: 2048, MaxMTU: 1774},
			"eth9 has MTU 9000: its frames (up to 9018 bytes) do not fit in 2048-byte UMEM frames after the kernel's 256 bytes of headroom: use -F (multi-buffer: a frame in several UMEM frames), or lower it to at most 3822 (ip link set eth9 mtu 3822) and use --frame-size 4096"},
		{&engine.MTUError{Device: "eth9", MTU: 1600, FrameSize: 2048, Headroom: 256, MaxMTU: 1518},
			"eth9 has MTU 1600: its frames (up to 1618 bytes) do not fit in 2048-byte UMEM frames after 512 bytes of headroom (the kernel's 256 and the UMEM's 256): use --frame-size 4096, or -F (multi-buffer: a frame in several UMEM frames)"},
		{&engine.MultiBufferError{Device: "lo", NoRxSG: true, Features: "none"},
			"lo cannot receive multi-buffer frames in native XDP: its XDP features (none) lack rx-sg: use -S (generic XDP takes multi-buffer frames on any device), or leave out -F"},
		{&engine.MultiBufferError{Device: "dut0", MTU: 65535, FrameSize: 2048, Buffers: 37, MaxBuffers: 18, MaxMTU: 32238},
			"dut0 has MTU 65535: its frames need 37 UMEM frames of 2048 bytes (1792 bytes of data each), more than the 18 one frame may span in copy mode; the largest MTU that fits is 32238: use --frame-size 4096, or lower the MTU (ip link set dut0 mtu 32238)"},
		{&engine.HugePagesError{Need: 4, Free: 1, Total: 1, PageSize: 2 << 20},
			"the UMEMs need 4 huge pages of 2048 kB and the pool has 1 free of 1 (HugePages_Free, HugePages_Total in /proc/meminfo); reserve more with: echo 4 > /proc/sys/vm/nr_hugepages; " +
				"or leave --huge-pages at auto (with -u the UMEM then goes into normal pages when there are none)"},
		{&engine.FrameTooLongError{Device: "gen0", MTU: 1500, Length: 9014, Max: 1514},
			"9014-byte frames do not fit gen0's MTU of 1500: it takes frames of at most 1514 bytes: send smaller frames (--size 1518, counting the FCS), or raise the MTU (ip link set gen0 mtu 9000; a test bed: xdpeng testbed up --mtu 9000)"},
		{&engine.QueueError{Device: "dut0", Driver: "veth", Queue: 5, RxQueues: 2},
			"queue 5 does not exist on dut0: it has 2 receive queues (0-1); veth queues are set at creation: recreate the pair with numrxqueues 6 numtxqueues 6 (for the test bed: xdpeng testbed up --queues 6)"},
		{fmt.Errorf("output device: %w", &engine.QueueError{Device: "eth1", Driver: "ice", Queue: 3, RxQueues: 1}),
			"output device: queue 3 does not exist on eth1: it has 1 receive queue (0); add queues with: ethtool -L eth1 combined 4"},
		{&engine.DeviceError{Name: "nosuch0"}, `-i: interface "nosuch0" not found in this network namespace (list them with: ip link)`},
		{inputOrOutput(&engine.DeviceError{Name: "nosuch1"}, "nosuch0"), `-o: interface "nosuch1" not found in this network namespace (list them with: ip link)`},
		{inputOrOutput(&engine.DeviceError{Name: "nosuch0"}, "nosuch0"), `-i: interface "nosuch0" not found in this network namespace (list them with: ip link)`},
		{&engine.AttachedError{Device: "dut0", ProgramID: 42, Mode: "native"},
			"interface dut0 already has XDP program id 42 (native mode) attached by someone else through netlink, held by no running process: detach it (ip link set dev dut0 xdp off), or pass --force to replace it"},
		{&engine.AttachedError{Device: "dut0", ProgramID: 42, ProgramName: "xdp_drop", Mode: "native", OwnerPID: 40, OwnerComm: "xdp-bench"},
			"interface dut0 already has XDP program id 42 xdp_drop (native mode) attached by someone else through netlink, held open by a running process (pid 40, xdp-bench): " +
				"stop that process, or pass --force twice (--force --force) to replace it anyway: it then loses dut0 without noticing"},
		{&engine.AttachedError{Device: "dut0", ProgramID: 42, Mode: "native", OwnerPID: 40, OwnerComm: "xdp-bench", Forced: true},
			"interface dut0 already has XDP program id 42 (native mode) attached by someone else through netlink, held open by a running process (pid 40, xdp-bench): " +
				"a program in use is replaced only when that is asked for too: stop that process, or pass --force twice (--force --force) to replace it anyway: it then loses dut0 without noticing"},
		{&engine.AttachedError{Device: "dut0", ProgramID: 42, Mode: "native", LinkID: 7, OwnerPID: 99, OwnerComm: "xdpeng"},
			"interface dut0 already has XDP program id 42 (native mode) attached by someone else through bpf_link id 7, held by a running process (pid 99, xdpeng): " +
				"it is not replaced even with --force; stop that process"},
		{&engine.AttachedError{Device: "dut0", ProgramID: 42, Mode: "native", LinkID: 7},
			"interface dut0 already has XDP program id 42 (native mode) attached by someone else through bpf_link id 7, held by a running process: " +
				"it is not replaced even with --force; stop that process (bpftool link show id 7 shows its pid)"},
	} {
		if got := advise(tc.err).Error(); got != tc.want {
			t.Errorf("advise(%v)\n got %s\nwant %s", tc.err, got, tc.want)
		}
	}
	if advise(nil) != nil {
		t.Error("advise(nil) is not nil")
	}
	plain := fmt.Errorf("something else")
	if got := advise(plain); got != plain || !strings.Contains(got.Error(), "something else") {
		t.Errorf("advise changed an error it has no advice for: %v", got)
	}
}

// TestShellJoin: bedAdvice quotes the words a shell would split or expand.
func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"rxdrop", "-i", "dut0", "--udp-port", "", "-w", "a b.pcap", "it's"})
	if want := `rxdrop -i dut0 --udp-port '' -w 'a b.pcap' 'it'\''s'`; got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

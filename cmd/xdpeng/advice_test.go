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
			"eth9 has MTU 1775: its frames (up to 1793 bytes) do not fit in 2048-byte UMEM frames after the kernel's 256 bytes of headroom: use --frame-size 4096"},
		{&engine.MTUError{Device: "eth9", MTU: 9000, FrameSize: 4096, MaxMTU: 3822},
			"eth9 has MTU 9000: its frames (up to 9018 bytes) do not fit in 4096-byte UMEM frames after the kernel's 256 bytes of headroom: lower it to at most 3822 (ip link set eth9 mtu 3822)"},
		{&engine.MTUError{Device: "eth9", MTU: 9000, FrameSize: 2048, MaxMTU: 1774},
			"eth9 has MTU 9000: its frames (up to 9018 bytes) do not fit in 2048-byte UMEM frames after the kernel's 256 bytes of headroom: lower it to at most 3822 (ip link set eth9 mtu 3822) and use --frame-size 4096"},
		{&engine.QueueError{Device: "dut0", Driver: "veth", Queue: 5, RxQueues: 2},
			"queue 5 does not exist on dut0: it has 2 receive queues (0-1); veth queues are set at creation: recreate the pair with numrxqueues 6 numtxqueues 6 (for the test bed: xdpeng testbed up --queues 6)"},
		{fmt.Errorf("output device: %w", &engine.QueueError{Device: "eth1", Driver: "ice", Queue: 3, RxQueues: 1}),
			"output device: queue 3 does not exist on eth1: it has 1 receive queue (0); add queues with: ethtool -L eth1 combined 4"},
		{&engine.DeviceError{Name: "nosuch0"}, `interface "nosuch0" not found in this network namespace (list them with: ip link)`},
		{&engine.AttachedError{Device: "dut0", ProgramID: 42, Mode: "native"},
			"interface dut0 already has XDP program id 42 (native mode) attached by someone else: detach it (ip link set dev dut0 xdp off), or pass --force to replace it"},
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

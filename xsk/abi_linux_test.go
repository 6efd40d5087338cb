package xsk

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The package's one copy of the kernel's AF_XDP layout (abi.go) is the
// kernel's, as golang.org/x/sys/unix has it from the headers.
func TestABIMatchesKernelHeaders(t *testing.T) {
	if unsafe.Sizeof(Desc{}) != unsafe.Sizeof(unix.XDPDesc{}) || unsafe.Offsetof(Desc{}.Options) != unsafe.Offsetof(unix.XDPDesc{}.Options) {
		t.Errorf("Desc is %d bytes, struct xdp_desc %d", unsafe.Sizeof(Desc{}), unsafe.Sizeof(unix.XDPDesc{}))
	}
	_ = ringOffset(unix.XDPRingOffset{}) // a compile-time check: the same fields in the same order
	if PacketContinues != unix.XDP_PKT_CONTD {
		t.Errorf("PacketContinues = %d, XDP_PKT_CONTD = %d", PacketContinues, unix.XDP_PKT_CONTD)
	}
	if TxMetadataOption != unix.XDP_TX_METADATA {
		t.Errorf("TxMetadataOption = %d, XDP_TX_METADATA = %d", TxMetadataOption, unix.XDP_TX_METADATA)
	}
	for _, c := range []struct {
		ours   TxRequest
		kernel int
	}{{TxTimestamp, unix.XDP_TXMD_FLAGS_TIMESTAMP}, {TxChecksum, unix.XDP_TXMD_FLAGS_CHECKSUM}, {TxLaunchTime, unix.XDP_TXMD_FLAGS_LAUNCH_TIME}} {
		if int(c.ours) != c.kernel {
			t.Errorf("TxRequest %#x, kernel's flag %#x", c.ours, c.kernel)
		}
	}
	if KernelHeadroom != unix.XDP_PACKET_HEADROOM {
		t.Errorf("KernelHeadroom = %d, XDP_PACKET_HEADROOM = %d", KernelHeadroom, unix.XDP_PACKET_HEADROOM)
	}
	if xdpRingNeedWakeup != unix.XDP_RING_NEED_WAKEUP {
		t.Errorf("xdpRingNeedWakeup = %d, XDP_RING_NEED_WAKEUP = %d", xdpRingNeedWakeup, unix.XDP_RING_NEED_WAKEUP)
	}
}

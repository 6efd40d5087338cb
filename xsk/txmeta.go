package xsk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"
)

// AF_XDP transmit metadata (Linux 6.8 and later): a UMEM registered with
// UmemConfig.TxMetadata keeps TxMetadataLen bytes in front of the data of
// every frame it transmits, struct xsk_tx_metadata, where a frame whose
// descriptor has the TxMetadataOption asks for per-frame offloads: the
// checksum of the L4 header and payload (TxChecksum), a completion
// timestamp (TxTimestamp) that the kernel writes back there before the
// frame's address reaches the completion ring, and a launch time
// (TxLaunchTime, Linux 6.14 and later).
//
// In copy mode the kernel does the work: it computes the checksum itself
// where the UMEM has UmemConfig.TxSoftwareChecksum (otherwise it leaves
// it to the device, as for any skb), takes the completion timestamp from
// CLOCK_TAI when the device frees the frame, and hands the launch time to
// the qdisc (skb->tstamp: fq and ETF honour it). In zero-copy mode the
// driver does it, for what it lists among its xsk-features (netdev family):
// tx-checksum, tx-timestamp, tx-launch-time-fifo.

// TxMetadataLen is the size of struct xsk_tx_metadata, what
// UmemConfig.TxMetadata reserves in front of each transmitted frame.
const TxMetadataLen = 24

// TxMetadataOption is the descriptor option (XDP_TX_METADATA) saying that
// the frame's metadata holds requests: TxRing.SetOptions takes it.
const TxMetadataOption = 1 << 1

// TxRequest is what a frame asks of the kernel or the device.
type TxRequest uint64

// The requests (XDP_TXMD_FLAGS_*).
const (
	TxTimestamp  TxRequest = 1 << 0 // a completion timestamp
	TxChecksum   TxRequest = 1 << 1 // the L4 checksum
	TxLaunchTime TxRequest = 1 << 2 // send no earlier than a time
)

// The layout of struct xsk_tx_metadata (include/uapi/linux/if_xdp.h).
const (
	txMetaFlagsAt      = 0  // __u64 flags
	txMetaCsumStartAt  = 8  // request.csum_start
	txMetaCsumOffsetAt = 10 // request.csum_offset
	txMetaLaunchTimeAt = 16 // request.launch_time
	txMetaTimestampAt  = 8  // completion.tx_timestamp
)

// ErrNoTxMetadata means the UMEM was registered without TX metadata, or a
// frame has no room for it in front of its data.
var ErrNoTxMetadata = errors.New("no room for TX metadata")

// TxMetadata returns the TX metadata of the frame whose data starts at
// descriptor address addr: the TxMetadataLen bytes in front of it, in
// place in the UMEM. It fails with ErrNoTxMetadata where the UMEM has none
// or the data starts too close to its frame's start.
func (u *Umem) TxMetadata(addr uint64) ([]byte, error) {
	if !u.txMetadata {
		return nil, fmt.Errorf("%w: the UMEM was registered without it", ErrNoTxMetadata)
	}
	a := u.DataAddr(addr)
	if a-u.FrameBase(addr) < TxMetadataLen {
		return nil, fmt.Errorf("%w: the data of address %#x starts %d bytes into its frame, fewer than %d", ErrNoTxMetadata, addr, a-u.FrameBase(addr), TxMetadataLen)
	}
	return u.area.mem[a-TxMetadataLen : a : a], nil
}

// SetTxRequest writes the requests of the frame at addr into its TX
// metadata: for TxChecksum, the checksum covers the frame from csumStart
// to its end and goes csumOffset bytes after csumStart (for UDP, 6; for
// TCP, 16), and the checksum field must hold the sum of the pseudo-header
// (folded, not complemented), as CHECKSUM_PARTIAL wants; for TxLaunchTime,
// launchNs is the time in the clock of the device's qdisc or driver. The
// frame's descriptor must then carry TxMetadataOption.
func (u *Umem) SetTxRequest(addr uint64, req TxRequest, csumStart, csumOffset uint16, launchNs uint64) error {
	m, err := u.TxMetadata(addr)
	if err != nil {
		return err
	}
	if req&^(TxTimestamp|TxChecksum|TxLaunchTime) != 0 {
		return fmt.Errorf("unknown TX metadata requests %#x", uint64(req&^(TxTimestamp|TxChecksum|TxLaunchTime)))
	}
	if req&TxLaunchTime != 0 {
		if err := checkTxLaunchTime(); err != nil {
			return err
		}
	}
	binary.NativeEndian.PutUint64(m[txMetaFlagsAt:], uint64(req))
	binary.NativeEndian.PutUint16(m[txMetaCsumStartAt:], csumStart)
	binary.NativeEndian.PutUint16(m[txMetaCsumOffsetAt:], csumOffset)
	binary.NativeEndian.PutUint32(m[12:], 0)
	binary.NativeEndian.PutUint64(m[txMetaLaunchTimeAt:], launchNs)
	return nil
}

// ErrNoTxLaunchTime means the kernel takes no launch time in TX metadata.
var ErrNoTxLaunchTime = errors.New("AF_XDP TX launch time needs Linux 6.14 or later")

// CheckTxLaunchTime says, with an ErrNoTxLaunchTime, why the kernel takes
// no launch time in TX metadata; nil where it does.
func CheckTxLaunchTime() error { return checkTxLaunchTime() }

// checkTxLaunchTime tells, once, whether the kernel's struct
// xsk_tx_metadata has a launch time (Linux 6.14 and later): a kernel
// without it refuses the frames that ask for one as invalid descriptors.
var checkTxLaunchTime = sync.OnceValue(func() error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("%w: cannot read the kernel's BTF to tell: %w", ErrNoTxLaunchTime, err)
	}
	var st *btf.Struct
	if err := spec.TypeByName("xsk_tx_metadata", &st); err != nil {
		return fmt.Errorf("%w: the kernel has no struct xsk_tx_metadata: %w", ErrNoTxLaunchTime, err)
	}
	for _, m := range st.Members {
		u, ok := m.Type.(*btf.Union)
		if !ok {
			continue
		}
		for _, um := range u.Members {
			if r, ok := um.Type.(*btf.Struct); ok && um.Name == "request" {
				for _, rm := range r.Members {
					if rm.Name == "launch_time" {
						return nil
					}
				}
			}
		}
	}
	return fmt.Errorf("%w: the kernel's struct xsk_tx_metadata has no launch_time", ErrNoTxLaunchTime)
})

// TxCompletionTimestamp reads the completion timestamp of a frame the
// completion ring returned, sent with TxTimestamp: ns of CLOCK_TAI in copy
// mode, of the device's clock in zero-copy mode. ok is false where the
// kernel or the driver wrote none (zero).
func (u *Umem) TxCompletionTimestamp(addr uint64) (ns uint64, ok bool) {
	m, err := u.TxMetadata(addr)
	if err != nil {
		return 0, false
	}
	ns = binary.NativeEndian.Uint64(m[txMetaTimestampAt:])
	return ns, ns != 0
}

// TakeTxCompletionTimestamp is TxCompletionTimestamp for a frame that is
// to be sent again with the same requests: it reads the timestamp, then
// writes the checksum request (csumStart and csumOffset, as SetTxRequest
// takes them; zeros without TxChecksum) back where it was, as struct
// xsk_tx_metadata keeps the request and the completion in a union.
func (u *Umem) TakeTxCompletionTimestamp(addr uint64, csumStart, csumOffset uint16) (ns uint64, ok bool) {
	m, err := u.TxMetadata(addr)
	if err != nil {
		return 0, false
	}
	ns = binary.NativeEndian.Uint64(m[txMetaTimestampAt:])
	binary.NativeEndian.PutUint16(m[txMetaCsumStartAt:], csumStart)
	binary.NativeEndian.PutUint16(m[txMetaCsumOffsetAt:], csumOffset)
	binary.NativeEndian.PutUint32(m[12:], 0)
	return ns, ns != 0
}

// HasTxMetadata reports whether the UMEM was registered with TX metadata.
func (u *Umem) HasTxMetadata() bool { return u.txMetadata }

package selftest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// driverName is the driver of e's device as ethtool names it ("" if it
// cannot be read).
func driverName(e End) string {
	var name string
	_ = e.do(func() error {
		et, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer et.Close()
		name, err = et.DriverName(e.Name)
		return err
	})
	return name
}

// Releases of virtio_net's AF_XDP zero-copy: receiving came with the
// series "virtio_net: support AF_XDP zero copy (rx)" (6.11), transmitting
// with "virtio_net: xsk: tx: support xmit xsk buffer" (6.13), whose last
// patch also reports xsk-zerocopy among the device's XDP features.
var (
	virtioZCRx = [2]int{6, 11}
	virtioZCTx = [2]int{6, 13}
)

// Feature bits of a virtio device (the virtio specification): the two a
// virtio_net queue needs for AF_XDP zero-copy. Binding a buffer pool
// resets the queue (virtqueue_reset, VIRTIO_F_RING_RESET), and the
// buffers are mapped through the DMA API, which a virtqueue uses only
// when the device negotiated VIRTIO_F_ACCESS_PLATFORM (virtqueue_dma_dev
// is NULL otherwise, and the bind fails).
const (
	virtioFAccessPlatform = 33
	virtioFRingReset      = 40
)

// zeroCopyGap says what e's device lacks for AF_XDP zero-copy where the
// selftest knows the driver (virtio_net): the kernel's release, or the
// device features it did not negotiate. It is "" for other drivers.
func zeroCopyGap(e End) string {
	if driverName(e) != "virtio_net" {
		return ""
	}
	_, rel := kernelAtLeast(virtioZCTx)
	if ok, _ := kernelAtLeast(virtioZCRx); !ok {
		return fmt.Sprintf("virtio_net has no AF_XDP zero-copy before Linux %d.%d (receiving; transmitting from %d.%d), and this kernel is %s",
			virtioZCRx[0], virtioZCRx[1], virtioZCTx[0], virtioZCTx[1], rel)
	}
	if ok, _ := kernelAtLeast(virtioZCTx); !ok {
		return fmt.Sprintf("virtio_net of this kernel (%s) binds zero-copy for receiving only: it has no zero-copy transmit (Linux %d.%d, \"virtio_net: xsk: tx: support xmit xsk buffer\") and so does not report xsk-zerocopy",
			rel, virtioZCTx[0], virtioZCTx[1])
	}
	if e.NS != "" {
		return ""
	}
	bits, err := os.ReadFile(filepath.Join("/sys/class/net", e.Name, "device", "features"))
	if err != nil {
		return ""
	}
	var missing []string
	for _, f := range []struct {
		bit        int
		name, qemu string
	}{
		{virtioFRingReset, "VIRTIO_F_RING_RESET", "queue_reset=on"},
		{virtioFAccessPlatform, "VIRTIO_F_ACCESS_PLATFORM", "iommu_platform=on"},
	} {
		s := strings.TrimSpace(string(bits))
		if f.bit >= len(s) || s[f.bit] != '1' {
			missing = append(missing, fmt.Sprintf("%s (QEMU's virtio-net-pci %s)", f.name, f.qemu))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the device did not negotiate %s, which virtio_net's zero-copy needs", strings.Join(missing, " and "))
}

// ringSizes are a device's descriptor ring sizes (ethtool -g): in use and
// the largest it takes.
type ringSizes struct {
	rx, tx       uint32
	rxMax, txMax uint32
}

// errNoRingParams: the driver has no ring parameters to read or set.
var errNoRingParams = errors.New("the driver has no ring parameters (ethtool -g)")

// readRings reads e's ring sizes.
func readRings(e End) (ringSizes, error) {
	var r ringSizes
	err := e.do(func() error {
		et, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer et.Close()
		ring, err := et.GetRing(e.Name)
		if errors.Is(err, unix.EOPNOTSUPP) {
			return errNoRingParams
		}
		if err != nil {
			return fmt.Errorf("ethtool -g %s: %w", e.Name, err)
		}
		r = ringSizes{rx: ring.RxPending, tx: ring.TxPending, rxMax: ring.RxMaxPending, txMax: ring.TxMaxPending}
		return nil
	})
	return r, err
}

// setRings sets e's rx and tx ring sizes (ethtool -G DEV rx RX tx TX).
func setRings(e End, rx, tx uint32) error {
	return e.do(func() error {
		et, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer et.Close()
		ring, err := et.GetRing(e.Name)
		if err != nil {
			return fmt.Errorf("ethtool -g %s: %w", e.Name, err)
		}
		ring.RxPending, ring.TxPending = rx, tx
		if _, err := et.SetRing(e.Name, ring); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) {
				return errNoRingParams
			}
			return fmt.Errorf("ethtool -G %s rx %d tx %d: %w", e.Name, rx, tx, err)
		}
		return nil
	})
}

// needRings sets the ring sizes of both ends for the test, size giving
// each end's (rx, tx) from what it has, and puts them back when the test
// ends (the guard, if the process is killed first). An end whose driver has
// no ring parameters skips the test.
func (t *tcase) needRings(size func(ringSizes) (rx, tx uint32)) (string, error) {
	var did []string
	for _, e := range []End{t.pair.Tx, t.pair.Rx} {
		cur, err := readRings(e)
		if errors.Is(err, errNoRingParams) {
			return "", skipf("%s (%s): %v", e.Name, driverName(e), errNoRingParams)
		}
		if err != nil {
			return "", err
		}
		rx, tx := size(cur)
		if t.guard != nil {
			if err := t.guard.rings(e, cur.rx, cur.tx); err != nil {
				return "", err
			}
		}
		if err := setRings(e, rx, tx); err != nil {
			// Nothing was changed: the guard has nothing to put back.
			if gerr := t.guardRestored(e); gerr != nil {
				return "", gerr
			}
			if errors.Is(err, errNoRingParams) {
				return "", skipf("%s (%s): the driver cannot set its ring sizes (ethtool -G: %v)", e.Name, driverName(e), unix.EOPNOTSUPP)
			}
			return "", err
		}
		t.onClose(func() error {
			if err := setRings(e, cur.rx, cur.tx); err != nil {
				return err
			}
			return t.guardRestored(e)
		})
		got, err := readRings(e)
		if err != nil {
			return "", err
		}
		if got.rx != rx || got.tx != tx {
			return "", &Failure{Check: "ethtool -G " + e.Name, Expected: fmt.Sprintf("rx %d tx %d", rx, tx), Got: fmt.Sprintf("rx %d tx %d", got.rx, got.tx), Frame: -1}
		}
		did = append(did, fmt.Sprintf("%s rx %d tx %d (was %d, %d)", e.Name, rx, tx, cur.rx, cur.tx))
	}
	return strings.Join(did, ", "), nil
}

// guardRestored tells the guard, if there is one, that e's rings are its
// own again.
func (t *tcase) guardRestored(e End) error {
	if t.guard == nil {
		return nil
	}
	return t.guard.restored(e)
}

// prefilledDrop are the drivers that, after a multi-buffer XDP program is
// attached in native mode, drop a frame landing in a receive buffer posted
// before it (without XDP's headroom) when the frame's first buffer and that
// headroom do not fit a page (virtio_net: "the buffer was prefilled before
// XDP is set", in its mergeable receive path).
var prefilledDrop = map[string]bool{"virtio_net": true}

// primeEtherType is the EtherType of the frames that replace a receive
// ring's buffers (IEEE 802 local experimental): not the test's, so the
// program passes them to the stack, which drops them.
const primeEtherType = 0x88b5

// primeRx replaces every receive buffer the receiving end's driver posted
// before the test's program was attached, where its driver drops frames
// that land in those (prefilledDrop): it sends as many small frames as the
// receive ring holds from the sending end with a packet socket, and waits
// until the receiving end counted them all (at most 5 s). Elsewhere it does
// nothing.
func (t *tcase) primeRx() error {
	if t.mode != DRV || !prefilledDrop[driverName(t.pair.Rx)] {
		return nil
	}
	rings, err := readRings(t.pair.Rx)
	if err != nil {
		return err
	}
	n := int(rings.rx)
	before, err := rxPackets(t.pair.Rx)
	if err != nil {
		return err
	}
	frame := make([]byte, minFrameLen)
	copy(frame, t.pair.Rx.MAC)
	copy(frame[6:], t.pair.Tx.MAC)
	binary.BigEndian.PutUint16(frame[12:], primeEtherType)
	err = t.pair.Tx.do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("packet socket to replace %s's receive buffers: %w", t.pair.Rx.Name, err)
		}
		defer unix.Close(fd)
		to := &unix.SockaddrLinklayer{Ifindex: t.pair.Tx.Index, Halen: 6}
		copy(to.Addr[:], t.pair.Rx.MAC)
		for i := 0; i < n; i++ {
			if err := unix.Sendto(fd, frame, 0, to); err != nil {
				return fmt.Errorf("send a frame to replace %s's receive buffers: %w", t.pair.Rx.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		now, err := rxPackets(t.pair.Rx)
		if err != nil {
			return err
		}
		if now-before >= uint64(n) || time.Now().After(deadline) {
			return nil
		}
	}
}

// rxPackets is e's count of received packets.
func rxPackets(e End) (uint64, error) {
	var n uint64
	err := e.do(func() error {
		l, err := netlink.LinkByIndex(e.Index)
		if err != nil {
			return err
		}
		if s := l.Attrs().Statistics; s != nil {
			n = s.RxPackets
		}
		return nil
	})
	return n, err
}

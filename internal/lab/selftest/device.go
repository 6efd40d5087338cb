package selftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/safchain/ethtool"
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

package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
	"golang.org/x/sys/unix"
)

// checkTxChecksum refuses TxChecksum where it cannot work, before anything
// is set up: multi-buffer, unaligned chunks, a frame that is not UDP or TCP over IP or does
// not fit after the metadata, zero-copy on a device without tx-checksum.
// BindAuto on such a device binds in copy mode, where the kernel fills
// the checksums.
func (c *GeneratorConfig) checkTxChecksum(f *netdev.Facts, plan netdev.Plan) error {
	if !c.TxChecksum {
		return nil
	}
	fail := txMetaFail(f, "TX checksum offload")
	if err := c.checkTxMetaFrames(fail); err != nil {
		return err
	}
	for i, fr := range c.Frames {
		if _, _, err := l4Checksum(fr); err != nil {
			return fail("frame %d: %v", i, err)
		}
	}
	if plan.FeaturesKnown && plan.ZeroCopy && (f.Features == nil || !f.Features.XSK.Has(netdev.XSKTxChecksum)) {
		switch c.BindMode {
		case BindZeroCopy:
			return fail("the driver (%s) does not fill checksums for zero-copy sockets: its xsk-features are %s, without tx-checksum (copy mode, -c, has the kernel fill them)", f.DriverLabel(), f.Features.XSK)
		case BindAuto:
			c.BindMode = BindCopy
		}
	}
	return nil
}

// checkTxChecksum refuses Config.TxChecksum where it cannot work, before
// anything is set up: multi-buffer, unaligned chunks, an output of its own
// UMEM, zero-copy on a device without tx-checksum (BindAuto there binds
// in copy mode, where the kernel fills the checksums).
func (c *Config) checkTxChecksum(f *netdev.Facts, plan netdev.Plan) error {
	if !c.TxChecksum {
		return nil
	}
	fail := txMetaFail(f, "TX checksum offload")
	switch {
	case c.MultiBuffer:
		return fail("does not combine with multi-buffer")
	case c.Unaligned:
		return fail("does not combine with unaligned chunk mode")
	}
	for i, o := range c.Outputs {
		if o.Copy {
			return fail("output %d (%s) has a UMEM of its own (Copy), into which the frame's TX metadata is not copied", i, o.Interface)
		}
	}
	if plan.FeaturesKnown && plan.ZeroCopy && (f.Features == nil || !f.Features.XSK.Has(netdev.XSKTxChecksum)) {
		switch c.BindMode {
		case BindZeroCopy:
			have := "none"
			if f.Features != nil {
				have = fmt.Sprint(f.Features.XSK)
			}
			return fail("the driver (%s) does not fill checksums for zero-copy sockets: its xsk-features are %s, without tx-checksum", f.DriverLabel(), have)
		case BindAuto:
			c.BindMode = BindCopy
		}
	}
	return nil
}

// checkTxTimestamp refuses TxTimestamp where it cannot work: multi-buffer,
// unaligned chunks, a frame that does not fit after the metadata,
// zero-copy (whose timestamps are the NIC's clock). BindAuto binds in copy
// mode.
func (c *GeneratorConfig) checkTxTimestamp(f *netdev.Facts) error {
	if !c.TxTimestamp {
		return nil
	}
	fail := txMetaFail(f, "TX completion timestamps")
	if err := c.checkTxMetaFrames(fail); err != nil {
		return err
	}
	switch c.BindMode {
	case BindZeroCopy:
		return fail("are taken in copy mode only: a zero-copy driver stamps completions with its NIC's clock, not the CLOCK_TAI the sending time is read in")
	case BindAuto:
		c.BindMode = BindCopy
	}
	return nil
}

// checkLaunchTime refuses LaunchDelay where it cannot work: a device whose
// xsk-features lack tx-launch-time-fifo (or a kernel that reports none), a
// kernel without launch time in struct xsk_tx_metadata, copy mode,
// multi-buffer, unaligned chunks, a frame that does not fit after the
// metadata. BindAuto binds zero-copy.
func (c *GeneratorConfig) checkLaunchTime(f *netdev.Facts, plan netdev.Plan) error {
	if c.LaunchDelay == 0 {
		return nil
	}
	fail := txMetaFail(f, "TX launch time")
	if c.LaunchDelay < 0 {
		return fail("a launch delay of %v: it must be positive", c.LaunchDelay)
	}
	if err := c.checkTxMetaFrames(fail); err != nil {
		return err
	}
	if !plan.FeaturesKnown || f.Features == nil {
		return fail("the kernel reports no xsk-features of the device (Linux 6.8 and later do), so none can be known to send at a launch time")
	}
	if !f.Features.XSK.Has(netdev.XSKTxLaunchTimeFIFO) {
		return fail("the driver (%s) has no launch time for AF_XDP sockets: its xsk-features are %s, without tx-launch-time-fifo", f.DriverLabel(), f.Features.XSK)
	}
	if err := xsk.CheckTxLaunchTime(); err != nil {
		return fail("%v", err)
	}
	switch c.BindMode {
	case BindCopy:
		return fail("is for zero-copy sockets: in copy mode the kernel hands the time to the qdisc, in whatever clock that keeps")
	case BindAuto:
		c.BindMode = BindZeroCopy
	}
	return nil
}

// txMetaFail makes the errors of a TX metadata check: of kind
// ErrTxMetadata, naming what and the device.
func txMetaFail(f *netdev.Facts, what string) func(format string, a ...any) error {
	return func(format string, a ...any) error {
		return &kindError{ErrTxMetadata, fmt.Errorf("%s on %s: "+format, append([]any{what, f.Name}, a...)...)}
	}
}

// checkTxMetaFrames refuses what no TX metadata combines with:
// multi-buffer, unaligned chunks, a frame that does not fit in its UMEM
// frame after the metadata.
func (c *GeneratorConfig) checkTxMetaFrames(fail func(format string, a ...any) error) error {
	if c.MultiBuffer {
		return fail("does not combine with multi-buffer")
	}
	if c.Unaligned {
		return fail("does not combine with unaligned chunk mode")
	}
	for i, fr := range c.Frames {
		if len(fr) > int(c.FrameSize)-txMetaOffset {
			return fail("frame %d is %d bytes: with the %d bytes of TX metadata in front, a %d-byte UMEM frame holds %d", i, len(fr), txMetaOffset, c.FrameSize, int(c.FrameSize)-txMetaOffset)
		}
	}
	return nil
}

// newTAIClock reads CLOCK_TAI between two readings of time.Now, taking
// the closest of taiSamples such pairs: a reading whose pair is wide (the
// thread was preempted between them) would put every sending time off by
// up to half the gap.
func newTAIClock() (taiClock, error) {
	var best taiClock
	gap := time.Duration(-1)
	for range taiSamples {
		var ts unix.Timespec
		before := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_TAI, &ts); err != nil {
			return taiClock{}, fmt.Errorf("read CLOCK_TAI: %w", err)
		}
		after := time.Now()
		if d := after.Sub(before); gap < 0 || d < gap {
			gap, best = d, taiClock{base: before.Add(d / 2), tai: uint64(ts.Nano())}
		}
	}
	return best, nil
}

// taiSamples is how many readings newTAIClock takes.
const taiSamples = 16

// txMetadataError is GeneratorConfig.txMetadataError for an engine's
// UMEMs with Config.TxChecksum.
func (c *Config) txMetadataError(err error) error {
	if c.TxChecksum && errors.Is(err, unix.EINVAL) {
		return &kindError{ErrTxMetadata, err}
	}
	return err
}

// txMetadataError gives a UMEM registration that the kernel refused with
// TX metadata the kind ErrTxMetadata: a kernel without it says EINVAL.
func (c *GeneratorConfig) txMetadataError(err error) error {
	if c.txMetadata() && errors.Is(err, unix.EINVAL) {
		return &kindError{ErrTxMetadata, err}
	}
	return err
}

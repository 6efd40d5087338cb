package engine

import (
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/internal/netdev"
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
	fail := func(format string, a ...any) error {
		return &kindError{ErrTxMetadata, fmt.Errorf("TX checksum offload on %s: "+format, append([]any{f.Name}, a...)...)}
	}
	if c.MultiBuffer {
		return fail("does not combine with multi-buffer")
	}
	if c.Unaligned {
		return fail("does not combine with unaligned chunk mode")
	}
	for i, fr := range c.Frames {
		if _, _, err := l4Checksum(fr); err != nil {
			return fail("frame %d: %v", i, err)
		}
		if len(fr) > int(c.FrameSize)-txMetaOffset {
			return fail("frame %d is %d bytes: with the %d bytes of TX metadata in front, a %d-byte UMEM frame holds %d", i, len(fr), txMetaOffset, c.FrameSize, int(c.FrameSize)-txMetaOffset)
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

// txMetadataError gives a UMEM registration that the kernel refused with
// TX metadata the kind ErrTxMetadata: a kernel without it says EINVAL.
func (c *GeneratorConfig) txMetadataError(err error) error {
	if c.TxChecksum && errors.Is(err, unix.EINVAL) {
		return &kindError{ErrTxMetadata, err}
	}
	return err
}

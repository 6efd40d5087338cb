package engine

// What the device's XDP features decide before anything is set up: the XDP
// mode XDPAuto becomes, and the refusals of a mode or a bind the device
// does not have, with the reason.

import (
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// probe reads the facts of the device called name (netdev.Probe): what
// New and NewGenerator decide from (Facts.Plan; Plan.FeaturesKnown is false
// on kernels that do not report XDP features, before Linux 6.3). A device
// that does not exist is a *DeviceError.
func probe(name string) (*netdev.Facts, error) {
	f, err := netdev.Probe(name)
	var nf *netdev.NoInterfaceError
	if errors.As(err, &nf) {
		return nil, &DeviceError{Name: nf.Name}
	}
	return f, err
}

// foreignXDP refuses, from the device's facts, an XDP program someone else
// attached that r does not let the attachment replace (see netdev.Replace).
// It returns a *netdev.ForeignXDPError, nil where nothing is in the way.
func foreignXDP(f *netdev.Facts, r netdev.Replace) error {
	return f.XDP.Refusal(f.Name, r)
}

// checkMultiBuffer refuses multi-buffer in native mode on a device whose
// driver cannot hand XDP frames in fragments (no rx-sg among its XDP
// features). Generic mode works on every device.
func (c *Config) checkMultiBuffer(f *netdev.Facts, plan netdev.Plan) error {
	if !c.MultiBuffer || c.XDPMode != XDPNative || !plan.FeaturesKnown || plan.MultiBuffer {
		return nil
	}
	return &MultiBufferError{Device: f.Name, NoRxSG: true, Features: f.Features.XDP.String()}
}

// resolveXDPMode turns XDPAuto into the mode the device has, and refuses
// XDPNative on a device without native XDP and BindZeroCopy on one without
// zero-copy.
func (c *Config) resolveXDPMode(info *netdev.Info, plan netdev.Plan) error {
	if c.XDPMode == XDPAuto {
		c.XDPMode = XDPNative
		if plan.XDPMode == netdev.ModeGeneric {
			c.XDPMode = XDPGeneric
		}
	}
	if c.XDPMode == XDPNative && plan.FeaturesKnown && plan.XDPMode != netdev.ModeNative {
		return &kindError{ErrNoNativeXDP, fmt.Errorf("%s has no native XDP: the kernel does not report the basic XDP feature for it, so XDP runs there only in generic mode", info.Name)}
	}
	return checkZeroCopy(info, plan, c.BindMode)
}

// checkZeroCopy refuses BindZeroCopy on a device the kernel reports
// without zero-copy.
func checkZeroCopy(info *netdev.Info, plan netdev.Plan, m BindMode) error {
	if m == BindZeroCopy && plan.FeaturesKnown && !plan.ZeroCopy {
		return &kindError{ErrNoZeroCopy, fmt.Errorf("%s (%s) has no AF_XDP zero-copy: the kernel does not report xsk-zerocopy among its XDP features", info.Name, info.DriverLabel())}
	}
	return nil
}

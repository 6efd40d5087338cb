package engine

import (
	"fmt"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// checkRxMetadata refuses RxMetadata where it cannot work, before anything
// is set up: generic XDP, a kernel without the kfuncs, a device that
// reports it has not the metadata asked for.
func (c *Config) checkRxMetadata(f *netdev.Facts) error {
	m := c.RxMetadata
	if m == 0 {
		return nil
	}
	fail := func(format string, a ...any) error {
		return &kindError{ErrRxMetadata, fmt.Errorf("receive metadata (%s) on %s: "+format, append([]any{m, f.Name}, a...)...)}
	}
	if m&^(RxHash|RxTimestamp|RxVLAN) != 0 {
		return fail("unknown kinds: use RxHash, RxTimestamp and RxVLAN")
	}
	if c.XDPMode == XDPGeneric {
		return fail("needs native XDP (the metadata kfuncs run only in a program bound to the device's driver), and XDP runs in generic mode here")
	}
	var fns []bpf.Kfunc
	if m&RxTimestamp != 0 {
		fns = append(fns, bpf.KfuncRxTimestamp)
	}
	if m&RxHash != 0 {
		fns = append(fns, bpf.KfuncRxHash)
	}
	if m&RxVLAN != 0 {
		fns = append(fns, bpf.KfuncRxVLANTag)
	}
	if err := bpf.CheckKfuncs(fns...); err != nil {
		return &kindError{ErrRxMetadata, fmt.Errorf("receive metadata (%s) on %s: %w", m, f.Name, err)}
	}
	if err := bpf.CheckAdjustMeta(); err != nil {
		return &kindError{ErrRxMetadata, &kindError{ErrRxMetadataRefused, fmt.Errorf("receive metadata (%s) on %s: %w", m, f.Name, err)}}
	}
	// Linux 6.8 and later report what the driver implements; before, a
	// kind the driver lacks reads as ok false on every frame.
	if f.Features != nil && kernelReportsRxMetadata() {
		have := f.Features.RxMetadata
		for _, k := range []struct {
			kind RxMetadata
			bit  netdev.XDPRxMetadata
		}{{RxHash, netdev.XDPRxMetaHash}, {RxTimestamp, netdev.XDPRxMetaTimestamp}, {RxVLAN, netdev.XDPRxMetaVLANTag}} {
			if m&k.kind != 0 && !have.Has(k.bit) {
				return fail("the driver (%s) does not implement it: its xdp-rx-metadata features are %s, without %s", f.DriverLabel(), have, k.bit)
			}
		}
	}
	return nil
}

// kernelReportsRxMetadata reports whether the kernel tells a device's
// xdp-rx-metadata features (Linux 6.8 and later, the release that brought
// the VLAN tag kfunc): an empty set then means none.
func kernelReportsRxMetadata() bool { return bpf.CheckKfuncs(bpf.KfuncRxVLANTag) == nil }

// xskMatch is m as package bpf takes it.
func xskMatch(m Match) bpf.XskMatch {
	return bpf.XskMatch{EtherType: m.EtherType, IPProto: m.IPProto, DstPort: m.DstPort, Dst: m.Dst}
}

// newSteering loads the steering program: the plain one, or the one that
// writes the receive metadata Config.RxMetadata asks for.
func (e *Engine) newSteering() (*bpf.XskRedirect, error) {
	c := &e.cfg
	if c.RxMetadata == 0 {
		return bpf.NewXskRedirect(bpf.XskOptions{Match: xskMatch(c.steering()), Frags: c.MultiBuffer})
	}
	x, err := bpf.NewXskRedirectMeta(bpf.XskMetaOptions{Ifindex: e.dev.Index, Match: xskMatch(c.steering()),
		Hash: c.RxMetadata&RxHash != 0, Timestamp: c.RxMetadata&RxTimestamp != 0, VLAN: c.RxMetadata&RxVLAN != 0, Frags: c.MultiBuffer})
	if err != nil {
		return nil, &kindError{ErrRxMetadata, err}
	}
	return x, nil
}

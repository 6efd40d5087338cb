package main

// The transmit helper of gen and txonly: many drivers (i40e, ice, ixgbe,
// igb, igc, bnxt, ena, gve, stmmac, virtio_net, ...) set up their XDP
// transmit rings, and take XDP frames or AF_XDP zero-copy transmit, only
// while an XDP program is attached to the device. Where the device's XDP
// features say so (netdev Plan: Transmit needs-program), gen and txonly
// attach an XDP_PASS program (internal/lab/kern's pass path, a bpf_link, never
// replacing anyone's program) for the run, as xdp-trafficgen does.

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The values of --xdp-pass.
const (
	xdpPassAuto   = "auto"
	xdpPassAlways = "always"
	xdpPassNever  = "never"
)

func xdpPassFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "xdp-pass", xdpPassAuto, "attach an XDP_PASS program to the device for the run, which many drivers need before they transmit XDP frames: "+
		"auto (where its XDP features say it is needed), always, or never")
}

func checkXDPPass(v string) error {
	switch v {
	case xdpPassAuto, xdpPassAlways, xdpPassNever:
		return nil
	}
	return fmt.Errorf("--xdp-pass %q: want auto, always or never", v)
}

// txPlan is what sending out of a device takes, from its facts.
type txPlan struct {
	attach bool   // attach xdp_pass for the run
	note   string // what to say about it, "" for nothing
}

// planTx decides for a sender of XDP frames (gen, xdp is true) or of
// AF_XDP frames (txonly: zeroCopy says it may bind in zero-copy mode,
// which goes through the driver's XDP transmit; copy mode hands the
// device skbs and works everywhere). It refuses a device that cannot take
// what the sender sends, with the reason.
func planTx(f *netdev.Facts, mode string, xdp, zeroCopy bool) (txPlan, error) {
	need := f.Plan().SendNeed(xdp, zeroCopy)
	attached := f.XDP.ProgID != 0
	switch {
	case mode == xdpPassAlways && attached:
		return txPlan{note: fmt.Sprintf("%s already has XDP program id %d (%s mode): no xdp_pass needed", f.Name, f.XDP.ProgID, f.XDP.Mode)}, nil
	case mode == xdpPassAlways:
		return txPlan{attach: true}, nil
	case need == netdev.TxNeedsProgram && mode == xdpPassNever:
		return txPlan{note: fmt.Sprintf("%s (%s) transmits XDP frames only while an XDP program is attached, and --xdp-pass never attaches none: frames may be refused", f.Name, f.DriverLabel())}, nil
	case need == netdev.TxNeedsProgram:
		if attached {
			// A program in another mode (generic): a native one cannot
			// be added beside it.
			return txPlan{}, fmt.Errorf("%s (%s) transmits XDP frames only while a native XDP program is attached, and it has XDP program id %d in %s mode, which is not ours to replace: "+
				"detach it (ip link set dev %s xdp off) and xdpeng attaches XDP_PASS for the run", f.Name, f.DriverLabel(), f.XDP.ProgID, f.XDP.Mode, f.Name)
		}
		return txPlan{attach: true}, nil
	case need == netdev.TxNeedsPeer:
		return txPlan{}, fmt.Errorf("%s takes no XDP frames now: a veth passes them on only while its peer has an XDP program attached or GRO on, and its peer has neither, so every frame would be dropped: "+
			"turn GRO on at the peer (ethtool -K PEER gro on, in its namespace) or attach a program there (xdpeng kern pass -i PEER)", f.Name)
	case need == netdev.TxUnsupported && xdp:
		return txPlan{}, fmt.Errorf("%s (%s) takes no XDP frames (ndo-xmit is not among its XDP features; xdpeng probe -i %s shows them): gen cannot send out of it; txonly can, in copy mode",
			f.Name, f.DriverLabel(), f.Name)
	}
	return txPlan{}, nil
}

// txHelper is the xdp_pass program attached for a run, if any.
type txHelper struct {
	path *kern.Path
}

// checkTx probes dev and decides what sending out of it takes, refusing a
// device that cannot take what the sender sends (planTx). Senders call it
// before looking up anything else about dev, so that a device they cannot
// use is the first thing said about it.
func checkTx(dev, mode string, xdp, zeroCopy bool) (*netdev.Facts, txPlan, error) {
	f, err := netdev.Probe(dev)
	var nf *netdev.NoInterfaceError
	switch {
	case errors.As(err, &nf):
		return nil, txPlan{}, fmt.Errorf("-i: %w (list them with: ip link)", err)
	case err != nil:
		return nil, txPlan{}, err
	}
	plan, err := planTx(f, mode, xdp, zeroCopy)
	return f, plan, err
}

// setupTx carries out what checkTx decided for device f: says its note
// and attaches the helper where it is needed; say prints what it did.
// Close the helper at the end of the run.
func setupTx(f *netdev.Facts, plan txPlan, say func(string)) (*txHelper, error) {
	if plan.note != "" {
		say(plan.note)
	}
	h := &txHelper{}
	if !plan.attach {
		return h, nil
	}
	dev := f.Name
	var err error
	h.path, err = kern.Open(kern.Config{Action: kern.Pass, Interface: dev, Hook: kern.XDP})
	var fe *netdev.ForeignXDPError
	switch {
	case errors.As(err, &fe):
		return nil, fmt.Errorf("attach XDP_PASS to %s for transmit: %w: it is not replaced; detach it (ip link set dev %s xdp off) or give --xdp-pass never", dev, err, dev)
	case err != nil:
		return nil, fmt.Errorf("attach XDP_PASS to %s for transmit: %w (--xdp-pass never sends without it)", dev, err)
	}
	say(fmt.Sprintf("XDP_PASS attached to %s (native mode, bpf_link) for the run: %s (--xdp-pass never does without it)", dev, whyPass(f)))
	return h, nil
}

func whyPass(f *netdev.Facts) string {
	if f.Plan().Transmit == netdev.TxNeedsProgram {
		return "its driver transmits XDP frames only while an XDP program is attached"
	}
	return "asked for with --xdp-pass always"
}

// Attached says whether the helper is attached.
func (h *txHelper) Attached() bool { return h != nil && h.path != nil }

// Close detaches the helper.
func (h *txHelper) Close() error {
	if h == nil || h.path == nil {
		return nil
	}
	return h.path.Close()
}

// sayTo prints helper notes as text lines on w, or with JSON on stderr
// (the summary's xdp_pass field says whether it was attached).
func sayTo(w, stderr io.Writer, json bool) func(string) {
	return func(s string) {
		if json {
			fmt.Fprintln(stderr, "xdpeng: note: "+s)
			return
		}
		fmt.Fprintln(w, s)
	}
}

package main

// xdpeng probe: what a device has for XDP and AF_XDP, and what xdpeng's
// commands will do there (netdev.Probe, Facts.Plan, Facts.MTULimit).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/engine"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/kfeat"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

func init() { addCommand(newProbeCmd()) }

func newProbeCmd() *cobra.Command {
	var iface string
	var asJSON bool
	c := &cobra.Command{
		Use:   "probe [-i DEV] [--json]",
		Short: "Show what the kernel grants and what a device has for XDP and AF_XDP, and what xdpeng will do there",
		Long: `probe tries each kernel feature xdpeng uses and says whether the kernel
grants it, with the kernel's answer where it refuses, what needs the feature
and what works without it: live frames, AF_XDP sockets, BPF_PROG_TEST_RUN,
bpf_xdp_adjust_meta, the XDP RX metadata kfuncs, multi-buffer XDP programs,
busy polling, bpf_link for XDP, TCX and devmap redirect. It tries rather
than reads the version: features are backported, and refused by hardened
kernels and security policies. The links are tried on the loopback device of
a network namespace of probe's own.

With -i DEV it first reads what the kernel says about DEV and prints it with
what xdpeng's commands will do there:

  driver, MTU and the MTU limits the device takes; queue counts as ethtool -l
  shows them (current and the most the driver allows);
  the XDP features of the kernel's netdev family (Linux 6.3 and later): basic
  (native XDP), redirect, ndo-xmit (takes redirected frames), xsk-zerocopy,
  rx-sg and ndo-xmit-sg (multi-buffer), and the zero-copy maximum segments;
  the XDP program attached, if any, and who holds it;
  each receive queue's NAPI (netdev queue-get, Linux 6.8), its interrupt, its
  kthread in threaded mode, its own settings (defer-hard-irqs,
  gro-flush-timeout, irq-suspend-timeout: Linux 6.13; what --busy-poll sets)
  and whether an AF_XDP socket is bound to the queue (Linux 6.14);
  what xdpeng does there: native or generic XDP (the default of every command
  when -N/-S is not given), copy or zero-copy, whether transmitting into the
  device needs a helper program (gen and txonly attach xdp_pass then) or the
  veth peer's help, and the largest MTU each UMEM frame size takes, in one
  frame (what the AF_XDP commands take by default) and with multi-buffer
  (what -F takes, where the device has rx-sg).

It changes nothing. Without root the attached program's name and holder are
not visible. --json adds the host's environment (env: kernel, CPU model,
mitigations, BPF JIT), which compare --dut records of a DUT.`,
		Example: `  xdpeng probe -i eth0
  ip netns exec xdpeng-dut xdpeng probe -i dut0 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iface == "" {
				if err := needRoot(typed(cmd), privilege.BPF); err != nil {
					return err
				}
				k := kernelReport()
				if asJSON {
					writeJSON(cmd.OutOrStdout(), struct {
						Kernel []probeFeature `json:"kernel_features"`
					}{k})
					return nil
				}
				kernelText(cmd.OutOrStdout(), k)
				return nil
			}
			f, err := netdev.Probe(iface)
			var nf *netdev.NoInterfaceError
			if errors.As(err, &nf) {
				return fmt.Errorf("-i: %w (list them with: ip link)", err)
			}
			if err != nil {
				return err
			}
			r := probeReport(f)
			if os.Geteuid() == 0 {
				r.Kernel = kernelReport()
			}
			if asJSON {
				env := labenv.Collect()
				r.Env = &env
				writeJSON(cmd.OutOrStdout(), r)
				return nil
			}
			r.text(cmd.OutOrStdout())
			if r.Kernel != nil {
				kernelText(cmd.OutOrStdout(), r.Kernel)
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), "kernel features: tried as root only (sudo xdpeng probe)")
			}
			return nil
		},
	}
	c.Flags().StringVarP(&iface, "interface", "i", "", "device to probe (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

// probeJSON is probe's output.
type probeJSON struct {
	Interface string `json:"interface"`
	Index     int    `json:"index"`
	Driver    string `json:"driver"` // "" where the device reports none (lo)
	MAC       string `json:"mac"`
	MTU       int    `json:"mtu"`
	MinMTU    int    `json:"min_mtu"`
	MaxMTU    int    `json:"max_mtu"` // 0: the driver sets no maximum
	RxQueues  int    `json:"rx_queues"`
	TxQueues  int    `json:"tx_queues"`
	// Channels are ethtool -l's; null where the driver reports none.
	Channels *probeChannels `json:"channels"`
	// XDPFeatures are null where the kernel does not report them.
	XDPFeatures []string      `json:"xdp_features"`
	ZCMaxSegs   uint32        `json:"xdp_zc_max_segs"`
	RxMetadata  []string      `json:"xdp_rx_metadata,omitempty"`
	XSKFeatures []string      `json:"xsk_features,omitempty"`
	XDPProgram  *probeProgram `json:"xdp_program"`
	// NAPIs are the receive queues' NAPI instances, as netdev queue-get
	// and napi-get tell them; NAPINote says why there are none, or what
	// is missing.
	NAPIs     []probeNAPI `json:"rx_queue_napis"`
	NAPINote  string      `json:"rx_queue_napis_note,omitempty"`
	Plan      probePlan   `json:"plan"`
	MTULimits []probeMTU  `json:"mtu_limits"`
	Root      bool        `json:"root"`
	// Kernel is what the kernel granted of each feature tried (as root;
	// null otherwise).
	Kernel []probeFeature `json:"kernel_features"`
	// Env is the host's environment (kernel, CPU, mitigations, BPF JIT),
	// in JSON only: what compare --dut records of a DUT on another host.
	Env *labenv.Env `json:"env,omitempty"`
}

// probeNAPI is one receive queue and the NAPI instance that serves it.
type probeNAPI struct {
	Queue  int    `json:"queue"`
	NAPIID uint32 `json:"napi_id"` // 0: no NAPI linked to the queue
	IRQ    int    `json:"irq,omitempty"`
	// Thread is the pid of the NAPI's kthread in threaded mode.
	Thread int `json:"thread,omitempty"`
	// Threaded is the NAPI's threaded mode, where the kernel says
	// (disabled, enabled or busy-poll).
	Threaded string `json:"threaded,omitempty"`
	// Settings are the NAPI's own (Linux 6.13): nil before.
	Settings *probeNAPISettings `json:"settings,omitempty"`
	// XSK reports an AF_XDP socket bound to the queue (Linux 6.14 says).
	XSK bool `json:"xsk"`
}

type probeNAPISettings struct {
	DeferHardIRQs       uint32 `json:"defer_hard_irqs"`
	GROFlushTimeoutNs   int64  `json:"gro_flush_timeout_ns"`
	IRQSuspendTimeoutNs int64  `json:"irq_suspend_timeout_ns"`
}

// probeNAPIs asks the kernel which NAPI serves each of the first rx
// receive queues of the device with index ifindex, and what each is.
func probeNAPIs(ifindex, rx int) ([]probeNAPI, string) {
	var out []probeNAPI
	unlinked := 0
	for q := range rx {
		rq, err := netdev.RxQueueInfo(ifindex, q)
		if err != nil {
			return out, err.Error()
		}
		n := probeNAPI{Queue: q, NAPIID: rq.NAPIID, XSK: rq.XSK}
		if rq.NAPIID == 0 {
			unlinked++
		} else {
			info, c, err := netdev.NAPIByID(rq.NAPIID)
			if err != nil {
				return out, err.Error()
			}
			n.IRQ, n.Thread = info.IRQ, info.PID
			if info.ThreadedKnown {
				n.Threaded = engine.NAPIThreaded(info.Threaded).String()
			}
			if c != nil {
				n.Settings = &probeNAPISettings{DeferHardIRQs: c.DeferHardIRQs, GROFlushTimeoutNs: c.GROFlushTimeout.Nanoseconds(), IRQSuspendTimeoutNs: c.IRQSuspendTimeout.Nanoseconds()}
			}
		}
		out = append(out, n)
	}
	if unlinked > 0 {
		return out, fmt.Sprintf("the driver links no NAPI to %d of the %d receive queues (veth does not): busy polling finds nothing to poll there", unlinked, rx)
	}
	return out, ""
}

type probeChannels struct {
	Combined    int `json:"combined"`
	Rx          int `json:"rx"`
	Tx          int `json:"tx"`
	Other       int `json:"other"`
	MaxCombined int `json:"max_combined"`
	MaxRx       int `json:"max_rx"`
	MaxTx       int `json:"max_tx"`
	MaxOther    int `json:"max_other"`
}

type probeProgram struct {
	ID        uint32 `json:"id"`
	Mode      string `json:"mode"`
	Name      string `json:"name,omitempty"`
	LinkID    uint32 `json:"link_id,omitempty"` // 0: attached through netlink
	OwnerPID  int    `json:"owner_pid,omitempty"`
	OwnerComm string `json:"owner_comm,omitempty"`
}

type probePlan struct {
	FeaturesKnown bool   `json:"features_known"`
	XDPMode       string `json:"xdp_mode"`  // native, generic
	BindMode      string `json:"bind_mode"` // zero-copy, copy
	// MultiBuffer says the device can receive a frame in several UMEM
	// frames (rx-sg): what -F asks for; without -F a frame must fit in one.
	MultiBuffer bool `json:"multi_buffer"`
	ZCMaxSegs   int  `json:"zero_copy_max_segs"`
	// Transmit is what sending XDP frames into the device needs: ready,
	// needs-program, needs-peer, unsupported or unknown.
	Transmit string `json:"transmit"`
	// TxHelper says gen and txonly (zero-copy) attach xdp_pass first.
	TxHelper bool   `json:"tx_helper"`
	Note     string `json:"transmit_note"`
}

type probeMTU struct {
	FrameSize int    `json:"frame_size"`
	Mode      string `json:"mode"` // copy, zero-copy
	// Single is the largest MTU received whole in one frame, MultiBuffer
	// with a packet spread over several (0: not in this mode).
	Single      int  `json:"single"`
	MultiBuffer int  `json:"multi_buffer"`
	Fits        bool `json:"fits_mtu"` // the current MTU fits in one frame
}

// probeReport turns the facts into probe's report.
func probeReport(f *netdev.Facts) probeJSON {
	p := f.Plan()
	r := probeJSON{
		Interface: f.Name, Index: f.Index, Driver: f.Driver, MAC: f.MAC.String(), MTU: f.MTU,
		MinMTU: f.MinMTU, MaxMTU: f.MaxMTU, RxQueues: f.RxQueues, TxQueues: f.TxQueues,
		Root: os.Geteuid() == 0,
	}
	if c := f.Channels; c != nil {
		r.Channels = &probeChannels{Combined: c.Combined, Rx: c.Rx, Tx: c.Tx, Other: c.Other,
			MaxCombined: c.MaxCombined, MaxRx: c.MaxRx, MaxTx: c.MaxTx, MaxOther: c.MaxOther}
	}
	if x := f.Features; x != nil {
		r.XDPFeatures = append([]string{}, x.XDP.Names()...)
		r.ZCMaxSegs = x.ZCMaxSegs
		r.RxMetadata = x.RxMetadata.Names()
		r.XSKFeatures = x.XSK.Names()
	}
	if a := f.XDP; a.ProgID != 0 {
		r.XDPProgram = &probeProgram{ID: a.ProgID, Mode: a.Mode, Name: a.ProgName, LinkID: a.LinkID, OwnerPID: a.OwnerPID, OwnerComm: a.OwnerComm}
	}
	r.NAPIs, r.NAPINote = probeNAPIs(f.Index, f.RxQueues)
	r.Plan = probePlan{
		FeaturesKnown: p.FeaturesKnown, XDPMode: p.XDPMode, BindMode: bindModeName(p.ZeroCopy),
		MultiBuffer: p.MultiBuffer, ZCMaxSegs: p.ZeroCopyMaxSegs, Transmit: p.Transmit.String(),
		TxHelper: p.Transmit == netdev.TxNeedsProgram, Note: transmitNote(f.Name, p.Transmit),
	}
	modes := []bool{false}
	if p.ZeroCopy {
		modes = append(modes, true)
	}
	for _, zc := range modes {
		for _, fs := range engine.FrameSizes() {
			l := f.MTULimit(int(fs), 0, zc)
			r.MTULimits = append(r.MTULimits, probeMTU{FrameSize: int(fs), Mode: bindModeName(zc), Single: l.Single,
				MultiBuffer: l.MultiBuffer, Fits: f.MTU <= l.Single})
		}
	}
	return r
}

// napiText prints the receive queues' NAPIs, one line each.
func napiText(w io.Writer, napis []probeNAPI, note string) {
	if !slices.ContainsFunc(napis, func(n probeNAPI) bool { return n.NAPIID != 0 }) {
		napis = nil // none linked: the note says so
	}
	if len(napis) > 0 {
		fmt.Fprintln(w, "  receive queues and their NAPIs (netdev queue-get, napi-get):")
	}
	for _, n := range napis {
		if n.NAPIID == 0 {
			fmt.Fprintf(w, "    queue %d: no NAPI linked\n", n.Queue)
			continue
		}
		parts := []string{fmt.Sprintf("NAPI %d", n.NAPIID)}
		if n.IRQ > 0 {
			parts = append(parts, fmt.Sprintf("IRQ %d", n.IRQ))
		} else {
			parts = append(parts, "no IRQ")
		}
		switch {
		case n.Threaded == engine.NAPIThreadedBusyPoll.String():
			parts = append(parts, fmt.Sprintf("threaded busy polling (pid %d)", n.Thread))
		case n.Thread > 0:
			parts = append(parts, fmt.Sprintf("threaded (pid %d)", n.Thread))
		default:
			parts = append(parts, "softirq")
		}
		if s := n.Settings; s != nil {
			parts = append(parts, fmt.Sprintf("defer-hard-irqs %d, gro-flush-timeout %v, irq-suspend-timeout %v",
				s.DeferHardIRQs, time.Duration(s.GROFlushTimeoutNs), time.Duration(s.IRQSuspendTimeoutNs)))
		}
		if n.XSK {
			parts = append(parts, "an AF_XDP socket bound")
		}
		fmt.Fprintf(w, "    queue %d: %s\n", n.Queue, strings.Join(parts, ", "))
	}
	if note != "" {
		fmt.Fprintf(w, "  NAPIs: %s\n", note)
	}
}

// metadataNote lists the metadata features names and says what they give
// (have), or what their absence means (none).
func metadataNote(names []string, have, none string) string {
	if len(names) == 0 {
		return "none: " + none
	}
	return strings.Join(names, ", ") + ": " + have
}

// transmitNote says what sending XDP frames into dev needs.
func transmitNote(dev string, t netdev.TxNeed) string {
	switch t {
	case netdev.TxReady:
		return "takes XDP frames now (ndo-xmit)"
	case netdev.TxNeedsProgram:
		return "the driver transmits XDP frames only while an XDP program is attached: gen, and txonly in zero-copy mode, attach xdp_pass to " + dev + " for the run (--xdp-pass never turns that off)"
	case netdev.TxNeedsPeer:
		return "a veth takes XDP frames only while its peer has an XDP program attached or GRO on: turn GRO on at the peer (ethtool -K PEER gro on) or attach a program there (xdpeng kern pass -i PEER)"
	case netdev.TxUnsupported:
		return "takes no XDP frames (no ndo_xdp_xmit): gen cannot send out of it; txonly in copy mode can"
	}
	return "the kernel does not report XDP features (before Linux 6.3): only trying tells"
}

func (r probeJSON) text(w io.Writer) {
	mac := r.MAC
	if mac == "" {
		mac = "none"
	}
	drv := "driver " + r.Driver
	if r.Driver == "" {
		drv = driverLabel(r.Driver)
	}
	fmt.Fprintf(w, "%s: %s, index %d, MAC %s\n", r.Interface, drv, r.Index, mac)
	maxMTU := "no maximum"
	if r.MaxMTU > 0 {
		maxMTU = fmt.Sprintf("at most %d", r.MaxMTU)
	}
	fmt.Fprintf(w, "  MTU %d (the device takes at least %d, %s)\n", r.MTU, r.MinMTU, maxMTU)
	if c := r.Channels; c != nil {
		fmt.Fprintf(w, "  queues: %d rx, %d tx; channels (ethtool -l, current/max): combined %d/%d, rx %d/%d, tx %d/%d, other %d/%d\n",
			r.RxQueues, r.TxQueues, c.Combined, c.MaxCombined, c.Rx, c.MaxRx, c.Tx, c.MaxTx, c.Other, c.MaxOther)
	} else {
		fmt.Fprintf(w, "  queues: %d rx, %d tx (the driver reports no channels)\n", r.RxQueues, r.TxQueues)
	}
	if r.XDPFeatures == nil {
		fmt.Fprintln(w, "  XDP features: not reported by this kernel (before Linux 6.3)")
	} else {
		feat := "none"
		if len(r.XDPFeatures) > 0 {
			feat = strings.Join(r.XDPFeatures, ", ")
		}
		fmt.Fprintf(w, "  XDP features: %s", feat)
		if r.ZCMaxSegs > 0 {
			fmt.Fprintf(w, " (zero-copy: up to %d segments a packet)", r.ZCMaxSegs)
		}
		fmt.Fprintln(w)
	}
	if r.XDPFeatures != nil {
		fmt.Fprintf(w, "  XDP receive metadata: %s\n", metadataNote(r.RxMetadata,
			"a handler gets them in native mode (engine.Config.RxMetadata; count --by rxhash asks for the hash)",
			"none reported (kernels before 6.8 report none): on 6.8 and later engine.Config.RxMetadata is refused here"))
		fmt.Fprintf(w, "  AF_XDP transmit metadata: %s\n", metadataNote(r.XSKFeatures,
			"what the driver does for a zero-copy socket's per-frame requests (txonly -z --tx-checksum needs tx-checksum); copy mode does checksums and completion timestamps in software",
			"none reported (before 6.8: none known) for zero-copy sockets; copy mode does checksums and completion timestamps in software"))
	}
	switch a := r.XDPProgram; {
	case a == nil:
		fmt.Fprintln(w, "  XDP program: none")
	default:
		who := "attached through netlink (ip link, libxdp): it stays until detached"
		if a.LinkID != 0 {
			who = fmt.Sprintf("held by bpf_link %d", a.LinkID)
			if a.OwnerPID != 0 {
				who += fmt.Sprintf(" of pid %d (%s)", a.OwnerPID, a.OwnerComm)
			}
		} else if !r.Root {
			who = "its holder is visible to root only"
		}
		name := a.Name
		if name == "" {
			name = "?"
		}
		fmt.Fprintf(w, "  XDP program: id %d %s, %s mode, %s\n", a.ID, name, a.Mode, who)
	}
	napiText(w, r.NAPIs, r.NAPINote)
	p := r.Plan
	fmt.Fprintf(w, "xdpeng here: XDP in %s mode, AF_XDP %s", p.XDPMode, p.BindMode)
	if p.MultiBuffer {
		fmt.Fprint(w, "; multi-buffer receive (rx-sg) with -F, not by default")
	}
	fmt.Fprintf(w, "\n  transmit: %s: %s\n", p.Transmit, p.Note)
	fmt.Fprintln(w, "  largest MTU received whole, per UMEM frame size (-f):")
	for _, m := range r.MTULimits {
		mb := "no multi-buffer"
		if m.MultiBuffer > 0 {
			mb = fmt.Sprintf("%d with -F (multi-buffer)", m.MultiBuffer)
		}
		fits := ""
		switch {
		case !m.Fits && r.MTU <= m.MultiBuffer:
			fits = fmt.Sprintf(" (MTU %d does not fit in one: only with -F)", r.MTU)
		case !m.Fits:
			fits = fmt.Sprintf(" (MTU %d does not fit)", r.MTU)
		}
		fmt.Fprintf(w, "    %4d-byte frames, %-9s %5d in one frame, %s%s\n", m.FrameSize, m.Mode+":", m.Single, mb, fits)
	}
}

// probeFeature is one kernel feature tried (kfeat).
type probeFeature struct {
	Name    string `json:"name"`
	Granted bool   `json:"granted"`
	Answer  string `json:"answer,omitempty"` // the kernel's refusal
	Tried   string `json:"tried"`
	Needs   string `json:"needs"`
	Instead string `json:"instead"`
}

func kernelReport() []probeFeature {
	var out []probeFeature
	for _, f := range kfeat.Probe() {
		p := probeFeature{Name: f.Name, Granted: f.Granted(), Tried: f.Tried, Needs: f.Needs, Instead: f.Instead}
		if f.Err != nil {
			p.Answer = f.Err.Error()
		}
		out = append(out, p)
	}
	return out
}

func kernelText(w io.Writer, fs []probeFeature) {
	fmt.Fprintln(w, "kernel features (tried, not read off the version):")
	for _, f := range fs {
		if f.Granted {
			fmt.Fprintf(w, "  %-27s granted\n", f.Name)
			continue
		}
		fmt.Fprintf(w, "  %-27s REFUSED: %s\n", f.Name, f.Answer)
		fmt.Fprintf(w, "  %-27s   tried: %s; needed by: %s; instead: %s\n", "", f.Tried, f.Needs, f.Instead)
	}
}

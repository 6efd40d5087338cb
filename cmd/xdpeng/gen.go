package main

// xdpeng gen: the live-frames generator (internal/lab/gen), flags and printing.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/cmd/internal/units"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

func init() { addCommand(newGenCmd()) }

type genFlags struct {
	frameFlags
	iface            string
	count            uint64
	duration         time.Duration
	rate             uint64
	ports            int
	threads          int
	cpus             string
	srcIP, dstIP     string
	srcPort, dstPort uint16
	srcMAC, dstMAC   string
	interval         time.Duration
	json             bool
	quiet            bool
	xdpPass          string
	method           string
	copies           int
	watch            watchFlags // --metrics (watch.go)
}

// genFlagOf maps gen.Config fields to the flag that sets them, so that a
// validation error names what the user typed.
var genFlagOf = map[string]string{
	"Frame.Size": "--size", "Frame.VLAN": "-J/--vlan", "Frame.SrcMAC": "-H/--src-mac", "Frame.DstMAC": "-G/--dst-mac",
	"Frame.SrcIP": "--src-ip", "Frame.DstIP": "--dst-ip", "Ports": "--ports", "Threads": "--threads",
	"CPUs": "--cpus", "Rate": "--rate", "Duration": "--duration", "Interval": "--interval",
	"Copies": "--copies",
}

func newGenCmd() *cobra.Command {
	f := &genFlags{}
	cmd := &cobra.Command{
		Use:   "gen -i DEV (--count N | --duration D)",
		Short: "Send UDP frames at line rate as XDP frames (live frames, like xdp-trafficgen, or a relay)",
		Long: `gen repeats one UDP frame out of DEV as XDP frames: the device gets each by
its ndo_xdp_xmit, as from XDP_REDIRECT. A run needs --count or --duration.
How the frames are made is --method:

  live    BPF_PROG_TEST_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES,
          Linux 5.18+): the kernel copies the frame itself, no socket or skb
          involved. The fastest.
  xsk     AF_XDP transmit (copy mode) into a relay: a veth pair in a network
          namespace of gen's own (gone when gen ends, kill -9 too) whose far
          end runs gen's XDP program, which redirects each frame to DEV
          through a devmap. Each frame is an skb on the way in, which veth
          copies into an XDP frame: it costs the sending CPU more than live
          frames, and DEV's receiver the same.
  packet  AF_PACKET (sendmmsg, qdisc bypass, as trafgen) into the same
          relay; needs no AF_XDP.
  auto    (default) live where the kernel grants it, else xsk, else packet:
          gen says which, and why, before it starts.

With xsk and packet the relay sends each frame --copies times (64 unless
told, the most): the kernel copies it (a devmap broadcast: a page and a copy
of the frame each, no skb), which costs the sending CPU far less than a
frame from the sender does, so the sender makes one frame in 64. The copies
of a frame are alike (one destination port of --ports) and leave back to
back; --copies 1 sends every frame as the sender made it.

Every method counts the frames its program redirected to DEV (sent), paces
to --rate and stops on --count or --duration.

Addresses are from 198.18.0.0/15, the range RFC 2544 reserves for benchmarking,
so that generated traffic cannot reach a real service.

What the device needs before it takes XDP frames comes from its XDP features
(xdpeng probe -i DEV): many drivers (i40e, ice, ixgbe, igb, igc, bnxt, ena,
virtio_net, ...) take them only while an XDP program is attached, and gen
then attaches XDP_PASS to DEV for the run (a bpf_link, removed at exit, never
replacing another program) and says so (--xdp-pass never turns that off,
always forces it). A veth passes them on only while its peer has an XDP
program attached or GRO on: gen refuses one whose peer has neither, as it
does a device without XDP transmit (lo, most wifi).

"sent" counts frames the program redirected to DEV; on a veth, gen also reads
the device's counters and says how many it accepted (tx_queue_N_xdp_xmit),
refused (tx_queue_N_xdp_xmit_errors, e.g. the peer's ring was full) and how
many were lost before the driver (device down, peer without XDP).`,
		Example: `  xdpeng gen -i gen0 --count 10000000
  xdpeng gen -i gen0 -d 10s --threads 2 --ports 16 --size 128
  xdpeng gen -i gen0 -d 5s --rate 1000000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGen(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.iface, "interface", "i", "", "device to send out of (required)")
	fs.Uint64VarP(&f.count, "count", "C", 0, "frames to send in total, split exactly across threads")
	secondsVarP(fs, &f.duration, "duration", "d", 0, "stop after this long (seconds, or a duration like 500ms)")
	fs.Uint64Var(&f.rate, "rate", 0, "upper bound in frames per second over all threads (default: as fast as possible)")
	fs.IntVar(&f.ports, "ports", 1, "cycle the UDP destination port over this many values from --dst-port")
	fs.IntVar(&f.threads, "threads", 1, "sending threads, one per CPU")
	fs.StringVar(&f.cpus, "cpus", "", "CPU of each thread, in thread order, e.g. 0 or 1,0 (default: the first --threads online CPUs)")
	fs.StringVar(&f.srcIP, "src-ip", "", "source address (default: DEV's address in 198.18.0.0/15, else 198.18.0.1)")
	fs.StringVar(&f.dstIP, "dst-ip", "", "destination address, in 198.18.0.0/15, or for IPv6 frames 2001:2::/48 (RFC 5180; with an IPv6 --src-ip) (default: the other host of the source's test-bed link, 198.18.K.1 <-> .2)")
	fs.Uint16Var(&f.srcPort, "src-port", 1234, "UDP source port")
	fs.Uint16Var(&f.dstPort, "dst-port", 9, "UDP destination port (9 is discard), the first of --ports")
	fs.StringVarP(&f.srcMAC, "src-mac", "H", "", "source MAC (default: DEV's)")
	fs.StringVarP(&f.dstMAC, "dst-mac", "G", "", "destination MAC (default: the veth peer's, else the neighbour entry of --dst-ip)")
	f.frameFlags.register(fs)
	intervalFlags(fs, &f.interval, "progress interval")
	fs.BoolVar(&f.json, "json", false, "print one JSON object per line")
	fs.BoolVarP(&f.quiet, "quiet", "Q", false, "no progress lines: only the summary (and link changes)")
	xdpPassFlag(fs, &f.xdpPass)
	fs.StringVar(&f.method, "method", "auto", "how frames are made: live, xsk, packet or auto (see above)")
	fs.IntVar(&f.copies, "copies", 0, fmt.Sprintf("xsk, packet: the relay sends each frame this many times, 1-%d (see above; default %d)", gen.MaxCopies, gen.DefaultCopies))
	f.watch.registerMetrics(fs)
	return cmd
}

func runGen(cmd *cobra.Command, f *genFlags) error {
	if f.iface == "" {
		return cliFlagError{errors.New("no interface given: use -i DEV")}
	}
	if f.duration < 0 {
		return fmt.Errorf("-d/--duration %v: must not be negative", f.duration)
	}
	if f.count == 0 && f.duration == 0 {
		return cliFlagError{errors.New("gen needs a bound: give --count N or --duration D (it never sends without one)")}
	}
	if f.interval <= 0 {
		return fmt.Errorf("-n/--interval %v: must be positive", f.interval)
	}
	if err := checkXDPPass(f.xdpPass); err != nil {
		return err
	}
	if err := f.watch.check(); err != nil {
		return err
	}
	method, err := gen.ParseMethod(f.method)
	if err != nil {
		return fmt.Errorf("--method: %w", err)
	}
	cfg := gen.Config{
		Ports: f.ports, Count: f.count, Duration: f.duration, Rate: f.rate, Threads: f.threads, Interval: f.interval,
		Frame: packet.UDPConfig{SrcPort: f.srcPort, DstPort: f.dstPort}, Method: method, Copies: f.copies,
	}
	// The exact bounds depend on the frame (IPv6, VLAN) and are checked
	// again by Validate; this catches the obvious before any lookup.
	if err := f.frameFlags.apply(&cfg.Frame, false); err != nil {
		return err
	}
	if f.ports < 1 {
		return fmt.Errorf("--ports %d: need at least 1", f.ports)
	}
	if f.threads < 1 {
		return fmt.Errorf("--threads %d: need at least 1", f.threads)
	}
	if f.cpus != "" {
		cpus, err := cpuset.ParseList(f.cpus, "CPU")
		if err != nil {
			return fmt.Errorf("--cpus: %w", err)
		}
		cfg.CPUs = cpus
		if !cmd.Flags().Changed("threads") {
			cfg.Threads = len(cpus)
		}
	}
	addrs := addrFlags{srcIP: f.srcIP, dstIP: f.dstIP, srcMAC: f.srcMAC, dstMAC: f.dstMAC}
	if err := addrs.parse(&cfg.Frame, "gen", true); err != nil {
		return err
	}
	if err := needRoot(typed(cmd), privilege.BPF); err != nil {
		return err
	}
	// Whether the device takes XDP frames at all comes first: addresses
	// are no use for a device gen cannot send out of.
	facts, txPlan, err := checkTx(f.iface, f.xdpPass, true, false)
	if err != nil {
		return err
	}
	var info *netdev.Info
	if cfg.Frame, info, err = resolveAddrs(f.iface, cfg.Frame); err != nil {
		return err
	}
	cfg.Ifindex = info.Index
	if err := cfg.Validate(); err != nil {
		return flagError(err)
	}
	if cfg.Method, err = chooseGenMethod(cmd.ErrOrStderr(), method, f.json); err != nil {
		return err
	}

	ctx, stop := signalContext()
	defer stop()
	w := &lockedWriter{w: cmd.OutOrStdout()} // the link watch prints too
	p := &genPrinter{w: w, json: f.json, quiet: f.quiet, iface: info.Name, size: cfg.Frame.Size, rate: f.rate}
	helper, err := setupTx(facts, txPlan, sayTo(w, cmd.ErrOrStderr(), f.json))
	if err != nil {
		return err
	}
	defer helper.Close()
	p.xdpPass = helper.Attached()
	obs, err := f.watch.startWatch(info.Name)
	if err != nil {
		return err
	}
	defer obs.close()
	// gen.Run reads its counters on its own thread, every interval: the
	// metrics show the last of those reads.
	var last atomic.Pointer[gen.Stats]
	last.Store(&gen.Stats{})
	if err := obs.serve(&metrics.Gen{Interface: info.Name, Stats: func() gen.Stats { return *last.Load() }}); err != nil {
		return err
	}
	if !f.json {
		fmt.Fprintf(p.w, "gen %s (method %s%s): %d-byte frames (%d bytes + FCS), UDP %s:%d -> %s:%d (%s)%s, %d port(s), %d thread(s) on CPU %s, count %s, rate %s\n",
			info.Name, cfg.Method, copiesText(cfg.CopiesFor(cfg.Method)), wireSize(cfg.Frame.Size), cfg.Frame.Size, cfg.Frame.SrcIP, cfg.Frame.SrcPort, cfg.Frame.DstIP, cfg.Frame.DstPort,
			cfg.Frame.DstMAC, frameExtras(cfg.Frame), cfg.Ports, cfg.Threads, cpuset.Format(cfg.CPUs), orUnbounded(cfg.Count), orUnbounded(cfg.Rate))
		obs.header(p.w)
	}
	watch, err := engine.WatchLinks(info.Name)
	if err != nil {
		return err
	}
	defer watch.Close()
	start := time.Now()
	lp := newLinkPrinter(w, f.json, "gen", func() time.Time { return start })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var gone error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case c, ok := <-watch.Changes():
				if !ok { // the watch failed: a device gone would go unnoticed
					gone = watch.Err()
					cancel()
					return
				}
				lp.change(c)
			case g := <-watch.Gone():
				gone = g
				cancel()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	s, err := gen.Run(ctx, cfg, func(s gen.Stats) {
		last.Store(&s)
		p.interval(s)
	})
	cancel()
	<-watched
	last.Store(&s)
	p.summary(s)
	obs.stopServing()
	if gone != nil {
		return lp.gone(gone)
	}
	if err != nil {
		return flagError(err)
	}
	return helper.Close()
}

// lockedWriter lets two goroutines print whole lines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// addrFlags are the address flags of gen and txonly, as typed.
type addrFlags struct{ srcIP, dstIP, srcMAC, dstMAC string }

// parse puts the addresses given into frame. A destination must lie in the
// ranges reserved for benchmarking (gen.CheckDst; the IPv6 one too if ipv6);
// who names the command in that refusal. It needs no device, so bad flags
// are refused before privilege is checked.
func (a addrFlags) parse(frame *packet.UDPConfig, who string, ipv6 bool) error {
	var err error
	if a.dstIP != "" {
		if frame.DstIP, err = netip.ParseAddr(a.dstIP); err != nil {
			return fmt.Errorf("--dst-ip %q is not an IP address", a.dstIP)
		}
		frame.DstIP = frame.DstIP.Unmap()
		if err := gen.CheckDst(frame.DstIP, ipv6); err != nil {
			return fmt.Errorf("--dst-ip %w: %s sends only there so that its traffic cannot hit a real service", err, who)
		}
	}
	if a.srcIP != "" {
		if frame.SrcIP, err = netip.ParseAddr(a.srcIP); err != nil {
			return fmt.Errorf("--src-ip %q is not an IP address", a.srcIP)
		}
		frame.SrcIP = frame.SrcIP.Unmap()
	}
	if a.srcMAC != "" {
		if frame.SrcMAC, err = parseMAC(a.srcMAC); err != nil {
			return fmt.Errorf("--src-mac: %w", err)
		}
	}
	if a.dstMAC != "" {
		if frame.DstMAC, err = parseMAC(a.dstMAC); err != nil {
			return fmt.Errorf("--dst-mac: %w", err)
		}
	}
	return nil
}

// resolveAddrs fills in the addresses frame was not given for frames sent
// out of iface (gen.ResolveAddrs, the one place that does it for gen and
// txonly), and names the flag that helps where it cannot.
func resolveAddrs(iface string, frame packet.UDPConfig) (packet.UDPConfig, *netdev.Info, error) {
	frame, info, err := gen.ResolveAddrs(iface, frame)
	var nf *netdev.NoInterfaceError
	switch {
	case errors.As(err, &nf):
		return frame, nil, deviceFlag(err)
	case errors.Is(err, netdev.ErrNoDstMAC):
		return frame, nil, fmt.Errorf("%w: give the receiver's address with --dst-mac", err)
	case err == nil && len(frame.SrcMAC) == 0:
		return frame, nil, fmt.Errorf("%s has no MAC address to send from: give one with -H/--src-mac", info.Name)
	}
	return frame, info, err
}

func parseMAC(s string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(s)
	if err != nil || len(mac) != 6 {
		return nil, fmt.Errorf("%q is not an Ethernet address like 02:00:00:00:00:01", s)
	}
	return mac, nil
}

// flagError rewrites a gen.FieldError to name the flag behind the field.
func flagError(err error) error {
	var fe *gen.FieldError
	if errors.As(err, &fe) {
		if flag, ok := genFlagOf[fe.Field]; ok {
			return fmt.Errorf("%s: %s", flag, fe.Msg)
		}
	}
	return err
}

// genPrinter prints progress and the summary, as text or JSON lines.
type genPrinter struct {
	w     io.Writer
	json  bool
	quiet bool
	iface string
	size  int    // without FCS
	rate  uint64 // --rate, 0 for none
	prev  gen.Stats
	// xdpPass says XDP_PASS was attached to the device for the run.
	xdpPass bool
}

type genThreadJSON struct {
	CPU       int     `json:"cpu"`
	TxPackets uint64  `json:"tx_packets"`
	TxPPS     float64 `json:"tx_pps,omitempty"`
	// DurationS is how long the thread sent (in the summary): its share
	// of --count may take it less than the run.
	DurationS float64 `json:"duration_s,omitempty"`
}

type genIntervalJSON struct {
	Type      string  `json:"type"`
	Mode      string  `json:"mode"`
	Interface string  `json:"interface"`
	TimeS     float64 `json:"t"`
	IntervalS float64 `json:"interval_s"`
	TxPackets uint64  `json:"tx_packets"`
	TxPPS     float64 `json:"tx_pps"`
	// TxBPS counts the frames' bits, as rx_bps and tx_bps of the other
	// commands do; TxWireBPS adds what each frame costs on an Ethernet
	// wire besides (FCS, preamble, inter-frame gap).
	TxBPS      float64         `json:"tx_bps"`
	TxWireBPS  float64         `json:"tx_wire_bps"`
	PerThread  []genThreadJSON `json:"per_thread"`
	XmitErrors *uint64         `json:"xmit_errors"`
}

type genSummaryJSON struct {
	Type        string          `json:"type"`
	Mode        string          `json:"mode"`
	Method      gen.Method      `json:"method"`
	Copies      int             `json:"copies"` // frames sent per frame the sender made
	Interface   string          `json:"interface"`
	FrameSize   int             `json:"frame_size"`  // with FCS, as --size
	FrameBytes  int             `json:"frame_bytes"` // without: what tx_bytes counts
	TxPackets   uint64          `json:"tx_packets"`
	TxBytes     uint64          `json:"tx_bytes"`
	DurationS   float64         `json:"duration_s"`
	TxPPS       float64         `json:"tx_pps"`
	PerThread   []genThreadJSON `json:"per_thread"`
	DeviceXmit  *uint64         `json:"device_xmit"`
	XmitErrors  *uint64         `json:"xmit_errors"`
	Unaccounted *uint64         `json:"lost_before_driver"`
	XDPPass     bool            `json:"xdp_pass"`
	// Rate is --rate (0: none); RateNote says, when the run sent
	// noticeably less than that, that it did and why.
	Rate     uint64 `json:"rate"`
	RateNote string `json:"rate_note,omitempty"`
}

func (p *genPrinter) interval(s gen.Stats) {
	dt := (s.Duration - p.prev.Duration).Seconds()
	if dt <= 0 || p.quiet {
		return
	}
	sent := counter.Sub(s.Sent, p.prev.Sent)
	pps := float64(sent) / dt
	threads := make([]genThreadJSON, len(s.PerThread))
	for i, t := range s.PerThread {
		var before uint64
		if i < len(p.prev.PerThread) {
			before = p.prev.PerThread[i].Sent
		}
		n := counter.Sub(t.Sent, before)
		threads[i] = genThreadJSON{CPU: t.CPU, TxPackets: n, TxPPS: float64(n) / dt}
	}
	var errs *uint64
	if s.DeviceCounters {
		e := counter.Sub(s.Errors, p.prev.Errors)
		errs = &e
	}
	if p.json {
		p.emit(genIntervalJSON{Type: "interval", Mode: "gen", Interface: p.iface, TimeS: s.Duration.Seconds(),
			IntervalS: dt, TxPackets: sent, TxPPS: pps, TxBPS: pps * float64(8*p.size), TxWireBPS: pps * float64(units.WireBits(uint64(p.size))),
			PerThread: threads, XmitErrors: errs})
	} else {
		var b strings.Builder
		fmt.Fprintf(&b, "%7.1fs  total %11s %11s", s.Duration.Seconds(), units.PPS(pps),
			units.BPS(pps*float64(units.WireBits(uint64(p.size)))))
		if errs != nil {
			fmt.Fprintf(&b, "  xmit errors %d", *errs)
		}
		if len(threads) > 1 {
			for _, t := range threads {
				fmt.Fprintf(&b, "  | cpu %d %s", t.CPU, units.PPS(t.TxPPS))
			}
		}
		fmt.Fprintln(p.w, b.String())
	}
	p.prev = s
}

func (p *genPrinter) summary(s gen.Stats) {
	secs := s.Duration.Seconds()
	threads := make([]genThreadJSON, len(s.PerThread))
	for i, t := range s.PerThread {
		took := t.Duration.Seconds()
		if took <= 0 {
			took = secs
		}
		threads[i] = genThreadJSON{CPU: t.CPU, TxPackets: t.Sent, DurationS: round3(took)}
		if took > 0 {
			threads[i].TxPPS = float64(t.Sent) / took
		}
	}
	var pps float64
	if secs > 0 {
		pps = float64(s.Sent) / secs
	}
	if p.json {
		out := genSummaryJSON{Type: "summary", Mode: "gen", Method: s.Method, Copies: s.Copies, Interface: p.iface, FrameSize: wireSize(p.size), FrameBytes: p.size,
			TxPackets: s.Sent, TxBytes: s.Bytes, DurationS: secs, TxPPS: pps, PerThread: threads, XDPPass: p.xdpPass,
			Rate: p.rate, RateNote: rateNote(p.rate, pps)}
		if s.DeviceCounters {
			xmit, errs, lost := s.Xmit, s.Errors, s.Unaccounted()
			out.DeviceXmit, out.XmitErrors, out.Unaccounted = &xmit, &errs, &lost
		}
		p.emit(out)
		return
	}
	fmt.Fprintf(p.w, "sent %d %d-byte frames (%d bytes each without FCS, %d bytes) in %.3fs: %s, %s on the wire (method %s%s)\n",
		s.Sent, wireSize(p.size), p.size, s.Bytes, secs, units.PPS(pps), units.BPS(pps*float64(units.WireBits(uint64(p.size)))), s.Method, copiesText(s.Copies))
	for _, t := range threads {
		fmt.Fprintf(p.w, "  cpu %d: %d frames in %.3fs, %s\n", t.CPU, t.TxPackets, t.DurationS, units.PPS(t.TxPPS))
	}
	if n := rateNote(p.rate, pps); n != "" {
		fmt.Fprintf(p.w, "  %s\n", n)
	}
	if s.DeviceCounters {
		fmt.Fprintf(p.w, "device %s: accepted %d, xmit errors %d, lost before the driver %d\n",
			p.iface, s.Xmit, s.Errors, s.Unaccounted())
	} else {
		fmt.Fprintf(p.w, "device %s has no XDP transmit counters: sent is what the program redirected to it\n", p.iface)
	}
}

func (p *genPrinter) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "xdpeng: encode JSON: %v\n", err)
		return
	}
	fmt.Fprintf(p.w, "%s\n", b)
}

// rateNote says, for a run asked to send at most asked frames per second
// that sent noticeably fewer (under 95%), that it did and what holds a
// sender back; "" otherwise. A rate is an upper bound: a sender that falls
// behind does not make up what it missed.
func rateNote(asked uint64, sent float64) string {
	if asked == 0 || sent >= 0.95*float64(asked) {
		return ""
	}
	return fmt.Sprintf("asked %s, sent %s (%.0f%%): the sending CPU was busy, or is too slow for this rate (--rate is an upper bound; more --threads on free CPUs send more)",
		units.PPS(float64(asked)), units.PPS(sent), 100*sent/float64(asked))
}

// chooseGenMethod resolves --method: auto to what the kernel grants, saying
// on w in one line (unless jsonOut: then only in the results) why live
// frames were passed over; a named method the kernel refuses is an error
// that names the one to use instead.
func chooseGenMethod(w io.Writer, m gen.Method, jsonOut bool) (gen.Method, error) {
	got, err := gen.ChooseMethod(m)
	if err != nil {
		alt, aerr := gen.ChooseMethod(gen.Auto)
		if aerr == nil && alt != m {
			return m, fmt.Errorf("%w: use --method %s (or auto)", err, alt)
		}
		return m, err
	}
	if m == gen.Auto && got != gen.Live && !jsonOut {
		fmt.Fprintf(w, "xdpeng: gen: %v; sending with --method %s instead\n", gen.ProbeLiveFrames(), got)
	}
	return got, nil
}

// copiesText names the relay's copies of each frame, where it makes more
// than one.
func copiesText(n int) string {
	if n > 1 {
		return fmt.Sprintf(", %d copies", n)
	}
	return ""
}

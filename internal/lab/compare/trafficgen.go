//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// XdpTrafficgen is xdp-trafficgen of xdp-tools, the generator a user of
// XDP reaches for.
const XdpTrafficgen = "xdp-trafficgen"

// Trafgen is netsniff-ng's trafgen, the AF_PACKET generator (TX ring,
// qdisc bypass) a user without XDP reaches for.
const Trafgen = "trafgen"

func init() {
	peerInstall[XdpTrafficgen] = "xdp-tools"
	peerInstall[Trafgen] = "Debian's netsniff-ng: apt install netsniff-ng"
}

// generator is a runner that is itself the generator of its trials
// (xdp-trafficgen, trafgen): trial runs generate instead of xdpeng's own generator,
// with the same configuration.
type generator interface {
	generate(ctx context.Context, g gen.Config) (gen.Stats, error)
}

// trafficgenRunner measures xdp-trafficgen udp as the generator: it sends
// from gen0 into XDP_DROP on dut0, the xdp-drop path's receiver, so that
// its row sits beside xdp-drop's, whose frames come from xdpeng's own
// generator. Sent is counted at gen0's device: veth's XDP transmits and
// the transmits it refused (tx_queue_N_xdp_xmit and _xmit_errors), which
// the tool's live frames all go through.
//
// With tool Trafgen it measures trafgen instead: one process on CPU 0
// sending the frame xdpeng's generator would (built by xdpeng, so its
// addresses are the bed's), through AF_PACKET with qdisc bypass as trafgen
// does by default. Its frames reach gen0 as skbs: sent is gen0's
// tx_packets and tx_dropped, the dropped counted as xmit_errors.
type trafficgenRunner struct {
	kernRunner
	name string
	tool string // XdpTrafficgen or Trafgen

	bin, version string
	cleanup      []string
}

func (r *trafficgenRunner) start(ctx context.Context) error {
	var err error
	if r.bin, err = findPeer(r.tool, r.e.peers); err != nil {
		return &SkipError{Path: r.name, Reason: err.Error()}
	}
	if r.tool == Trafgen {
		if r.version, err = trafgenVersion(ctx, r.bin); err != nil {
			return &SkipError{Path: r.name, Reason: err.Error()}
		}
	} else {
		if r.version, err = peerVersion(ctx, r.bin, "udp"); err != nil {
			return &SkipError{Path: r.name, Reason: err.Error()}
		}
		// xdp-trafficgen sends live frames only.
		if err := gen.ProbeLiveFrames(); err != nil {
			return &SkipError{Path: r.name, Reason: fmt.Sprintf("%s sends live frames only, and %v", XdpTrafficgen, err)}
		}
	}
	if r.e.bed == nil {
		return errors.New("the peer paths run on a test bed only")
	}
	return r.kernRunner.start(ctx)
}

// args is the tool's command line for frames like g's: UDP from gen0 to
// dut0's address and MAC, g's ports; xdp-trafficgen's -s counts the FCS.
func (r *trafficgenRunner) args(g gen.Config) []string {
	l := r.e.links[0]
	return []string{"udp", l.Gen, "-a", g.Frame.DstIP.String(), "-A", g.Frame.SrcIP.String(),
		"-m", g.Frame.DstMAC.String(), "-M", g.Frame.SrcMAC.String(),
		"-p", strconv.Itoa(int(g.Frame.DstPort)), "-P", strconv.Itoa(int(g.Frame.SrcPort)),
		"-s", strconv.Itoa(g.Frame.Size + 4)}
}

// generate runs the tool on the first generator CPU for g.Duration, ends it
// (SIGINT, then SIGKILL), removes what it left on gen0 and returns what
// gen0 counted.
func (r *trafficgenRunner) generate(ctx context.Context, g gen.Config) (st gen.Stats, err error) {
	if g.Rate > 0 {
		return st, fmt.Errorf("%s sends as fast as it can here: it is given no rate", r.tool)
	}
	args, ready := r.args(g), "Transmitting on"
	if r.tool == Trafgen {
		if g.CPUs[0] != 0 {
			return st, fmt.Errorf("%s runs its one process on CPU 0, and the generator's CPU is %d", Trafgen, g.CPUs[0])
		}
		conf, err := trafgenConf(g)
		if err != nil {
			return st, err
		}
		defer os.Remove(conf)
		// A count bounds it too, should its worker outlive xdpeng
		// (the parent dies with xdpeng, the worker it forked does
		// not): more than 20 Mpps for the run and its start.
		bound := uint64(20e6 * (g.Duration + time.Minute).Seconds())
		args, ready = []string{"--dev", r.e.links[0].Gen, "--conf", conf, "--cpus", "1", "--no-cpu-stats", "--num", strconv.FormatUint(bound, 10)}, "Running!"
	}
	gen0 := r.e.links[0]
	var before devHooks
	var base netdev.VethQueue
	var baseLink netdev.LinkStats
	if err := r.e.inGen(func() (err error) {
		if before, err = readDevHooks(gen0.GenIndex); err != nil {
			return err
		}
		if baseLink, err = netdev.ReadLinkStats(gen0.GenIndex); err != nil {
			return err
		}
		base, err = vethTotals(gen0.Gen)
		return err
	}); err != nil {
		return st, err
	}
	p := &peerProc{tool: r.tool, group: r.tool == Trafgen}
	t0 := time.Now()
	if err := p.start(r.e.genNS, g.CPUs[0], r.bin, args, ready); err != nil {
		return st, err
	}
	select {
	case <-p.out.ready:
		err = sleepCtx(ctx, g.Duration)
	case <-p.exited:
	case <-time.After(30 * time.Second):
		err = p.failed("did not start sending within 30s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	errs := []error{err, p.end(&r.cleanup)}
	st.Duration = time.Since(t0)
	errs = append(errs, r.e.inGen(func() error {
		removed, err := removeLeftovers(gen0.GenIndex, before, 0)
		if len(removed) > 0 {
			r.cleanup = append(r.cleanup, fmt.Sprintf("it left %s on %s: removed", strings.Join(removed, " and "), gen0.Gen))
		} else if err == nil {
			r.cleanup = append(r.cleanup, "nothing left on "+gen0.Gen)
		}
		if err != nil {
			return err
		}
		st.DeviceCounters = true
		if r.tool == Trafgen {
			cur, err := netdev.ReadLinkStats(gen0.GenIndex)
			st.Xmit = cur.TxPackets - baseLink.TxPackets
			st.Errors = cur.TxDropped - baseLink.TxDropped
			st.Sent = st.Xmit + st.Errors
			st.Bytes = st.Sent * uint64(g.Frame.Size)
			return err
		}
		cur, err := vethTotals(gen0.Gen)
		st.Xmit = cur.TxXDPXmit - base.TxXDPXmit
		st.Errors = cur.TxXDPXmitErrors - base.TxXDPXmitErrors
		st.Sent = st.Xmit + st.Errors
		st.Bytes = st.Sent * uint64(g.Frame.Size)
		return err
	}))
	return st, errors.Join(errs...)
}

// trafgenConf writes the frame of g (the first of its ports) as a trafgen
// configuration, in a file of its own the caller removes.
func trafgenConf(g gen.Config) (string, error) {
	buf := make([]byte, g.Frame.Size+64)
	n, err := packet.BuildUDP(buf, g.Frame)
	if err != nil {
		return "", fmt.Errorf("the frame for %s: %w", Trafgen, err)
	}
	var b strings.Builder
	b.WriteString("{\n")
	for i, c := range buf[:n] {
		fmt.Fprintf(&b, "0x%02x,", c)
		if i%16 == 15 {
			b.WriteByte('\n')
		}
	}
	b.WriteString("\n}\n")
	f, err := os.CreateTemp("", "xdpeng-trafgen-*.cfg")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// trafgenVersion reads trafgen's version ("trafgen 0.6.8 (...)").
func trafgenVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// It exits 1 after printing its version.
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	f := strings.Fields(first)
	if len(f) < 2 || f[0] != Trafgen {
		return "", fmt.Errorf("%s --version gave no version (%v): %s", bin, err, strings.TrimSpace(first))
	}
	return f[1], nil
}

func vethTotals(dev string) (netdev.VethQueue, error) {
	qs, err := netdev.VethQueueCounters(dev)
	if err != nil {
		return netdev.VethQueue{}, err
	}
	return netdev.SumVethQueues(qs), nil
}

func (r *trafficgenRunner) ended() string { return strings.Join(r.cleanup, "; ") }

func (r *trafficgenRunner) countedAt() string {
	if r.tool == Trafgen {
		return "the XDP_DROP program's per-CPU counter on dut0; sent: gen0's tx_packets and tx_dropped"
	}
	return "the XDP_DROP program's per-CPU counter on dut0; sent: gen0's XDP transmits (veth's tx_queue_N_xdp_xmit and _xmit_errors)"
}

func (r *trafficgenRunner) xdpMode() string {
	if r.tool == Trafgen {
		return fmt.Sprintf("%s (receiver); generator %s %s: %s, one process, qdisc bypass", r.kernRunner.xdpMode(), Trafgen, r.version, r.bin)
	}
	return fmt.Sprintf("%s (receiver); generator %s %s: %s udp", r.kernRunner.xdpMode(), XdpTrafficgen, r.version, r.bin)
}

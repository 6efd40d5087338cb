//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// XdpTrafficgen is xdp-trafficgen of xdp-tools, the generator a user of
// XDP reaches for.
const XdpTrafficgen = "xdp-trafficgen"

func init() {
	peerInstall[XdpTrafficgen] = "xdp-tools"
}

// generator is a runner that is itself the generator of its trials
// (xdp-trafficgen): trial runs generate instead of xdpeng's own generator,
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
type trafficgenRunner struct {
	kernRunner
	name string

	bin, version string
	cleanup      []string
}

func (r *trafficgenRunner) start(ctx context.Context) error {
	var err error
	if r.bin, err = findPeer(XdpTrafficgen, r.e.peers); err != nil {
		return &SkipError{Path: r.name, Reason: err.Error()}
	}
	if r.version, err = peerVersion(ctx, r.bin, "udp"); err != nil {
		return &SkipError{Path: r.name, Reason: err.Error()}
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
		return st, fmt.Errorf("%s sends as fast as it can: it takes no rate", XdpTrafficgen)
	}
	gen0 := r.e.links[0]
	var before devHooks
	var base netdev.VethQueue
	if err := r.e.inGen(func() (err error) {
		if before, err = readDevHooks(gen0.GenIndex); err != nil {
			return err
		}
		base, err = vethTotals(gen0.Gen)
		return err
	}); err != nil {
		return st, err
	}
	p := &peerProc{tool: XdpTrafficgen}
	t0 := time.Now()
	if err := p.start(r.e.genNS, g.CPUs[0], r.bin, r.args(g), "Transmitting on"); err != nil {
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
		cur, err := vethTotals(gen0.Gen)
		st.DeviceCounters = true
		st.Xmit = cur.TxXDPXmit - base.TxXDPXmit
		st.Errors = cur.TxXDPXmitErrors - base.TxXDPXmitErrors
		st.Sent = st.Xmit + st.Errors
		st.Bytes = st.Sent * uint64(g.Frame.Size)
		return err
	}))
	return st, errors.Join(errs...)
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
	return "the XDP_DROP program's per-CPU counter on dut0; sent: gen0's XDP transmits (veth's tx_queue_N_xdp_xmit and _xmit_errors)"
}

func (r *trafficgenRunner) xdpMode() string {
	return fmt.Sprintf("%s (receiver); generator %s %s: %s udp", r.kernRunner.xdpMode(), XdpTrafficgen, r.version, r.bin)
}

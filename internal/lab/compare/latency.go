//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/xdpeng/xdpeng/engine"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/latency"
)

// DefaultLatencyRate is the offered load of a latency run when none is
// given: low enough that no path of the test bed loses a frame.
const DefaultLatencyRate = 100_000

// LatencyConfig describes a latency run. Each path of Config.Paths (only
// paths whose frames come back to the generator's side: LatencyPaths) gets
// one run of stamped frames at Config.Rate for Config.Duration, counted
// and timed by a receiver where they come back; xdpeng's own AF_XDP paths
// run once in each wait mode of Waits. Config.Rate 0 means
// DefaultLatencyRate; a test bed is required, and NDR is not taken.
type LatencyConfig struct {
	Config
	// Waits are the engine's wait modes to run the xsk-* paths in; nil
	// means all of them.
	Waits []engine.WaitMode
}

// WaitModes are the engine's wait modes, in the order rows show them.
var WaitModes = []engine.WaitMode{engine.WaitAdaptive, engine.WaitBusy, engine.WaitPoll, engine.WaitBusyPoll}

// ParseWaitMode reads a wait mode by the name its String gives.
func ParseWaitMode(s string) (engine.WaitMode, error) {
	var names []string
	for _, w := range WaitModes {
		if w.String() == s {
			return w, nil
		}
		names = append(names, w.String())
	}
	return 0, fmt.Errorf("unknown wait mode %q: use %s", s, strings.Join(names, ", "))
}

// latencyHooks says, for each path whose frames come back, which link they
// come back on and how (XDP frames or skbs): where its receiver goes.
var latencyHooks = map[string]struct {
	link int
	kind sinkKind
}{
	"xdp-tx":               {0, xdpFrames},
	"xsk-l2fwd":            {0, skbFrames},
	"xdp-redirect":         {1, xdpFrames},
	"xdp-redirect-generic": {1, xdpFrames},
	"bridge":               {1, skbFrames},
	"xsk-fwd":              {1, skbFrames},
	"dpdk-l2fwd":           {0, skbFrames},
	"dpdk-l2fwd-nobusy":    {0, skbFrames},
}

// LatencyPaths are the paths a latency run can measure: those whose frames
// come back to the generator's side of the test bed, in table order.
func LatencyPaths() []PathInfo {
	var out []PathInfo
	for _, p := range paths {
		if _, ok := latencyHooks[p.Name]; ok {
			out = append(out, p)
		}
	}
	return out
}

// DefaultLatencyPaths are the paths a latency run takes when none are
// given: one of each way back (XDP_TX, AF_XDP l2fwd, devmap redirect,
// bridge, AF_XDP fwd).
var DefaultLatencyPaths = []string{"xdp-tx", "xsk-l2fwd", "xdp-redirect", "bridge", "xsk-fwd"}

// usesEngine tells whether path runs xdpeng's engine, so that its wait
// mode matters.
func usesEngine(path string) bool { return strings.HasPrefix(path, "xsk-") }

// Check validates c as RunLatency would, on a copy: it changes nothing, in
// c or on the host.
func (c *LatencyConfig) Check() error {
	d := *c
	return d.Resolve()
}

// Resolve fills in c's defaults (paths, rate, wait modes, and those of
// Config.Resolve), then validates c as Check does.
func (c *LatencyConfig) Resolve() error {
	if len(c.Paths) == 0 {
		c.Paths = DefaultLatencyPaths
		if c.Remote != nil {
			c.Paths, _ = c.Remote.Runnable(c.Paths)
		}
	}
	for _, n := range c.Paths {
		if _, ok := latencyHooks[n]; !ok {
			if _, known := LookupPath(n); !known {
				_, err := ParsePaths(n)
				return err
			}
			return fmt.Errorf("path %s: its frames do not come back to the generator's side, so their delay cannot be taken: use %s",
				n, strings.Join(pathNames(LatencyPaths()), ", "))
		}
	}
	if c.NDR != nil {
		return errors.New("a latency run takes no zero-loss search")
	}
	if c.Interface != "" {
		return errors.New("a latency run needs a test bed, or a DUT on another host: the generator stamps the frames and a receiver on its side takes them back")
	}
	if c.Remote == nil {
		c.Testbed = true
	}
	if c.Rate == 0 {
		c.Rate = DefaultLatencyRate
	}
	if len(c.Waits) == 0 {
		c.Waits = WaitModes
	}
	if err := c.Config.Resolve(); err != nil {
		return err
	}
	if n := c.frames(); n == 0 || n > gen.MaxStampCount {
		return fmt.Errorf("%d pps for %v is %d stamped frames: use 1..%d (sequence numbers are 32 bits)", c.Rate, c.Duration, n, uint64(gen.MaxStampCount))
	}
	return nil
}

// frames is the count of stamped frames each row's run sends.
func (c *LatencyConfig) frames() uint64 {
	return uint64(c.Duration.Seconds() * float64(c.Rate))
}

// LatencyRow is one path's (and wait mode's) delays and the fate of its
// frames.
type LatencyRow struct {
	Path   string `json:"path"`
	Family Family `json:"family"`
	// Wait is the engine's wait mode, for xdpeng's AF_XDP paths.
	Wait string `json:"wait,omitempty"`
	// Receiver says where the frames were taken back: "xdp on gen0".
	Receiver string `json:"receiver"`
	RatePPS  uint64 `json:"rate_pps"`
	// Sent, received, lost, reordered, duplicated, other and latency_ns
	// (min, p50, p90, p99, p999, max), from the receiver's exact counts.
	latency.Result
	MeanNs float64 `json:"mean_ns"`
	// Reasons are the path's own drop counters over the run, as compare's
	// rows have them; Unexplained is lost frames none of them accounts for.
	Reasons     map[string]uint64 `json:"drop_reasons"`
	Unexplained int64             `json:"unexplained"`
	// Buckets are the histogram's non-empty buckets: [lo_ns, hi_ns, count].
	Buckets [][3]uint64 `json:"histogram"`
	Env     labenv.Env  `json:"env"`
	Error   string      `json:"error,omitempty"`
}

// Name is the row's path and wait mode: "xsk-l2fwd busy-poll".
func (r LatencyRow) Name() string {
	if r.Wait == "" {
		return r.Path
	}
	return r.Path + " " + r.Wait
}

// LatencyResult is a whole latency run.
type LatencyResult struct {
	Setup Setup        `json:"setup"`
	Rows  []LatencyRow `json:"rows"`
	// Frames is how many stamped frames each row's run sends.
	Frames uint64   `json:"frames_per_row"`
	Notes  []string `json:"notes,omitempty"`
	// Unfinished are the rows (path and wait mode, as Name) a cancelled
	// run did not finish, the one it was measuring first; nil when it ran
	// to the end.
	Unfinished []string `json:"unfinished,omitempty"`
}

// Interrupted reports whether the run was cancelled before its last row
// finished: Rows are those that did.
func (r *LatencyResult) Interrupted() bool { return len(r.Unfinished) > 0 }

// Failed lists the rows with an error.
func (r *LatencyResult) Failed() []string {
	var bad []string
	for _, row := range r.Rows {
		if row.Error != "" {
			bad = append(bad, row.Name())
		}
	}
	return bad
}

// RunLatency runs every path of cfg (every wait mode of the xsk-* paths)
// in turn, each with a run of stamped frames of its own, and returns their
// rows. Like Run it makes a test bed unless given one, removes it before
// returning, gives a path that fails a row with Error, and fails itself only
// on bad input, a bed that cannot be made or removed, or a cancelled ctx
// (then with the rows that finished, and Unfinished the others).
func RunLatency(ctx context.Context, cfg LatencyConfig) (res LatencyResult, err error) {
	if err := cfg.Resolve(); err != nil {
		return res, err
	}
	res.Frames = cfg.frames()
	res.Setup = Setup{
		Queues: cfg.Queues, FrameSize: cfg.FrameSize, GenCPUs: cfg.GenCPUs, DUTCPUs: cfg.DUTCPUs,
		DurationS: cfg.Duration.Seconds(), Rate: cfg.Rate, Kernel: kernelRelease(),
	}
	e, done, err := prepare(ctx, &cfg.Config, &res.Setup)
	defer func() { err = errors.Join(err, done()) }()
	if err != nil {
		return res, err
	}
	res.Setup.Env.Generator += ", stamped (sequence number and send time in each frame)"
	res.Setup.CPUNote = ""
	type job struct {
		row  LatencyRow
		wait engine.WaitMode
	}
	var todo []job // every path, the xsk-* ones in each wait mode
	for _, name := range cfg.Paths {
		info, _ := LookupPath(name)
		if !usesEngine(name) {
			todo = append(todo, job{LatencyRow{Path: name, Family: info.Family}, engine.WaitAdaptive})
			continue
		}
		for _, w := range cfg.Waits {
			todo = append(todo, job{LatencyRow{Path: name, Family: info.Family, Wait: w.String()}, w})
		}
	}
	unfinished := func(i int) []string {
		var names []string
		for _, j := range todo[i:] {
			names = append(names, j.row.Name())
		}
		return names
	}
	for i, j := range todo {
		if err := ctx.Err(); err != nil {
			res.Unfinished = unfinished(i)
			return res, err
		}
		info, _ := LookupPath(j.row.Path)
		row := j.row
		row.RatePPS, row.Env = cfg.Rate, res.Setup.Env
		if err := measureLatency(ctx, e, &cfg, info, pathOpts{wait: j.wait}, &row); err != nil {
			if ctx.Err() != nil {
				res.Unfinished = unfinished(i)
				return res, ctx.Err()
			}
			if se := (*SkipError)(nil); errors.As(err, &se) {
				res.Notes = append(res.Notes, se.Error())
				cfg.progress("%s", se)
				continue
			}
			row.Error = err.Error()
			cfg.progress("%-20s failed: %v", row.Name(), err)
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// measureLatency sets up one path with a receiver where its frames come
// back, sends the run's stamped frames, and fills in row.
func measureLatency(ctx context.Context, e *env, cfg *LatencyConfig, info PathInfo, o pathOpts, row *LatencyRow) (err error) {
	n := cfg.frames()
	run := latency.NewRunID()
	o.stamp = &stampRun{runID: run, count: n, streams: len(e.genCPUs)}
	s, err := openSession(ctx, e, info, o)
	if s != nil {
		defer func() { err = errors.Join(err, s.close()) }()
	}
	if err != nil {
		return err
	}
	tr := newRow(info, row.Env)
	s.describe(&tr)
	cfg.progress("%-20s %d stamped frames at %d pps", row.Name(), n, cfg.Rate)
	row.Env.XDPMode = tr.Env.XDPMode
	h := latencyHooks[info.Name]
	row.Receiver = fmt.Sprintf("%s on %s", map[sinkKind]string{xdpFrames: "xdp", skbFrames: "tc ingress"}[h.kind], e.links[h.link].Gen)

	g := e.genConfig(info.Family, &cfg.Config)
	// One copy of each frame: each carries a sequence number of its own.
	g.Duration, g.Count, g.Stamp, g.RunID, g.Copies = 0, n, true, run, 1
	if _, err := s.trial(ctx, &g, cfg.Duration, &tr); err != nil {
		return err
	}
	recv, ok := s.r.(receiving)
	if !ok || recv.receiver() == nil {
		return fmt.Errorf("%s: no latency receiver", info.Name)
	}
	c, err := recv.receiver().Read()
	if err != nil {
		return fmt.Errorf("%s: %w", info.Name, err)
	}
	res, err := c.Result(tr.Sent)
	row.Result = res
	row.MeanNs = round1(res.Histogram.Mean())
	row.Reasons = tr.Reasons
	var counted uint64
	for _, v := range tr.Reasons {
		counted += v
	}
	row.Unexplained = int64(res.Lost) - int64(counted)
	for _, b := range res.Histogram.NonEmpty() {
		row.Buckets = append(row.Buckets, [3]uint64{b.Lo, b.Hi, b.Count})
	}
	if err != nil {
		return fmt.Errorf("%s: %w", info.Name, err)
	}
	return nil
}

// receiving is a runner whose frames come back to a sink: with a stamped
// run, that sink is a latency receiver.
type receiving interface {
	receiver() *latency.Receiver
}

func (r *kernRunner) receiver() *latency.Receiver   { return r.sink.receiver() }
func (r *xskRunner) receiver() *latency.Receiver    { return r.sink.receiver() }
func (r *bridgeRunner) receiver() *latency.Receiver { return r.sink.receiver() }

var _ receiving = (*dpdkRunner)(nil)

func (s *sinks) receiver() *latency.Receiver {
	if s == nil {
		return nil
	}
	return s.recv
}

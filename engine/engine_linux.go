package engine

import (
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// New validates cfg, binds a socket to every queue (and to the same queue
// of every output), and attaches the steering program; with Config.XSKMap
// it puts the sockets in that map instead, and attaches Config.Program if
// set. On error nothing is left attached or open, and no entry in the map.
// MaxQueues is the room of the steering program's XSKMAP: the build fails
// if the two differ.
const _ = uint(MaxQueues-bpf.MaxQueues) + uint(bpf.MaxQueues-MaxQueues)

func New(cfg Config) (_ *Engine, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.PollTimeout = pollTimeout(cfg.PollTimeout)
	// The device's facts are read once; what follows decides from them.
	facts, err := probe(cfg.Interface)
	if err != nil {
		return nil, err
	}
	info, plan := &facts.Info, facts.Plan()
	if cfg.Queues == nil {
		if info.RxQueues > MaxQueues {
			return nil, fmt.Errorf("%s has %d receive queues, and an engine serves queues 0 to %d (its steering program's XSKMAP): name the queues to serve", cfg.Interface, info.RxQueues, MaxQueues-1)
		}
		for q := 0; q < info.RxQueues; q++ {
			cfg.Queues = append(cfg.Queues, q)
		}
	}
	if len(cfg.Queues) == 0 {
		return nil, fmt.Errorf("%s reports no rx queues", cfg.Interface)
	}
	dev := deviceOf(info)
	if err := dev.CheckQueues(cfg.Queues); err != nil {
		return nil, err
	}
	if err := cfg.resolveXDPMode(info, plan); err != nil {
		return nil, err
	}
	if err := checkThreadedBusyPoll(cfg.Wait); err != nil {
		return nil, err
	}
	if err := cfg.checkMultiBuffer(facts, plan); err != nil {
		return nil, err
	}
	if err := cfg.checkRxMetadata(facts); err != nil {
		return nil, err
	}
	if err := cfg.checkTxChecksum(facts, plan); err != nil {
		return nil, err
	}
	if err := checkMTU(info, &cfg); err != nil {
		return nil, err
	}
	outs, err := lookupOutputs(&cfg, info)
	if err != nil {
		return nil, err
	}
	if err := cfg.resolveCPUs(); err != nil {
		return nil, err
	}
	// With the caller's XSKMap and no Program, the program on the
	// device is the caller's: the engine attaches nothing.
	attach := cfg.XSKMap == nil || cfg.Program != nil
	if attach {
		if err := attachedError(foreignXDP(facts, netdev.ReplaceOf(cfg.Force, cfg.ForceInUse))); err != nil {
			return nil, err
		}
	}

	e := &Engine{core: core{dev: info, sched: cfg.Sched, schedPriority: cfg.SchedPriority}, cfg: cfg, outs: outs}
	if e.pages, err = choosePages(cfg.HugePages, cfg.Unaligned, e.umemSizes()); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	prog := cfg.Program
	if cfg.XSKMap != nil {
		e.prog = &userMap{m: cfg.XSKMap}
	} else {
		own, err := e.newSteering()
		if err != nil {
			return nil, err
		}
		e.prog, prog = own, own.Program
	}
	if err := e.bindAll(); err != nil {
		return nil, err
	}
	if attach {
		if e.link, err = hook.AttachXDP(prog, info.Index, hookMode(cfg.XDPMode), netdev.ReplaceOf(cfg.Force, cfg.ForceInUse)); err != nil {
			return nil, attachedError(err)
		}
	}
	devs := []*netdev.Info{info}
	for _, o := range outs {
		devs = append(devs, o.info)
	}
	if err := e.watchLinks(devs...); err != nil {
		return nil, err
	}
	e.napi = napiState{dev: e.dev, guard: cfg.NAPIGuard}
	if err := e.napi.setup(cfg.Wait, cfg.BusyPollNAPI, cfg.Queues); err != nil {
		return nil, err
	}
	e.onLinkChange = cfg.OnLinkChange
	return e, nil
}

// checkMTU answers whether this run's sockets receive whole every frame the
// device's MTU allows now (the MTU, an Ethernet header and a VLAN tag,
// after the kernel's headroom and the UMEM's), and refuses the frame size
// if not: the kernel would drop every such frame. With multi-buffer a
// frame may take up to netdev.CopyModeMaxFrags UMEM frames, what copy mode
// transmits on every kernel, in every bind mode: BindAuto settles the bind
// mode only at bind.
//
// It is not netdev.Facts.MTULimit, which answers what MTU the device could
// be given (probe's table): checkMTU reads the current MTU, which never
// exceeds the device's MaxMTU, so MTULimit's clamp to MaxMTU changes no
// answer here; and it does not look at rx-sg, because checkMultiBuffer has
// already refused native multi-buffer without it, generic mode takes
// multi-buffer on every device, and where the kernel reports no features
// the bind is left to try. Both compute the limit with netdev.FrameMTU, and
// agree where they ask the same question (native copy mode with rx-sg).
func checkMTU(info *netdev.Info, c *Config) error {
	if info.MTU <= 0 {
		return nil
	}
	fs, hr := int(c.FrameSize), int(c.FrameHeadroom)
	if c.MultiBuffer {
		maxMTU := netdev.FrameMTU(fs, hr, netdev.CopyModeMaxFrags)
		if info.MTU <= maxMTU {
			return nil
		}
		room := fs - KernelHeadroom - hr
		return &MultiBufferError{Device: info.Name, MTU: info.MTU, FrameSize: c.FrameSize, Headroom: c.FrameHeadroom,
			Buffers: (info.MTU + frameOverhead + room - 1) / room, MaxBuffers: netdev.CopyModeMaxFrags, MaxMTU: maxMTU}
	}
	if maxMTU := netdev.FrameMTU(fs, hr, 1); info.MTU > maxMTU {
		return &MTUError{Device: info.Name, MTU: info.MTU, FrameSize: c.FrameSize, Headroom: c.FrameHeadroom, MaxMTU: maxMTU}
	}
	return nil
}

func (e *Engine) bindAll() error {
	cfg := &e.cfg
	per := cfg.framesPerSocket()
	// stride is the frames each queue takes of a UMEM: its rx socket's,
	// and one for the fill ring of each output socket that shares it (see
	// bindOutput).
	stride := per + uint32(len(e.outs))*outFrames
	var shared *xsk.Umem
	if cfg.SharedUmem {
		u, err := e.newUmem(cfg.umemConfig(stride * uint32(len(cfg.Queues))))
		if err != nil {
			return cfg.txMetadataError(err)
		}
		shared = u
	}
	for i, q := range cfg.Queues {
		u, first := shared, uint32(i)*stride
		if u == nil {
			var err error
			if u, err = e.newUmem(cfg.umemConfig(stride)); err != nil {
				return cfg.txMetadataError(err)
			}
			first = 0
		}
		var h Handler
		if cfg.Handler != nil {
			h = cfg.Handler(q)
		}
		txSize := cfg.TxSize
		if hintsOf(h).ReceiveOnly && len(e.outs) == 0 {
			// A socket that never transmits gets no tx ring, so poll()
			// does not try to transmit from it.
			txSize = 0
		}
		s, err := xsk.NewSocket(u, xsk.SocketConfig{
			Ifindex:        e.dev.Index,
			Queue:          q,
			FillSize:       cfg.FillSize,
			CompletionSize: cfg.CompletionSize,
			RxSize:         cfg.RxSize,
			TxSize:         txSize,
			Mode:           cfg.BindMode.xsk(),
			NeedWakeup:     cfg.NeedWakeup,
			FirstFrame:     first,
			NumFrames:      per,
			MultiBuffer:    cfg.MultiBuffer,
		})
		if err != nil {
			return err
		}
		w := newRxWorker(q, cfg.CPUs[i], s, h, workerOptions(cfg))
		w.batch.rxMetadata = cfg.RxMetadata != 0
		if cfg.TxChecksum {
			w.batch.txMeta = make([]bool, len(w.batch.addrs))
		}
		e.workers = append(e.workers, w)
		for k := range e.outs {
			if err := e.bindOutput(w, k, first+per+uint32(k)*outFrames); err != nil {
				return err
			}
		}
		w.syncPorts()
		if cfg.Wait == WaitBusyPoll {
			if err := s.SetBusyPoll(cfg.BusyPollUsecs, cfg.BusyPollBudget); err != nil {
				return fmt.Errorf("queue %d: %w", q, err)
			}
		}
		if err := e.prog.SetSocket(q, s.FD()); err != nil {
			return err
		}
	}
	return nil
}

// umemSizes are the sizes in bytes of the UMEMs bindAll will make: one per
// queue, or one for all, and one per queue for each output that copies.
func (e *Engine) umemSizes() []int {
	cfg := &e.cfg
	stride := int(cfg.framesPerSocket()) + len(e.outs)*outFrames
	var sizes []int
	if cfg.SharedUmem {
		sizes = append(sizes, stride*len(cfg.Queues)*int(cfg.FrameSize))
	} else {
		for range cfg.Queues {
			sizes = append(sizes, stride*int(cfg.FrameSize))
		}
	}
	for _, o := range e.outs {
		if o.copy {
			for range cfg.Queues {
				sizes = append(sizes, int(cfg.TxSize+outFrames)*int(cfg.FrameSize))
			}
		}
	}
	return sizes
}

// attachedError turns hook's report of someone else's program into an
// *AttachedError.
func attachedError(err error) error {
	var a *netdev.ForeignXDPError
	if !errors.As(err, &a) {
		return err
	}
	return &AttachedError{Device: a.Interface, ProgramID: a.ProgID, ProgramName: a.ProgName, Mode: a.Mode, LinkID: a.LinkID,
		OwnerPID: a.OwnerPID, OwnerComm: a.OwnerComm, Forced: a.Forced}
}

// hookMode is m as package hook spells it.
func hookMode(m XDPMode) hook.XDPMode {
	if m == XDPGeneric {
		return hook.Generic
	}
	return hook.Native
}

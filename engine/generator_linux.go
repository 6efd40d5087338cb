package engine

import (
	"fmt"

	"github.com/xdpeng/xdpeng/xsk"
)

// NewGenerator validates cfg and binds a transmit-only socket to every
// queue. On error nothing is left open.
func NewGenerator(cfg GeneratorConfig) (_ *Generator, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.PollTimeout = pollTimeout(cfg.PollTimeout)
	facts, err := probe(cfg.Interface)
	if err != nil {
		return nil, err
	}
	info, plan := &facts.Info, facts.Plan()
	queues := max(info.TxQueues, info.RxQueues)
	if cfg.Queues == nil {
		for q := 0; q < info.TxQueues; q++ {
			cfg.Queues = append(cfg.Queues, q)
		}
	}
	if len(cfg.Queues) == 0 {
		return nil, fmt.Errorf("%s reports no tx queues", cfg.Interface)
	}
	if err := cfg.checkTxChecksum(facts, plan); err != nil {
		return nil, err
	}
	if err := cfg.checkTxTimestamp(facts); err != nil {
		return nil, err
	}
	if err := cfg.checkLaunchTime(facts, plan); err != nil {
		return nil, err
	}
	var tai taiClock
	if cfg.TxTimestamp || cfg.LaunchDelay != 0 {
		if tai, err = newTAIClock(); err != nil {
			return nil, err
		}
	}
	csum, err := cfg.txChecksums()
	if err != nil {
		return nil, err
	}
	if err := checkZeroCopy(info, plan, cfg.BindMode); err != nil {
		return nil, err
	}
	for _, q := range cfg.Queues {
		if q < 0 || q >= queues {
			return nil, &QueueError{Device: info.Name, Driver: info.Driver, Queue: q, RxQueues: queues}
		}
	}
	if err := checkFrameLengths(info, cfg.Frames); err != nil {
		return nil, err
	}
	sc := cfg.sockets()
	sc.Queues = cfg.Queues
	if err := sc.resolveCPUs(); err != nil {
		return nil, err
	}
	cfg.CPUs = sc.CPUs
	g := &Generator{core: core{dev: info, sched: cfg.Sched, schedPriority: cfg.SchedPriority}, cfg: cfg}
	n := cfg.txFrames()
	sizes := make([]int, len(cfg.Queues))
	for i := range sizes {
		sizes[i] = int(n+outFrames) * int(cfg.FrameSize)
	}
	if g.pages, err = choosePages(cfg.HugePages, cfg.Unaligned, sizes); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	for i, q := range cfg.Queues {
		// One frame more than the generator uses: the kernel wants a fill
		// ring on every socket, and this frame sits in it, unused, as the
		// socket has no rx ring.
		uc := sc.umemConfig(n + outFrames)
		cfg.umemTxMetadata(&uc)
		u, err := g.newUmem(uc)
		if err != nil {
			return nil, fmt.Errorf("queue %d: %w", q, cfg.txMetadataError(err))
		}
		if cfg.txMetadata() {
			if err := writeTxMetaFrames(u, cfg.Frames, csum, n, cfg.txRequest()); err != nil {
				return nil, fmt.Errorf("queue %d: %w", q, err)
			}
		} else {
			writeTxFrames(u, cfg.Frames, n, cfg.segments())
		}
		s, err := xsk.NewSocket(u, xsk.SocketConfig{
			Ifindex:        info.Index,
			Queue:          q,
			FillSize:       outFillSize,
			CompletionSize: cfg.CompletionSize,
			TxSize:         cfg.TxSize,
			Mode:           cfg.BindMode.xsk(),
			NeedWakeup:     cfg.NeedWakeup,
			FirstFrame:     n,
			NumFrames:      outFrames,
			MultiBuffer:    cfg.MultiBuffer,
		})
		if err != nil {
			return nil, fmt.Errorf("queue %d: %w", q, err)
		}
		w := newTxWorker(q, cfg.CPUs[i], s, workerOptions(&sc), newTxGen(&cfg, i, n))
		if cfg.txMetadata() {
			t := w.tx
			t.metaOff, t.metaOpts, t.metaReq, t.csum, t.umem, t.tai = txMetaOffset, xsk.TxMetadataOption, cfg.txRequest(), csum, u, tai
			if cfg.TxTimestamp {
				t.timer, t.sentAt = new(txTimer), make([]uint64, n)
			}
			t.launch = uint64(cfg.LaunchDelay)
		}
		g.workers = append(g.workers, w)
		if cfg.Wait == WaitBusyPoll {
			if err := s.SetBusyPoll(cfg.BusyPollUsecs, cfg.BusyPollBudget); err != nil {
				return nil, fmt.Errorf("queue %d: %w", q, err)
			}
		}
	}
	if err := g.watchLinks(info); err != nil {
		return nil, err
	}
	g.napi = napiState{dev: info, guard: cfg.NAPIGuard}
	if err := g.napi.setup(cfg.Wait, cfg.BusyPollNAPI, cfg.Queues); err != nil {
		return nil, err
	}
	g.onLinkChange = cfg.OnLinkChange
	return g, nil
}

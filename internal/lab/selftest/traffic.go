package selftest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// Defaults of the kernel's suite.
const (
	defaultFrameSize = 4096 // XSK_UMEM__DEFAULT_FRAME_SIZE
	defaultFrames    = 1024 // DEFAULT_UMEM_BUFFERS, for receiving and again for sending
	defaultRing      = 2048 // XSK_RING_{PROD,CONS}__DEFAULT_NUM_DESCS
	defaultPackets   = 4096 // DEFAULT_PKT_CNT
	defaultBatch     = 64   // DEFAULT_BATCH_SIZE
	defaultWindow    = 256  // frames sent and not yet received, at most
	// idleTimeout is how long a flow may make no progress (nothing sent,
	// completed or received) before it fails.
	idleTimeout = 3 * time.Second
	// settle is how long a flow waits, after the last frame it expects,
	// for frames or counts it does not expect.
	settle = 20 * time.Millisecond
)

// tcase is one test in one mode: what it opened, closed when it ends.
type tcase struct {
	ctx     context.Context
	pair    Pair
	mode    Mode
	closers []func() error
	// guard, if not nil, puts back ring sizes if the process is killed.
	guard *guard
}

// onClose has fn run when the test ends, the last registered first.
func (t *tcase) onClose(fn func() error) { t.closers = append(t.closers, fn) }

// close releases everything the test opened.
func (t *tcase) close() error {
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		errs = append(errs, t.closers[i]())
	}
	t.closers = nil
	return errors.Join(errs...)
}

// sockSpec describes one socket and its own UMEM. The UMEM holds RxFrames
// frames for the fill ring, then TxFrames frames to transmit from.
type sockSpec struct {
	frameSize          uint32 // 0: 4096
	rxFrames, txFrames uint32 // 0: 1024 each
	headroom           uint32
	unaligned          bool
	sg                 bool // multi-buffer (XDP_USE_SG)
	rx, tx             bool
	rxRing             uint32 // 0: 2048
	ring               uint32 // the fill, completion and tx rings; 0: 2048
}

func (s sockSpec) withDefaults() sockSpec {
	if s.frameSize == 0 {
		s.frameSize = defaultFrameSize
	}
	if s.rxFrames == 0 {
		s.rxFrames = defaultFrames
	}
	if s.txFrames == 0 {
		s.txFrames = defaultFrames
	}
	if s.rxRing == 0 {
		s.rxRing = defaultRing
	}
	if s.ring == 0 {
		s.ring = defaultRing
	}
	return s
}

// sock is an open socket with its UMEM.
type sock struct {
	end    End
	spec   sockSpec
	u      *xsk.Umem
	s      *xsk.Socket
	huge   bool   // the UMEM is in huge pages
	txNext uint32 // next transmit frame, round robin
	// pool is the socket whose buffer pool (fill and completion rings,
	// free frames) this one shares, nil for its own.
	pool *sock
	name string // in failures: "dut0 socket 1"
}

// owner is the socket whose fill and completion rings serve so.
func (so *sock) owner() *sock {
	if so.pool != nil {
		return so.pool
	}
	return so
}

// label names the socket in a failure.
func (so *sock) label() string {
	if so.name != "" {
		return so.name
	}
	return so.end.Name
}

// umemSize is the UMEM's size in bytes.
func (so *sock) umemSize() uint64 {
	return uint64(so.spec.frameSize) * uint64(so.spec.rxFrames+so.spec.txFrames)
}

// txBase is the address of transmit frame k (of the UMEM's TxFrames).
func (so *sock) txBase(k uint32) uint64 {
	return uint64(so.spec.rxFrames+k%so.spec.txFrames) * uint64(so.spec.frameSize)
}

// open makes a socket on end's queue 0 as spec says.
func (t *tcase) open(end End, spec sockSpec) (*sock, error) {
	spec = spec.withDefaults()
	so := &sock{end: end, spec: spec}
	if spec.unaligned {
		hp, err := xsk.ReadHugePages()
		size := int(so.umemSize())
		switch {
		case err == nil && hp.Size > 0 && hp.Available() >= hp.PagesFor(size):
			so.huge = true
		case t.mode == ZC && (err != nil || hp.Size == 0):
			return nil, skipf("unaligned chunks in zero-copy mode need the UMEM in huge pages, and this kernel has none")
		case t.mode == ZC:
			need := hp.PagesFor(size)
			return nil, skipf("unaligned chunks in zero-copy mode need the UMEM in huge pages: %d free, %d needed (echo %d > /proc/sys/vm/nr_hugepages)",
				hp.Available(), need, hp.Total+need)
		}
	}
	err := end.do(func() error {
		u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: spec.frameSize, NumFrames: spec.rxFrames + spec.txFrames,
			Headroom: spec.headroom, Unaligned: spec.unaligned, HugePages: so.huge,
			AnyFrameSize: spec.unaligned && spec.frameSize&(spec.frameSize-1) != 0})
		if err != nil {
			return err
		}
		cfg := xsk.SocketConfig{Ifindex: end.Index, Queue: 0, FillSize: spec.ring, CompletionSize: spec.ring,
			Mode: t.mode.bindMode(), NeedWakeup: true, FirstFrame: 0, NumFrames: spec.rxFrames, MultiBuffer: spec.sg}
		if spec.rx {
			cfg.RxSize = spec.rxRing
		}
		if spec.tx {
			cfg.TxSize = spec.ring
		}
		s, err := xsk.NewSocket(u, cfg)
		if err != nil {
			u.Close()
			return err
		}
		so.u, so.s = u, s
		return nil
	})
	if errors.Is(err, xsk.ErrNoZeroCopy) {
		if gap := zeroCopyGap(end); gap != "" {
			return nil, skipf("%s has no AF_XDP zero-copy: %s (%v)", end.Name, gap, err)
		}
		return nil, skipf("%s has no AF_XDP zero-copy: %v", end.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open AF_XDP socket on %s: %w", end.Name, err)
	}
	t.onClose(func() error { return errors.Join(so.s.Close(), so.u.Close()) })
	return so, nil
}

// steer is the selftest program attached to one end.
type steer struct {
	end  End
	prog *bpf.Selftest
}

// attach loads the selftest program and attaches it to end in the test's
// mode.
func (t *tcase) attach(end End, opts bpf.SelftestOptions) (*steer, error) {
	p, err := bpf.NewSelftest(opts)
	if err != nil {
		return nil, err
	}
	t.onClose(p.Close)
	var l io.Closer
	err = end.do(func() (err error) {
		l, err = hook.AttachXDP(p.Program, end.Index, t.mode.xdpMode(), netdev.ReplaceNone)
		return err
	})
	if errors.Is(err, hook.ErrNoNativeXDP) {
		return nil, skipf("%s has no native XDP: %v", end.Name, err)
	}
	if err != nil {
		return nil, err
	}
	t.onClose(l.Close)
	if opts.Frags && end.Index == t.pair.Rx.Index && end.NS == t.pair.Rx.NS {
		if err := t.primeRx(); err != nil {
			return nil, err
		}
	}
	return &steer{end: end, prog: p}, nil
}

// to puts so at key 0: the program's test frames go to it.
func (st *steer) to(so *sock) error { return st.prog.SetSocket(0, so.s.FD()) }

// txPkt is one descriptor to transmit. A packet is a run of descriptors
// whose last has no XDP_PKT_CONTD in opts; packets are numbered from 0 in
// the order of the flow, and packet n carries frame n.
type txPkt struct {
	// abs: addr is the descriptor's address as it is. Otherwise the
	// address is the next transmit frame's plus off (which may be
	// negative: the data then starts in the frame before).
	abs  bool
	addr uint64
	off  int64
	len  uint32
	opts uint32
	// bad: the kernel refuses this descriptor itself (its address,
	// length or options), where the test tells kernels' readings apart.
	bad bool
	// last ends the packet at this descriptor whatever opts say: an
	// invalid descriptor ends its packet in the kernel's reading even
	// with XDP_PKT_CONTD set (or options that are not valid at all).
	last bool
	// valid says whether the kernel must send it; only valid
	// descriptors are filled with a frame and use up a transmit frame,
	// and a packet is sent only if all its descriptors are valid.
	valid bool
}

// packet is one packet of a flow: descriptors first..first+n-1.
type packet struct {
	first, n int
	len      uint32 // the frame's length: the descriptors' lengths added
	valid    bool
}

// packets splits pkts into packets.
func packets(pkts []txPkt) []packet {
	var out []packet
	cur := packet{valid: true}
	for i, p := range pkts {
		if cur.n == 0 {
			cur.first = i
		}
		cur.n++
		cur.len += p.len
		cur.valid = cur.valid && p.valid
		if p.opts&xsk.PacketContinues == 0 || p.last || i == len(pkts)-1 {
			out = append(out, cur)
			cur = packet{valid: true}
		}
	}
	return out
}

// fragmented returns n packets of length bytes each, split into
// descriptors of at most frameSize bytes.
func fragmented(n int, length, frameSize uint32) []txPkt {
	var p []txPkt
	for range n {
		for left := length; left > 0; {
			l := min(left, frameSize)
			left -= l
			d := txPkt{len: l, valid: true}
			if left > 0 {
				d.opts = xsk.PacketContinues
			}
			p = append(p, d)
		}
	}
	return p
}

// rxWant is a frame the receiver expects.
type rxWant struct {
	nb  uint32 // its number: its packet's in the flow
	len uint32
	// sent, if not 0, is the frame's length as sent, when the program
	// changed it: a frame grown arrives as sent with zeros after it, one
	// shrunk as the start of what was sent.
	sent uint32
}

// flow is one run of frames from one socket to another.
type flow struct {
	from, to *sock
	pkts     []txPkt
	batch    uint32 // descriptors per batch; 0: 64
	window   int    // frames sent and not yet received; 0: 256
	// rxCap is how many frames the receiver can take (no refill, or no
	// release); 0 for no limit. Past it the sender is not paced.
	rxCap          int
	rxPoll, txPoll bool
	noRefill       bool // received frames are not given back to the fill ring
	noRelease      bool // received descriptors are not released
	// want are the frames the receiver expects, in order; nil means the
	// valid packets' frames.
	want []rxWant
	// also, if set, is a second receiving socket, and alsoWant the
	// frames it expects (XDP_SHARED_UMEM); want are then to's alone.
	also     *sock
	alsoWant []rxWant
	// selector gives the byte the program's selector reads in frame nb
	// (the padding after the EtherType), nil for 0.
	selector func(nb uint32) byte
	// metadata: the program puts each frame's number in front of it
	// (XDP_METADATA_COPY), which the receiver checks.
	metadata bool
	// checkConsumer: the first sendto must take exactly txBudget
	// descriptors off a tx ring holding more (TX_QUEUE_CONSUMER).
	checkConsumer bool
	// consumerLate is set when the first sendto showed none taken on a
	// kernel that publishes the consumer only at the next sendto.
	consumerLate bool
	// rxStats and txStats are the XDP_STATISTICS counts the flow must
	// add to each socket (tx_ring_empty_descs, which counts wake-ups that
	// found the ring empty, is not compared).
	rxStats, txStats xsk.Statistics
	// rxStatsMatch, if set, replaces the exact comparison with rxStats
	// where the test cannot arrange exact counts (zero-copy drops in the
	// NIC), rxStatsExpected saying what it takes.
	rxStatsMatch    func(xsk.Statistics) bool
	rxStatsExpected string
	// prog, when set, is the receiving end's program, and progWant the
	// counts it must add.
	prog     *steer
	progWant bpf.SelftestCounts
	// completionFailure is a failure of the completion ring found by
	// the sender that lets the flow go on, reported once the flow's
	// other checks are done.
	completionFailure *Failure
	// invalidSent and invalidReturned count the invalid descriptors
	// submitted and returned on the completion ring.
	invalidSent, invalidReturned int
	// invalidEarly: the invalid descriptors came back when the kernel
	// read them, some ahead of valid ones sent before them.
	invalidEarly bool
	// oddCleared counts the completions that gave an odd address back
	// with its lowest bit cleared.
	oddCleared oddCleared
	// readings, when set, are the outcomes on the completion ring and in
	// tx_invalid_descs that the kernels known to differ produce for the
	// flow's invalid descriptors, each exactly; the flow passes only if
	// one of them is what happened, and held names it. They replace the
	// readings of send and txStats.TxInvalidDescs.
	readings []reading
	held     *reading
	// completions are the addresses the completion ring gave back, in
	// order, where readings are set.
	completions []uint64
	// sentAddrs are the addresses of the descriptors submitted, in order.
	sentAddrs []uint64
	// compReading is 1 + the index of the first reading whose
	// completions the completion ring gave, once the sender has them
	// all; 0 before, or if none.
	compReading atomic.Int32
	// rxCur is the reading whose frames the receiver got.
	rxCur int
}

// reading is one kernel's exact outcome of a flow's invalid descriptors.
type reading struct {
	name string // the kernels, and what they do
	// completions are the addresses the completion ring gives back, in
	// order; txInvalid what tx_invalid_descs adds.
	completions []uint64
	txInvalid   uint64
	// want are the frames the receiver gets, in order.
	want []rxWant
	// bug, if set, is the kernel bug this reading is: a flow that holds
	// it skips, naming it; leaked is how many descriptors it never
	// returns.
	bug    string
	leaked int
	// dropped, if set, are the completions of descriptors the kernel
	// dropped: it returns them as it reads them, while a packet it sends
	// completes only when the driver frees it, so that a dropped
	// descriptor may come back ahead of valid ones sent before it.
	dropped map[uint64]bool
}

// matches reports whether the completion ring gave back got under r: r's
// completions in order, or, where r drops descriptors, the same
// completions with the dropped ones and the sent ones each in their order
// and no sent one ahead of a dropped one read before it.
func (r *reading) matches(got []uint64) bool {
	if slices.Equal(r.completions, got) {
		return true
	}
	if r.dropped == nil || len(got) != len(r.completions) {
		return false
	}
	var sent, dropped []uint64
	var droppedBefore []int // for each sent one, the dropped ones read before it
	for _, a := range r.completions {
		if r.dropped[a] {
			dropped = append(dropped, a)
		} else {
			sent = append(sent, a)
			droppedBefore = append(droppedBefore, len(dropped))
		}
	}
	si, di := 0, 0
	for _, a := range got {
		switch {
		case di < len(dropped) && a == dropped[di]:
			di++
		case si < len(sent) && a == sent[si] && droppedBefore[si] <= di:
			si++
		default:
			return false
		}
	}
	return true
}

// oddCleared counts completions of odd addresses that came back with bit
// 0 cleared, and the first of them.
type oddCleared struct {
	n         int
	sent, got uint64
}

// stream returns n valid descriptors of length bytes each.
func stream(n int, length uint32) []txPkt {
	p := make([]txPkt, n)
	for i := range p {
		p[i] = txPkt{len: length, valid: true}
	}
	return p
}

// expected returns the frames the receiver of pkts expects: the valid
// packets'.
func expected(pkts []txPkt) []rxWant {
	var w []rxWant
	for i, p := range packets(pkts) {
		if p.valid {
			w = append(w, rxWant{nb: uint32(i), len: p.len})
		}
	}
	return w
}

// run sends the flow and checks everything it arranged. It returns what
// it checked.
func (t *tcase) run(f *flow) (string, error) {
	if f.batch == 0 {
		f.batch = defaultBatch
	}
	if f.window == 0 {
		f.window = defaultWindow
	}
	if f.readings != nil {
		f.want = f.readings[0].want
	}
	if f.want == nil {
		f.want = expected(f.pkts)
	}
	rxBefore, err := f.to.s.Statistics()
	if err != nil {
		return "", err
	}
	txBefore, err := f.from.s.Statistics()
	if err != nil {
		return "", err
	}
	var alsoBefore xsk.Statistics
	if f.also != nil {
		if alsoBefore, err = f.also.s.Statistics(); err != nil {
			return "", err
		}
	}
	var progBefore bpf.SelftestCounts
	if f.prog != nil {
		if progBefore, err = f.prog.prog.Counts(); err != nil {
			return "", err
		}
	}

	var received atomic.Int64
	stop := make(chan struct{})
	rxErr := make(chan error, 1)
	go func() { rxErr <- t.receive(f, &received, stop) }()
	txErr := t.send(f, &received)
	if txErr != nil {
		close(stop)
		<-rxErr
		return "", txErr
	}
	// The receiver stops when it has every frame, or when it has made
	// no progress for idleTimeout.
	var rerr error
	last, lastN := time.Now(), received.Load()
wait:
	for {
		select {
		case rerr = <-rxErr:
			break wait
		case <-time.After(time.Millisecond):
			if n := received.Load(); n != lastN {
				last, lastN = time.Now(), n
			} else if time.Since(last) > idleTimeout || t.ctx.Err() != nil {
				close(stop)
				rerr = <-rxErr
				break wait
			}
		}
	}
	if rerr != nil {
		// What the program did so far explains frames that went
		// missing.
		var fl *Failure
		if errors.As(rerr, &fl) {
			var so []string
			if f.prog != nil {
				if c, err := f.prog.prog.Counts(); err == nil {
					d := countsDelta(c, progBefore)
					so = append(so, "the program: "+countsString(d))
					if d.OtherQueue > 0 {
						fl.Check += otherQueueHint
					}
				}
			}
			if st, err := f.to.s.Statistics(); err == nil {
				if c := statsString(statsDelta(st, rxBefore), true); c != "" {
					so = append(so, "the receiver: "+c)
				}
			}
			if len(so) > 0 {
				fl.DeviceCounters = "so far " + strings.Join(so, "; ")
			}
		}
		return "", rerr
	}
	if err := t.settleExtra(f); err != nil {
		return "", err
	}

	// The counters: the kernel may still be counting the last frames
	// (a drop after the last frame received), so each is read until it
	// has the value arranged or idleTimeout has passed.
	if f.rxStatsMatch != nil {
		err = waitStatsMatch(f.to.s, "receiving", rxBefore, f.rxStatsMatch, f.rxStatsExpected)
	} else {
		err = waitStats(f.to.s, "receiving", rxBefore, f.rxStats)
	}
	if err != nil {
		return "", err
	}
	if f.also != nil {
		if err := waitStats(f.also.s, "second receiving", alsoBefore, xsk.Statistics{}); err != nil {
			return "", err
		}
	}
	if f.readings != nil {
		if err := f.holdReading(txBefore); err != nil {
			return "", err
		}
	} else if f.from != f.to {
		if err := waitStats(f.from.s, "sending", txBefore, f.txStats); err != nil {
			return "", err
		}
	}
	if f.prog != nil {
		if err := waitCounts(f.prog, progBefore, f.progWant); err != nil {
			return "", err
		}
	}
	if cf := f.completionFailure; cf != nil {
		return "", cf
	}
	if c := f.oddCleared; c.n > 0 {
		return "", skipf("%s: Linux %s gave %d odd transmit addresses back on the completion ring with bit 0 cleared (the first: %#x sent, %#x completed), a kernel bug that this test finds and xskxceiver, which counts completions, does not: copy mode keeps a one-descriptor packet's address in the skb's destructor_arg tagged in bit 0 (\"xsk: avoid data corruption on cq descriptor number\") and clears that bit on completion; everything else held: %s",
			oddClearedSkip, kernelRelease(), c.n, c.sent, c.got, f.describe())
	}
	if f.held != nil && f.held.bug != "" {
		return "", skipf("%s, a kernel bug; everything else held: %s", f.held.bug, f.describe())
	}
	return f.describe(), nil
}

// holdReading finds the reading that the completions and the sending
// socket's counters (added since before) match exactly, and fails naming
// each reading where none does.
func (f *flow) holdReading(before xsk.Statistics) error {
	var cands []*reading
	var want []string
	for i := range f.readings {
		r := &f.readings[i]
		want = append(want, fmt.Sprintf("%s: %s, tx_invalid_descs=%d", r.name, f.descList(r.completions), r.txInvalid))
		if r.matches(f.completions) {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		got := "none"
		if len(f.completions) > 0 {
			got = f.descList(f.completions)
		}
		if st, err := f.from.s.Statistics(); err == nil {
			got += ", " + statsString(statsDelta(st, before), true)
		}
		return &Failure{Check: "completion ring (the descriptors whose addresses came back, in order)", Expected: strings.Join(want, "; or "),
			Got: got, Frame: -1}
	}
	var expected []string
	for _, r := range cands {
		expected = append(expected, statsString(xsk.Statistics{TxInvalidDescs: r.txInvalid}, false)+" ("+r.name+")")
	}
	err := waitStatsMatch(f.from.s, "sending", before, func(d xsk.Statistics) bool {
		for _, r := range cands {
			if d == (xsk.Statistics{TxInvalidDescs: r.txInvalid}) {
				f.held = r
				return true
			}
		}
		return false
	}, strings.Join(expected, " or "))
	if err != nil {
		return err
	}
	if rx := &f.readings[f.rxCur]; !slices.Equal(rx.want, f.held.want) {
		return &Failure{Check: "frames received and completions", Expected: "both as one reading",
			Got: fmt.Sprintf("frames as %s, completions and tx_invalid_descs as %s", rx.name, f.held.name), Frame: -1}
	}
	f.txStats.TxInvalidDescs = f.held.txInvalid
	f.want = f.held.want
	f.progWant.Redirected = uint64(len(f.held.want))
	return nil
}

// descList names the descriptors of the flow whose addresses addrs are,
// by their place in the flow ("descriptors 0, 10-11, 14"); an address no
// descriptor has is given as it is.
func (f *flow) descList(addrs []uint64) string {
	if len(addrs) == 0 {
		return "no descriptor"
	}
	idx := make(map[uint64]int, len(f.sentAddrs))
	for i, a := range f.sentAddrs {
		if _, dup := idx[a]; !dup {
			idx[a] = i
		}
	}
	var out []string
	run := -1 // the first of the run of consecutive descriptors being named
	prev := -2
	flush := func() {
		if run < 0 {
			return
		}
		if run == prev {
			out = append(out, fmt.Sprint(run))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", run, prev))
		}
		run = -1
	}
	for _, a := range addrs {
		i, ok := idx[a]
		if !ok {
			flush()
			out = append(out, fmt.Sprintf("address %#x", a))
			prev = -2
			continue
		}
		if run >= 0 && i == prev+1 {
			prev = i
			continue
		}
		flush()
		run, prev = i, i
	}
	flush()
	word := "descriptors "
	if len(addrs) == 1 {
		word = "descriptor "
	}
	return word + strings.Join(out, ", ")
}

// oddClearedSkip begins the skip of a flow whose odd completion addresses
// came back with bit 0 cleared.
const oddClearedSkip = "odd completion addresses"

// describe says what a passing flow checked.
func (f *flow) describe() string {
	lens := map[uint32]bool{}
	for _, w := range f.want {
		lens[w.len] = true
	}
	var ls []string
	for l := range lens {
		ls = append(ls, fmt.Sprint(l))
	}
	if len(ls) > 3 {
		ls = append(ls[:3], "...")
	}
	valid := 0
	for _, p := range f.pkts {
		if p.valid {
			valid++
		}
	}
	pks := packets(f.pkts)
	comps := fmt.Sprintf("%d completions in order", valid)
	if f.held != nil {
		comps = fmt.Sprintf("%s on the completion ring and tx_invalid_descs=%d, exactly as %s", f.descList(f.completions), f.held.txInvalid, f.held.name)
	}
	s := fmt.Sprintf("%d of %d frames received in order, every byte checked (%s bytes); %s",
		len(f.want), len(pks), strings.Join(ls, ", "), comps)
	if len(pks) != len(f.pkts) {
		s = fmt.Sprintf("%d of %d frames (in %d descriptors) received in order, every byte checked (%s bytes); %s",
			len(f.want), len(pks), len(f.pkts), strings.Join(ls, ", "), comps)
	}
	if f.also != nil {
		s += fmt.Sprintf(", and %d on %s", len(f.alsoWant), f.also.label())
	}
	switch {
	case f.invalidSent > 0 && f.invalidReturned > 0 && f.invalidEarly:
		s += fmt.Sprintf("; the %d invalid descriptors returned on the completion ring as the kernel read them, some ahead of valid ones sent before them (which came back when the driver freed them), each in order", f.invalidSent)
	case f.invalidSent > 0 && f.invalidReturned > 0:
		s += fmt.Sprintf("; the %d invalid descriptors returned on the completion ring in their places", f.invalidSent)
	case f.invalidSent > 0:
		s += fmt.Sprintf("; none of the %d invalid descriptors returned on the completion ring (a kernel before the reclaim of invalid descriptors)", f.invalidSent)
	}
	if c := statsString(f.rxStats, true); c != "" {
		s += "; receiver " + c
	}
	if c := statsString(f.txStats, true); c != "" && f.held == nil {
		s += "; sender " + c
	}
	if f.prog != nil {
		s += "; program " + countsString(f.progWant)
	}
	return s
}

// send transmits f's descriptors, paced by what the receiver has taken,
// and checks that exactly the valid ones complete, in order.
func (t *tcase) send(f *flow, received *atomic.Int64) error {
	so := f.from
	s := so.s
	comp := &so.owner().s.Completion // a socket sharing a pool completes on its owner's ring
	mem := so.u.Mem()
	// sent are the descriptors submitted, in order; the completions must
	// be the valid ones' addresses, in the same order. Kernels with the
	// 2026 series "xsk: reclaim invalid Tx descriptors" also return each
	// invalid descriptor there, in its place, so that its frame can be
	// reused; older ones return none. Either is right, for all of them.
	// Such a kernel returns an invalid descriptor when it reads it off the
	// tx ring and a valid one when the driver frees its skb: where the
	// driver frees it at once (veth), each comes back in its place; where
	// it frees it later (virtio_net's tx interrupt), an invalid
	// descriptor can come back ahead of valid ones sent before it, but
	// never after a valid one sent after it, and the invalid ones and
	// the valid ones each stay in their order.
	// An invalid descriptor can have the address of the valid one after
	// it, so one completion does not always tell which kernel this is:
	// the three readings are followed, each with its own place in sent,
	// until the completions contradict one (none: sent's valid
	// descriptors; all: every descriptor; early: every descriptor, the
	// invalid ones possibly early). A completion all contradict fails.
	type submitted struct {
		addr  uint64
		valid bool
		nb    int
	}
	var sent []submitted
	// Pacing counts the frames sent that the receiver expects.
	wanted := make(map[uint32]bool, len(f.want)+len(f.alsoWant))
	for _, w := range append(f.want[:len(f.want):len(f.want)], f.alsoWant...) {
		wanted[w.nb] = true
	}
	pks := packets(f.pkts)
	pktOf := make([]int, len(f.pkts))      // the packet of each descriptor
	fragOff := make([]uint32, len(f.pkts)) // where in its frame each descriptor's bytes are
	for n, p := range pks {
		off := uint32(0)
		for d := p.first; d < p.first+p.n; d++ {
			pktOf[d], fragOff[d] = n, off
			off += f.pkts[d].len
		}
	}
	var frame []byte // the frame of the packet being written
	sentWanted, sentValid, i := 0, 0, 0
	// The two readings: jNone and jAll are their places in sent (the
	// next descriptor each expects), doneNone and doneAll the valid
	// descriptors each has seen completed.
	jNone, jAll, doneNone, doneAll := 0, 0, 0, 0
	noneOK, allOK := true, true
	// The early reading: vEarly and iEarly are the next valid and the
	// next invalid descriptor it expects, doneEarly and retEarly the valid
	// ones it has seen completed and the invalid ones returned.
	vEarly, iEarly, doneEarly, retEarly, earlyOK := 0, 0, 0, 0, true
	// An odd address that comes back with its lowest bit cleared is
	// counted apart, per reading (see oddAddrCleared), and taken as its
	// descriptor's.
	var clearedNone, clearedAll, clearedEarly oddCleared
	same := func(c *oddCleared, sentAddr, got uint64) bool {
		if sentAddr == got {
			return true
		}
		if sentAddr&1 == 1 && got == sentAddr&^1 {
			if c.n == 0 {
				c.sent, c.got = sentAddr, got
			}
			c.n++
			return true
		}
		return false
	}
	last := time.Now()
	progress := func() { last = time.Now() }
	reap := func() error {
		idx, n := comp.Peek(defaultRing)
		if f.readings != nil {
			for k := uint32(0); k < n; k++ {
				f.completions = append(f.completions, comp.Addr(idx+k))
			}
			if n > 0 {
				comp.Release(n)
				progress()
			}
			return nil
		}
		for k := uint32(0); k < n; k++ {
			addr := comp.Addr(idx + k)
			var wantNone, wantAll string
			var frameNone, frameAll int
			if noneOK {
				for jNone < len(sent) && !sent[jNone].valid {
					jNone++
				}
				switch {
				case jNone == len(sent):
					noneOK, wantNone, frameNone = false, fmt.Sprintf("%d completions", sentValid), -1
				case !same(&clearedNone, sent[jNone].addr, addr):
					noneOK, wantNone, frameNone = false, fmt.Sprintf("address %#x", sent[jNone].addr), sent[jNone].nb
				default:
					jNone++
					doneNone++
				}
			}
			if allOK {
				switch {
				case jAll == len(sent):
					allOK, wantAll, frameAll = false, fmt.Sprintf("%d completions", len(sent)), -1
				case !same(&clearedAll, sent[jAll].addr, addr):
					allOK, wantAll, frameAll = false, fmt.Sprintf("address %#x", sent[jAll].addr), sent[jAll].nb
				default:
					if sent[jAll].valid {
						doneAll++
					}
					jAll++
				}
			}
			var wantEarly string
			var frameEarly int
			if earlyOK {
				for vEarly < len(sent) && !sent[vEarly].valid {
					vEarly++
				}
				for iEarly < len(sent) && sent[iEarly].valid {
					iEarly++
				}
				switch {
				case iEarly < len(sent) && same(&clearedEarly, sent[iEarly].addr, addr):
					iEarly++
					retEarly++
				case vEarly < len(sent) && iEarly > vEarly && same(&clearedEarly, sent[vEarly].addr, addr):
					vEarly++
					doneEarly++
				case iEarly < len(sent) && iEarly < vEarly:
					earlyOK, wantEarly, frameEarly = false, fmt.Sprintf("address %#x", sent[iEarly].addr), sent[iEarly].nb
				case vEarly < len(sent):
					earlyOK, wantEarly, frameEarly = false, fmt.Sprintf("address %#x", sent[vEarly].addr), sent[vEarly].nb
				default:
					earlyOK, wantEarly, frameEarly = false, fmt.Sprintf("%d completions", len(sent)), -1
				}
			}
			if !noneOK && !allOK && !earlyOK {
				if wantAll == "" && wantNone == "" {
					// The other readings failed before: this completion
					// is the early reading's.
					return &Failure{Check: "completion ring order (invalid descriptors returned, some early)", Expected: wantEarly, Got: fmt.Sprintf("address %#x", addr), Frame: frameEarly}
				}
				if wantNone == "" {
					// The first reading failed before: this completion
					// is the second's.
					return &Failure{Check: "completion ring order (invalid descriptors returned)", Expected: wantAll, Got: fmt.Sprintf("address %#x", addr), Frame: frameAll}
				}
				if wantAll == "" || wantAll == wantNone {
					return &Failure{Check: "completion ring order", Expected: wantNone, Got: fmt.Sprintf("address %#x", addr), Frame: frameNone}
				}
				return &Failure{Check: "completion ring order", Expected: wantNone + " (or " + wantAll + " with invalid descriptors returned)",
					Got: fmt.Sprintf("address %#x", addr), Frame: frameNone}
			}
		}
		if n > 0 {
			comp.Release(n)
			progress()
		}
		return nil
	}
	// completed is the valid descriptors completed: while more than one
	// reading holds, the smallest count.
	completed := func() int {
		if f.readings != nil {
			return min(len(f.completions), sentValid)
		}
		done := -1
		for _, r := range []struct {
			ok bool
			n  int
		}{{noneOK, doneNone}, {allOK, doneAll}, {earlyOK, doneEarly}} {
			if r.ok && (done < 0 || r.n < done) {
				done = r.n
			}
		}
		return max(done, 0)
	}
	inflight := func() int { return sentValid - completed() }
	kick := func() error {
		if s.Tx.NeedWakeup() {
			return s.WakeTx()
		}
		return nil
	}
	idle := func(what string) error {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		if time.Since(last) > idleTimeout {
			return &Failure{Check: "transmit " + what, Expected: "progress", Got: fmt.Sprintf("none for %v: %d of %d descriptors submitted, %d completed, %d frames received",
				idleTimeout, i, len(f.pkts), completed(), received.Load()), Frame: -1}
		}
		// While the kernel has descriptors to take, the next kick is
		// not delayed: a sendto in copy mode stops at an invalid
		// descriptor, so such a stream takes a kick every few.
		if s.Tx.Pending() == 0 {
			time.Sleep(10 * time.Microsecond)
		}
		return nil
	}
	for i < len(f.pkts) {
		if err := reap(); err != nil {
			return err
		}
		r := int(received.Load())
		paced := f.rxCap == 0 || r < f.rxCap
		if (paced && sentWanted-r >= f.window) || inflight()+int(f.batch) > int(so.spec.txFrames) {
			if err := kick(); err != nil {
				return err
			}
			if err := idle("pacing"); err != nil {
				return err
			}
			continue
		}
		// A batch ends with a packet's last descriptor, unless one
		// packet is longer than a batch.
		n := min(f.batch, uint32(len(f.pkts)-i))
		for n > 0 && f.pkts[i+int(n)-1].opts&xsk.PacketContinues != 0 && !f.pkts[i+int(n)-1].last && i+int(n) < len(f.pkts) {
			n--
		}
		if n == 0 {
			p := pks[pktOf[i]]
			n = uint32(p.first + p.n - i)
		}
		idx, got := s.Tx.Reserve(n)
		if got < n {
			s.Tx.Cancel(got)
			if f.txPoll {
				if _, err := s.Poll(1000, true); err != nil {
					return err
				}
			} else if err := kick(); err != nil {
				return err
			}
			if err := idle("ring"); err != nil {
				return err
			}
			continue
		}
		for k := uint32(0); k < got; k++ {
			p := f.pkts[i+int(k)]
			addr := p.addr
			if !p.abs {
				addr = uint64(int64(so.txBase(so.txNext)) + p.off)
				if p.valid {
					so.txNext++
				}
			}
			d := i + int(k)
			pk := pks[pktOf[d]]
			if p.valid && pk.valid {
				if fragOff[d] == 0 {
					frame = append(frame[:0], make([]byte, pk.len)...)
					writeFrame(frame, f.to.end.MAC, so.end.MAC, uint32(pktOf[d]))
					if f.selector != nil {
						frame[selectorByte] = f.selector(uint32(pktOf[d]))
					}
				}
				a := xsk.DataAddr(addr)
				copy(mem[a:a+uint64(p.len)], frame[fragOff[d]:])
			}
			if p.valid {
				sentValid++
			}
			if d == pk.first+pk.n-1 && wanted[uint32(pktOf[d])] {
				sentWanted++
			}
			sent = append(sent, submitted{addr: addr, valid: p.valid, nb: pktOf[d]})
			f.sentAddrs = append(f.sentAddrs, addr)
			s.Tx.SetOptions(idx+k, addr, p.len, p.opts)
		}
		s.Tx.Submit(got)
		i += int(got)
		progress()
		if f.checkConsumer {
			f.checkConsumer = false
			before := s.Tx.Pending()
			if err := s.WakeTx(); err != nil {
				return err
			}
			taken := before - s.Tx.Pending()
			switch {
			case before <= txBudget || taken == txBudget:
			case taken == 0 && !consumerPublished():
				// The kernel took the budget but keeps the consumer
				// in its cache until the next sendto reads the ring.
				f.consumerLate = true
			default:
				return &Failure{Check: "descriptors one sendto took off the tx ring", Expected: fmt.Sprintf("%d (the copy-mode budget) of %d", txBudget, before),
					Got: fmt.Sprint(taken), Frame: -1}
			}
		}
		if f.txPoll {
			ok, err := s.Poll(1000, true)
			if err != nil {
				return err
			}
			if !ok {
				return &Failure{Check: "poll(POLLOUT) after a batch", Expected: "ready within 1 s", Got: "timed out", Frame: i - 1}
			}
		} else if err := kick(); err != nil {
			return err
		}
	}
	// Until every valid descriptor completed and the kernel took every
	// descriptor off the tx ring: invalid ones after the last valid one
	// are read (and counted in tx_invalid_descs) only by a later sendto.
	busy := func() bool { return inflight() > 0 || s.Tx.Pending() > 0 }
	if f.readings != nil {
		// Each reading has at least the valid descriptors' completions.
		fewest := len(f.readings[0].completions)
		for _, r := range f.readings[1:] {
			fewest = min(fewest, len(r.completions))
		}
		busy = func() bool { return len(f.completions) < fewest || s.Tx.Pending() > 0 }
	}
	for busy() {
		if err := kick(); err != nil {
			return err
		}
		if err := reap(); err != nil {
			return err
		}
		if busy() {
			if err := idle("completions"); err != nil {
				return err
			}
		}
	}
	time.Sleep(settle)
	if err := reap(); err != nil {
		return err
	}
	if f.readings != nil {
		for i, r := range f.readings {
			if r.matches(f.completions) {
				f.compReading.Store(int32(i + 1))
				break
			}
		}
		return nil
	}
	invalid := len(sent) - sentValid
	returned := 0
	switch {
	case allOK && jAll == len(sent):
		returned = invalid
		f.oddCleared = clearedAll
	case noneOK && doneNone == sentValid:
		f.oddCleared = clearedNone
	case earlyOK && doneEarly == sentValid && retEarly == invalid:
		returned = invalid
		f.invalidEarly = true
		f.oddCleared = clearedEarly
	default:
		// Every valid descriptor completed under the reading that
		// holds, yet it saw not all of them: only the reading of all
		// returned can be left, short of invalid ones.
		f.completionFailure = &Failure{Check: "invalid descriptors on the completion ring", Expected: fmt.Sprintf("all %d in their places (kernels that reclaim them) or none (older kernels)", invalid),
			Got: fmt.Sprintf("%d of %d descriptors completed", jAll, len(sent)), Frame: -1}
	}
	f.invalidSent, f.invalidReturned = invalid, returned
	return nil
}

// rxSide is one receiving socket of a flow and the frames it expects.
type rxSide struct {
	so    *sock
	want  []rxWant
	got   int
	frame []byte // the frame received so far, over its buffers
	frags int
	// alts, where the flow has readings, are their frames (want is
	// alts[cur]): a frame that want does not expect next but another
	// reading that expected the same before does, moves to it.
	alts [][]rxWant
	cur  int
}

// switchTo moves sd to another reading that expected the frames received
// so far and expects b next; it reports whether there is one.
func (sd *rxSide) switchTo(b []byte, dst, src net.HardwareAddr) bool {
	for j, alt := range sd.alts {
		if j != sd.cur && len(alt) > sd.got && slices.Equal(alt[:sd.got], sd.want[:sd.got]) &&
			checkGrown(b, alt[sd.got], dst, src) == nil {
			sd.want, sd.cur = alt, j
			return true
		}
	}
	return false
}

// longerSwitch moves sd to another reading that expected the frames
// received so far and expects more; it reports whether there is one.
func (sd *rxSide) longerSwitch() bool {
	j := sd.longerAlt()
	if j >= 0 {
		sd.want, sd.cur = sd.alts[j], j
	}
	return j >= 0
}

// longer reports whether another reading expected the frames received so
// far and expects more.
func (sd *rxSide) longer() bool { return sd.longerAlt() >= 0 }

// longerAlt is the first other reading that expected the frames received
// so far and expects more, -1 if none.
func (sd *rxSide) longerAlt() int {
	for j, alt := range sd.alts {
		if j != sd.cur && len(alt) > sd.got && slices.Equal(alt[:sd.got], sd.want[:sd.got]) {
			return j
		}
	}
	return -1
}

// sides are the flow's receiving sockets: to, and also if set.
func (f *flow) sides() []*rxSide {
	out := []*rxSide{{so: f.to, want: f.want}}
	for _, r := range f.readings {
		out[0].alts = append(out[0].alts, r.want)
	}
	if f.also != nil {
		out = append(out, &rxSide{so: f.also, want: f.alsoWant})
	}
	return out
}

// receive takes f's frames off the receivers' rx rings and checks each, in
// order, until they have them all or stop is closed.
func (t *tcase) receive(f *flow, received *atomic.Int64, stop <-chan struct{}) error {
	sides := f.sides()
	done := func() bool {
		for _, sd := range sides {
			if sd.got < len(sd.want) {
				return false
			}
			// A reading that expects more is waited for until the
			// completions say which reading this kernel's is.
			if sd.longer() && int(f.compReading.Load()) != sd.cur+1 {
				return false
			}
		}
		return true
	}
	defer func() { f.rxCur = sides[0].cur }()
	for !done() {
		select {
		case <-stop:
			for _, sd := range sides {
				if sd.got < len(sd.want) {
					return &Failure{Check: "frames received on " + sd.so.label(), Expected: fmt.Sprintf("%d frames", len(sd.want)),
						Got: fmt.Sprintf("%d, then none for %v", sd.got, idleTimeout), Frame: int(sd.want[sd.got].nb)}
				}
			}
			// Every frame the current reading wants came, and the
			// completions never said whether a reading that wants
			// more is the kernel's: the sender's check of them names
			// what came.
			return nil
		default:
		}
		busy := false
		for _, sd := range sides {
			n, err := t.receiveBatch(f, sd, received)
			if err != nil {
				return err
			}
			busy = busy || n > 0
		}
		if !busy {
			time.Sleep(10 * time.Microsecond)
		}
	}
	return nil
}

// receiveBatch takes one batch off sd's rx ring and checks it; it returns
// how many descriptors it took.
func (t *tcase) receiveBatch(f *flow, sd *rxSide, received *atomic.Int64) (uint32, error) {
	so := sd.so
	s := so.s
	pool := so.owner().s // whose fill ring feeds this socket
	fs := uint64(so.spec.frameSize)
	rxPart := uint64(so.owner().spec.rxFrames) * fs
	wantOff := uint64(so.spec.headroom) + xsk.KernelHeadroom
	if f.rxPoll {
		if _, err := s.Poll(100, false); err != nil {
			return 0, err
		}
	} else if pool.Fill.NeedWakeup() {
		if err := s.WakeRx(); err != nil {
			return 0, err
		}
	}
	idx, n := s.Rx.Peek(f.batch)
	if n == 0 {
		return 0, nil
	}
	var fidx uint32
	if !f.noRefill {
		var fn uint32
		fidx, fn = pool.Fill.Reserve(n)
		if fn != n {
			pool.Fill.Cancel(fn)
			return 0, fmt.Errorf("fill ring: room for %d of %d frames", fn, n)
		}
	}
	for k := uint32(0); k < n; k++ {
		d := *s.Rx.Desc(idx + k)
		if sd.got >= len(sd.want) && sd.frags == 0 && !sd.longerSwitch() {
			return 0, &Failure{Check: "frames received on " + so.label(), Expected: fmt.Sprintf("%d frames", len(sd.want)),
				Got: fmt.Sprintf("more: a frame of %d bytes at %#x", d.Len, d.Addr), Frame: -1}
		}
		w := sd.want[sd.got]
		base := so.u.FrameBase(d.Addr)
		off := xsk.DataAddr(d.Addr) - base
		switch {
		case d.Options&^xsk.PacketContinues != 0 || (d.Options != 0 && !so.spec.sg):
			want := "0"
			if so.spec.sg {
				want = "0 or XDP_PKT_CONTD"
			}
			return 0, &Failure{Check: "descriptor options", Expected: want, Got: fmt.Sprintf("%#x", d.Options), Frame: int(w.nb)}
		case base%fs != 0 || base >= rxPart:
			return 0, &Failure{Check: "buffer address", Expected: fmt.Sprintf("a fill-ring buffer (a multiple of %d below %#x)", fs, rxPart),
				Got: fmt.Sprintf("%#x", base), Frame: int(w.nb)}
		case off != wantOff:
			return 0, &Failure{Check: "offset of the data in its buffer", Expected: fmt.Sprintf("%d (UMEM headroom %d + XDP_PACKET_HEADROOM %d)", wantOff, so.spec.headroom, xsk.KernelHeadroom),
				Got: fmt.Sprint(off), Frame: int(w.nb)}
		}
		if f.noRefill {
			pool.Frames.Push(base)
		} else {
			pool.Fill.Set(fidx+k, base)
		}
		if f.metadata && sd.frags == 0 {
			if err := checkMetadata(so, d.Addr, w.nb); err != nil {
				return 0, err
			}
		}
		sd.frame = append(sd.frame, so.u.Frame(d.Addr, d.Len)...)
		sd.frags++
		if d.Options&xsk.PacketContinues != 0 {
			continue
		}
		m := checkGrown(sd.frame, w, so.end.MAC, f.from.end.MAC)
		if m != nil && sd.switchTo(sd.frame, so.end.MAC, f.from.end.MAC) {
			m, w = nil, sd.want[sd.got]
		}
		if later, ok := laterFrame(sd.frame, sd.want[sd.got:]); m != nil && ok {
			return 0, &Failure{Check: "frames received on " + so.label(), Expected: fmt.Sprintf("frame %d", w.nb),
				Got: fmt.Sprintf("frame %d: %d missing before it", later, int(later)-int(w.nb)), Frame: int(w.nb)}
		}
		if m != nil {
			if sd.frags > 1 {
				m.What += fmt.Sprintf(" (over %d buffers)", sd.frags)
			}
			return 0, &Failure{Check: "frame " + m.What, Expected: m.Expected, Got: m.Got, Frame: int(w.nb)}
		}
		sd.frame, sd.frags = sd.frame[:0], 0
		sd.got++
		received.Add(1)
	}
	if !f.noRefill {
		pool.Fill.Submit(n)
	}
	if !f.noRelease {
		s.Rx.Release(n)
	}
	return n, nil
}

// settleExtra waits a moment and fails if a receiver got frames it did
// not expect.
func (t *tcase) settleExtra(f *flow) error {
	time.Sleep(settle)
	for _, sd := range f.sides() {
		s := sd.so.s
		if sd.so.owner().s.Fill.NeedWakeup() {
			if err := s.WakeRx(); err != nil {
				return err
			}
		}
		idx, n := s.Rx.Peek(1)
		if n == 0 {
			continue
		}
		d := s.Rx.Desc(idx)
		s.Rx.Unpeek(n)
		return &Failure{Check: "frames received on " + sd.so.label(), Expected: fmt.Sprintf("%d frames", len(sd.want)),
			Got: fmt.Sprintf("more: a frame of %d bytes at %#x", d.Len, d.Addr), Frame: -1}
	}
	return nil
}

// statsDelta is cur - before, field by field.
func statsDelta(cur, before xsk.Statistics) xsk.Statistics {
	return xsk.Statistics{
		RxDropped:            cur.RxDropped - before.RxDropped,
		RxInvalidDescs:       cur.RxInvalidDescs - before.RxInvalidDescs,
		TxInvalidDescs:       cur.TxInvalidDescs - before.TxInvalidDescs,
		RxRingFull:           cur.RxRingFull - before.RxRingFull,
		RxFillRingEmptyDescs: cur.RxFillRingEmptyDescs - before.RxFillRingEmptyDescs,
	}
}

// statsString lists the compared counters; with nonZero only those not 0.
func statsString(s xsk.Statistics, nonZero bool) string {
	var out []string
	for _, c := range []struct {
		name string
		v    uint64
	}{{"rx_dropped", s.RxDropped}, {"rx_invalid_descs", s.RxInvalidDescs}, {"rx_ring_full", s.RxRingFull},
		{"rx_fill_ring_empty_descs", s.RxFillRingEmptyDescs}, {"tx_invalid_descs", s.TxInvalidDescs}} {
		if !nonZero || c.v != 0 {
			out = append(out, fmt.Sprintf("%s=%d", c.name, c.v))
		}
	}
	return strings.Join(out, " ")
}

// waitStats reads s's counters until they are before+want, or fails with
// what they were after idleTimeout.
func waitStats(s *xsk.Socket, role string, before, want xsk.Statistics) error {
	return waitStatsMatch(s, role, before, func(d xsk.Statistics) bool { return d == want }, statsString(want, false))
}

// waitStatsMatch reads s's counters until match takes what they added
// since before, or fails after idleTimeout saying that expected was not
// met.
func waitStatsMatch(s *xsk.Socket, role string, before xsk.Statistics, match func(xsk.Statistics) bool, expected string) error {
	deadline := time.Now().Add(idleTimeout)
	for {
		cur, err := s.Statistics()
		if err != nil {
			return err
		}
		d := statsDelta(cur, before)
		if match(d) {
			return nil
		}
		if time.Now().After(deadline) {
			return &Failure{Check: "XDP_STATISTICS of the " + role + " socket", Expected: expected, Got: statsString(d, false), Frame: -1}
		}
		time.Sleep(time.Millisecond)
	}
}

func countsString(c bpf.SelftestCounts) string {
	s := fmt.Sprintf("redirected=%d dropped=%d other_queue=%d no_socket=%d", c.Redirected, c.Dropped, c.OtherQueue, c.NoSocket)
	if c.AdjustFailed != 0 {
		s += fmt.Sprintf(" adjust_tail_failed=%d (error %d)", c.AdjustFailed, c.AdjustErr)
	}
	return s
}

// countsDelta is what the program counted from before to cur; the last
// adjust_tail error is cur's, where it failed since.
func countsDelta(cur, before bpf.SelftestCounts) bpf.SelftestCounts {
	d := bpf.SelftestCounts{Redirected: cur.Redirected - before.Redirected, Dropped: cur.Dropped - before.Dropped,
		OtherQueue: cur.OtherQueue - before.OtherQueue, NoSocket: cur.NoSocket - before.NoSocket,
		AdjustFailed: cur.AdjustFailed - before.AdjustFailed}
	if d.AdjustFailed != 0 {
		d.AdjustErr = cur.AdjustErr
	}
	return d
}

// checkGrown checks a received frame against w, which the program may
// have grown or shrunk.
func checkGrown(b []byte, w rxWant, dst, src net.HardwareAddr) *mismatch {
	if w.sent == 0 || w.sent >= w.len {
		return checkFrame(b, int(w.len), dst, src, w.nb)
	}
	if len(b) != int(w.len) {
		return &mismatch{"length", fmt.Sprintf("%d bytes (%d grown by %d)", w.len, w.sent, w.len-w.sent), fmt.Sprintf("%d bytes", len(b))}
	}
	if m := checkFrame(b[:w.sent], int(w.sent), dst, src, w.nb); m != nil {
		return m
	}
	for j := w.sent; j < w.len; j++ {
		if b[j] != 0 {
			return &mismatch{fmt.Sprintf("byte %d, grown by the program", j), "0", fmt.Sprint(b[j])}
		}
	}
	return nil
}

// otherQueueHint explains a failure where test frames arrived on a queue
// other than 0: the device's RSS put the test's flow elsewhere.
const otherQueueHint = ": test frames arrived on other queues than 0 (steer them to queue 0: ethtool -X DEV equal 1, or ethtool -L DEV combined 1)"

// waitCounts reads the program's counts until they are before+want.
func waitCounts(st *steer, before, want bpf.SelftestCounts) error {
	deadline := time.Now().Add(idleTimeout)
	for {
		cur, err := st.prog.Counts()
		if err != nil {
			return err
		}
		d := countsDelta(cur, before)
		if d == want {
			return nil
		}
		if time.Now().After(deadline) {
			f := &Failure{Check: "steering program counts on " + st.end.Name, Expected: countsString(want), Got: countsString(d), Frame: -1}
			if d.OtherQueue > 0 {
				f.Check += otherQueueHint
			}
			return f
		}
		time.Sleep(time.Millisecond)
	}
}

// probeMode says why no test can run in mode m on p, nil if they may.
func probeMode(p Pair, m Mode) error {
	if m == SKB {
		return nil
	}
	for _, e := range []End{p.Rx, p.Tx} {
		var feat netdev.DevFeatures
		err := e.do(func() (err error) {
			feat, err = netdev.Features(e.Index)
			return err
		})
		if errors.Is(err, netdev.ErrNoXDPFeatures) {
			if gap := zeroCopyGap(e); m == ZC && gap != "" {
				return skipf("%s has no AF_XDP zero-copy: %s", e.Name, gap)
			}
			continue // the tests find out
		}
		if err != nil {
			return err
		}
		if !feat.XDP.Has(netdev.XDPBasic) {
			return skipf("%s has no native XDP (XDP features: %s)", e.Name, feat.XDP)
		}
		if m == ZC && !feat.XDP.Has(netdev.XDPXSKZeroCopy) {
			if gap := zeroCopyGap(e); gap != "" {
				return skipf("%s has no AF_XDP zero-copy (XDP features: %s): %s", e.Name, feat.XDP, gap)
			}
			return skipf("%s has no AF_XDP zero-copy (XDP features: %s)", e.Name, feat.XDP)
		}
	}
	return nil
}

// txBudget is how many descriptors the kernel sends per sendto in copy
// mode (MAX_PER_SOCKET_BUDGET).
const txBudget = 32

// consumerFix is the Linux release from which a copy-mode sendto that
// stops at its budget publishes the tx ring's consumer before it returns
// ("net: xsk: update tx queue consumer immediately after transmission",
// merged for 6.17). Before it, __xsk_generic_xmit keeps the consumer in
// its cache (xskq_cons_release) and writes it to the ring only when it
// next runs out of cached entries (xskq_cons_get_entries), in the next
// sendto: the sender sees none of the budget taken until then.
var consumerFix = [2]int{6, 17}

// consumerPublished reports whether the running kernel is consumerFix or
// newer; a release it cannot read counts as newer (the check then holds).
func consumerPublished() bool {
	ok, _ := kernelAtLeast(consumerFix)
	return ok
}

// kernelRelease is the running kernel's release ("" if unreadable).
func kernelRelease() string {
	_, rel := kernelAtLeast([2]int{})
	return rel
}

// kernelAtLeast reports whether the running kernel is release v or newer,
// and its release string; an unreadable release counts as newer.
func kernelAtLeast(v [2]int) (bool, string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return true, ""
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return true, rel
	}
	return major > v[0] || major == v[0] && minor >= v[1], rel
}

// jumboMTU is the MTU of the multi-buffer tests (MAX_ETH_JUMBO_SIZE).
const jumboMTU = 9000

// needMTU makes both ends' MTU at least mtu for the test: on the run's own
// devices it raises it and puts it back when the test ends; on others a
// smaller MTU skips the test.
func (t *tcase) needMTU(mtu int) error {
	for _, e := range []End{t.pair.Tx, t.pair.Rx} {
		var cur int
		err := e.do(func() error {
			l, err := netlink.LinkByIndex(e.Index)
			if err != nil {
				return err
			}
			cur = l.Attrs().MTU
			if cur >= mtu || !t.pair.Own {
				return nil
			}
			if err := netlink.LinkSetMTU(l, mtu); err != nil {
				return fmt.Errorf("set the MTU of %s to %d: %w", e.Name, mtu, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if cur >= mtu {
			continue
		}
		if !t.pair.Own {
			return skipf("needs an MTU of %d on %s, which has %d (ip link set %s mtu %d); selftest does not change a device it did not make", mtu, e.Name, cur, e.Name, mtu)
		}
		t.onClose(func() error {
			return e.do(func() error {
				l, err := netlink.LinkByIndex(e.Index)
				if err != nil {
					return err
				}
				return netlink.LinkSetMTU(l, cur)
			})
		})
	}
	return nil
}

// multiBufferSockets is the release that brought multi-buffer AF_XDP
// sockets.
var multiBufferSockets = [2]int{6, 6}

// multiBuffer skips a multi-buffer test where the device cannot take
// multi-buffer frames in the test's mode.
func (t *tcase) multiBuffer() error {
	if ok, rel := kernelAtLeast(multiBufferSockets); !ok {
		return skipf("multi-buffer AF_XDP sockets (XDP_USE_SG) came with Linux %d.%d; this is Linux %s", multiBufferSockets[0], multiBufferSockets[1], rel)
	}
	if t.mode == SKB {
		return nil
	}
	for _, e := range []End{t.pair.Rx, t.pair.Tx} {
		var feat netdev.DevFeatures
		err := e.do(func() (err error) {
			feat, err = netdev.Features(e.Index)
			return err
		})
		if errors.Is(err, netdev.ErrNoXDPFeatures) {
			return skipf("the kernel does not report whether %s takes multi-buffer frames (XDP features came with Linux 6.3)", e.Name)
		}
		if err != nil {
			return err
		}
		if !feat.XDP.Has(netdev.XDPRxSG) {
			return skipf("%s has no multi-buffer XDP (rx-sg not among its XDP features: %s)", e.Name, feat.XDP)
		}
		if t.mode == ZC && feat.ZCMaxSegs <= 1 {
			return skipf("%s has no multi-buffer zero-copy (xdp-zc-max-segs %d)", e.Name, feat.ZCMaxSegs)
		}
	}
	return nil
}

// checkMetadata checks the metadata the program put in front of frame nb
// (XDP_METADATA_COPY): its number, as a 64-bit integer in host order.
func checkMetadata(so *sock, addr uint64, nb uint32) error {
	a := xsk.DataAddr(addr)
	if a < metadataLen {
		return &Failure{Check: "metadata", Expected: "room in front of the frame", Got: fmt.Sprintf("data at %#x", a), Frame: int(nb)}
	}
	if got := binary.NativeEndian.Uint64(so.u.Mem()[a-metadataLen:]); got != uint64(nb) {
		return &Failure{Check: "metadata in front of the frame", Expected: fmt.Sprint(nb), Got: fmt.Sprint(got), Frame: int(nb)}
	}
	return nil
}

// metadataLen is the metadata xsk_selftest.c puts in front of a frame.
const metadataLen = 8

// openShared makes a socket that shares parent's buffer pool, on the same
// device and queue (XDP_SHARED_UMEM).
func (t *tcase) openShared(parent *sock, rx, tx bool, name string) (*sock, error) {
	spec := parent.spec
	spec.rx, spec.tx = rx, tx
	so := &sock{end: parent.end, spec: spec, u: parent.u, huge: parent.huge, pool: parent, name: name}
	err := parent.end.do(func() error {
		cfg := xsk.SocketConfig{Ifindex: parent.end.Index, Queue: 0, Mode: t.mode.bindMode(), NeedWakeup: true, SharePool: true, MultiBuffer: spec.sg}
		if rx {
			cfg.RxSize = spec.rxRing
		}
		if tx {
			cfg.TxSize = defaultRing
		}
		s, err := xsk.NewSocket(parent.u, cfg)
		if err != nil {
			return err
		}
		so.s = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open AF_XDP socket sharing the buffer pool of %s: %w", parent.label(), err)
	}
	t.onClose(so.s.Close)
	return so, nil
}

// laterFrame reports whether b is, by its first word, one of the frames
// want expects after the first, with a higher number: the ones before it
// went missing (a lower number is a frame out of order).
func laterFrame(b []byte, want []rxWant) (uint32, bool) {
	if len(b) < headerLen+4 || len(want) < 2 || binary.BigEndian.Uint16(b[12:14]) != etherType {
		return 0, false
	}
	w0 := binary.BigEndian.Uint32(b[headerLen:])
	if w0&0xffff != 0 {
		return 0, false
	}
	nb := w0 >> 16
	for _, w := range want[1:] {
		if w.nb == nb && nb > want[0].nb {
			return nb, true
		}
	}
	return 0, false
}

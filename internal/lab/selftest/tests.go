package selftest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/xsk"
)

// catalogue is every test offered, in xskxceiver's order where it has one.
var catalogue = []Test{
	{"SEND_RECEIVE", "4096 frames of 64 bytes, 4 KiB frames: each received whole and in order, each completion in order, every counter 0", func(t *tcase) (string, error) {
		return t.sendReceive(sockSpec{}, sockSpec{}, stream(defaultPackets, minFrameLen), nil)
	}},
	{"SEND_RECEIVE_2K_FRAME", "as SEND_RECEIVE with 2 KiB UMEM frames on both sides", func(t *tcase) (string, error) {
		return t.sendReceive(sockSpec{frameSize: 2048}, sockSpec{frameSize: 2048}, stream(defaultPackets, minFrameLen), nil)
	}},
	{"SEND_RECEIVE_SINGLE_PKT", "a single frame of 64 bytes arrives, and nothing else", func(t *tcase) (string, error) {
		return t.sendReceive(sockSpec{}, sockSpec{}, stream(1, minFrameLen), nil)
	}},
	{"POLL_RX", "as SEND_RECEIVE, the receiver waiting in poll(POLLIN)", func(t *tcase) (string, error) {
		return t.sendReceive(sockSpec{}, sockSpec{}, stream(defaultPackets, minFrameLen), func(f *flow) { f.rxPoll = true })
	}},
	{"POLL_TX", "as SEND_RECEIVE, the sender waking the kernel with poll(POLLOUT), which must report room after every batch", func(t *tcase) (string, error) {
		return t.sendReceive(sockSpec{}, sockSpec{}, stream(defaultPackets, minFrameLen), func(f *flow) { f.txPoll = true })
	}},
	{"POLL_RXQ_FULL", "poll(POLLIN) on a socket nothing is sent to times out; its rx ring stays empty, its counters 0", (*tcase).pollRxTimeout},
	{"POLL_TXQ_FULL", "with the completion ring full and a full tx ring, poll(POLLOUT) times out and the kernel takes no descriptor; once completions are reaped, poll sends again and reports room when at most half the ring is pending; all 4096 complete in order", (*tcase).pollTxFull},
	{"SEND_RECEIVE_UNALIGNED", "unaligned chunk mode: every second frame sent from 32 bytes before a frame boundary, straddling it", func(t *tcase) (string, error) {
		pkts := stream(defaultPackets, minFrameLen)
		for i := 1; i < len(pkts); i += 2 {
			pkts[i].off = -minFrameLen / 2
		}
		return t.sendReceive(sockSpec{unaligned: true}, sockSpec{unaligned: true}, pkts, nil)
	}},
	{"ALIGNED_INV_DESC", "tx descriptors at the corners of the UMEM (address 0, its last bytes, past its end, straddling its start or end or a frame, too long): the valid ones arrive in order, tx_invalid_descs counts each invalid one", func(t *tcase) (string, error) {
		return t.invalidDescs(sockSpec{})
	}},
	{"ALIGNED_INV_DESC_2K_FRAME_SIZE", "as ALIGNED_INV_DESC with 2 KiB frames (a descriptor straddling 2 KiB is then invalid)", func(t *tcase) (string, error) {
		return t.invalidDescs(sockSpec{frameSize: 2048})
	}},
	{"UNALIGNED_INV_DESC", "as ALIGNED_INV_DESC in unaligned chunk mode (straddling a frame is then valid)", func(t *tcase) (string, error) {
		return t.invalidDescs(sockSpec{unaligned: true})
	}},
	{"UNALIGNED_INV_DESC_4001_FRAME_SIZE", "as UNALIGNED_INV_DESC with 4001-byte frames, so that the UMEM's end is not a page's: a descriptor straddling it is invalid, one up to it valid", func(t *tcase) (string, error) {
		return t.invalidDescs(sockSpec{unaligned: true, frameSize: 4001})
	}},
	{"UMEM_HEADROOM", "as SEND_RECEIVE with a UMEM headroom of 128 bytes on the receiver: each frame's data starts 128 + 256 bytes into its buffer", func(t *tcase) (string, error) {
		return t.sendReceive(sockSpec{}, sockSpec{headroom: 128}, stream(defaultPackets, minFrameLen), nil)
	}},
	{"TEARDOWN", "SEND_RECEIVE 10 times, the sockets and UMEMs made and closed each time", (*tcase).teardown},
	{"BIDIRECTIONAL", "sockets with rx and tx rings on both devices: SEND_RECEIVE one way, then back the other way on the same sockets", (*tcase).bidirectional},
	{"STAT_RX_DROPPED", "every second frame (1024 bytes) does not fit the receiver's buffers after its largest UMEM headroom: the others arrive, rx_dropped counts each of those", (*tcase).statRxDropped},
	{"STAT_TX_INVALID", "every second descriptor is longer than a frame (9001 bytes): the others arrive, tx_invalid_descs counts each long one", func(t *tcase) (string, error) {
		pkts := stream(defaultPackets, minFrameLen)
		// Each long one starts a frame of the sender's receive part,
		// which a socket without an rx ring never uses: no valid
		// descriptor has its address, so each completion says which
		// descriptor it is.
		for i := 1; i < len(pkts); i += 2 {
			pkts[i] = txPkt{abs: true, addr: uint64(i/2%defaultFrames) * defaultFrameSize, len: 9001}
		}
		return t.sendReceive(sockSpec{}, sockSpec{}, pkts, func(f *flow) { f.txStats.TxInvalidDescs = defaultPackets / 2 })
	}},
	{"STAT_RX_FULL", "1536 frames to a receiver that never releases its rx ring of 1024: the first 1024 arrive, rx_ring_full counts each of the other 512 (in zero-copy: some of them)", func(t *tcase) (string, error) {
		n := defaultFrames + defaultFrames/2
		pkts := stream(n, minFrameLen)
		return t.sendReceive(sockSpec{}, sockSpec{rxRing: defaultFrames}, pkts, func(f *flow) {
			f.want = expected(pkts)[:defaultFrames]
			f.noRelease, f.rxCap = true, defaultFrames
			f.rxStats.RxRingFull = uint64(n - defaultFrames)
			if t.mode == ZC {
				// The NIC may drop some of the 512 for want of a
				// buffer in its own ring first, counted or not.
				f.rxStatsMatch = func(d xsk.Statistics) bool {
					return d.RxRingFull > 0 && d.RxRingFull <= uint64(n-defaultFrames) && d.RxInvalidDescs == 0 && d.TxInvalidDescs == 0
				}
				f.rxStatsExpected = fmt.Sprintf("rx_ring_full above 0 and at most %d, rx_dropped and rx_fill_ring_empty_descs any (in zero-copy the NIC drops what has no buffer), the others 0", n-defaultFrames)
			}
		})
	}},
	{"STAT_FILL_EMPTY", "1536 frames to a receiver that never refills its 1024 buffers: the first 1024 arrive, rx_fill_ring_empty_descs and rx_dropped count each of the other 512 (in zero-copy: rx_fill_ring_empty_descs above 0, and the program sees only the 1024 that had a buffer)", func(t *tcase) (string, error) {
		n := defaultFrames + defaultFrames/2
		pkts := stream(n, minFrameLen)
		return t.sendReceive(sockSpec{}, sockSpec{}, pkts, func(f *flow) {
			f.want = expected(pkts)[:defaultFrames]
			f.noRefill, f.rxCap = true, defaultFrames
			f.rxStats.RxFillRingEmptyDescs = uint64(n - defaultFrames)
			f.rxStats.RxDropped = uint64(n - defaultFrames)
			if t.mode == ZC {
				// A zero-copy driver finds the fill ring empty as
				// often as it tries to refill its own ring, and the
				// NIC drops the frames it has no buffer for before
				// the socket sees them: xskxceiver checks the same.
				f.rxStatsMatch = func(d xsk.Statistics) bool {
					return d.RxFillRingEmptyDescs > 0 && d.RxInvalidDescs == 0 && d.RxRingFull == 0 && d.TxInvalidDescs == 0
				}
				f.rxStatsExpected = "rx_fill_ring_empty_descs above 0, rx_dropped any (in zero-copy the NIC drops what has no buffer), the others 0"
				// The program runs on zero-copy buffers only: it
				// sees the frames the fill ring gave buffers for.
				f.progWant.Redirected = defaultFrames
			}
		})
	}},
	{"XDP_PROG_CLEANUP", "two sockets on queue 0 sharing a buffer pool, at keys 0 and 1: traffic to the first; then the second alone at key 0 and traffic to it from a second sender sharing the first's pool: each time only the socket at key 0 receives, all frames whole and in order", (*tcase).progCleanup},
	{"XDP_DROP_HALF", "the steering program drops every second frame (XDP_DROP): the others arrive in order, the program counts 2048 of each", (*tcase).dropHalf},
	{"XDP_SHARED_UMEM", "two receiving sockets on queue 0 sharing one buffer pool, the program sending even frames to one and odd to the other; sent by a socket and then by a second one sharing its pool: each receiver gets its half, whole and in order", (*tcase).sharedUmem},
	{"XDP_METADATA_COPY", "the program puts each frame's number in 8 bytes of metadata in front of it: the receiver finds it there, and the frame whole", func(t *tcase) (string, error) {
		tx, rx, st, err := t.openPair(sockSpec{}, sockSpec{}, bpf.SelftestOptions{Metadata: true})
		if err != nil {
			return "", err
		}
		return t.run(t.newFlow(tx, rx, st, stream(defaultPackets, minFrameLen), func(f *flow) { f.metadata = true }))
	}},
	{"XDP_METADATA_COPY_MULTI_BUFF", "as XDP_METADATA_COPY with the frames of SEND_RECEIVE_9K_PACKETS", func(t *tcase) (string, error) {
		return t.jumbo(false, true)
	}},
	{"SEND_RECEIVE_9K_PACKETS", "4096 frames of 9000 bytes at MTU 9000 on multi-buffer sockets: each sent in three descriptors and received over several buffers, whole and in order", func(t *tcase) (string, error) {
		return t.jumbo(false, false)
	}},
	{"SEND_RECEIVE_UNALIGNED_9K_PACKETS", "as SEND_RECEIVE_9K_PACKETS in unaligned chunk mode", func(t *tcase) (string, error) {
		return t.jumbo(true, false)
	}},
	{"ALIGNED_INV_DESC_MULTI_BUFF", "multi-buffer packets with an invalid descriptor (no length, past the UMEM, longer than a frame, options that do not exist, straddling a frame) among valid ones, 8192-byte packets of two descriptors among them: each packet with one is dropped (with the reclaim series, up to its last descriptor without XDP_PKT_CONTD), the others arrive whole and in order; the completion ring, descriptor by descriptor, and tx_invalid_descs exactly as one kernel's reading; copy mode", func(t *tcase) (string, error) {
		return t.invalidDescsMB(false)
	}},
	{"UNALIGNED_INV_DESC_MULTI_BUFF", "as ALIGNED_INV_DESC_MULTI_BUFF in unaligned chunk mode (a packet whose last descriptor straddles a frame is then valid)", func(t *tcase) (string, error) {
		return t.invalidDescsMB(true)
	}},
	{"TOO_MANY_FRAGS", "a packet of MAX_SKB_FRAGS + 1 descriptors arrives whole; one of as many whose last still says XDP_PKT_CONTD is dropped (with the reclaim series, with the frame after it); the completion ring, descriptor by descriptor, and tx_invalid_descs exactly as one kernel's reading; copy mode", (*tcase).tooManyFrags},
	{"XDP_ADJUST_TAIL_SHRINK", "the program shrinks each of 64 frames of 128 bytes by 4 (bpf_xdp_adjust_tail): each arrives as the first 124 bytes sent", func(t *tcase) (string, error) {
		return t.adjustTail(-4, 2*minFrameLen, false)
	}},
	{"XDP_ADJUST_TAIL_SHRINK_MULTI_BUFF", "the program shrinks each of 64 frames of 6144 bytes, sent in two descriptors, by 4096: each arrives as the first 2048 bytes", func(t *tcase) (string, error) {
		return t.adjustTail(-4096, 6144, true)
	}},
	{"XDP_ADJUST_TAIL_GROW", "the program grows each of 64 frames of 128 bytes by 4: each arrives whole with 4 zero bytes after it", func(t *tcase) (string, error) {
		return t.adjustTail(4, 2*minFrameLen, false)
	}},
	{"XDP_ADJUST_TAIL_GROW_MULTI_BUFF", "the program grows each of 64 frames of 6144 bytes by 2047, within its last buffer: each arrives whole with 2047 zero bytes after it", func(t *tcase) (string, error) {
		return t.adjustTail(2047, 6144, true)
	}},
	{"HW_SW_MIN_RING_SIZE", "both devices' rings set to 128 rx and 64 tx descriptors (ethtool -G, put back after): SEND_RECEIVE in batches of 1, then of 63 on the same sockets", (*tcase).hwSwMinRing},
	{"HW_SW_MAX_RING_SIZE", "both devices' rings set to their largest (ethtool -G, put back after), a receiver of 8192 frames with rings of 8192: SEND_RECEIVE in batches of 2048, then 8192 frames in batches of the largest tx ring less 8, on the same sockets", (*tcase).hwSwMaxRing},
	{"TX_QUEUE_CONSUMER", "33 frames in one batch: one sendto takes exactly the copy-mode budget of 32 descriptors off the tx ring, then all arrive whole and in order", func(t *tcase) (string, error) {
		if t.mode == ZC {
			return "", skipf("the budget of a sendto is copy mode's; xskxceiver does not run it in zero-copy either")
		}
		n := txBudget + 1
		var fl *flow
		detail, err := t.sendReceive(sockSpec{}, sockSpec{}, stream(n, minFrameLen), func(f *flow) { f.batch, f.checkConsumer, fl = uint32(n), true, f })
		if err == nil && fl.consumerLate {
			_, rel := kernelAtLeast(consumerFix)
			return "", skipf("it checks the fix \"net: xsk: update tx queue consumer immediately after transmission\" (Linux %d.%d); Linux %s publishes the tx ring's consumer only at the next sendto, so one sendto showed 0 of %d taken, as its __xsk_generic_xmit does; then: %s",
				consumerFix[0], consumerFix[1], rel, n, detail)
		}
		return detail, err
	}},
}

// openPair opens a sender on the Tx end and a receiver on the Rx end, with
// the steering program on the Rx end sending to the receiver.
func (t *tcase) openPair(txSpec, rxSpec sockSpec, opts bpf.SelftestOptions) (tx, rx *sock, st *steer, err error) {
	if st, err = t.attach(t.pair.Rx, opts); err != nil {
		return nil, nil, nil, err
	}
	txSpec.tx = true
	if tx, err = t.open(t.pair.Tx, txSpec); err != nil {
		return nil, nil, nil, err
	}
	rxSpec.rx = true
	if rx, err = t.open(t.pair.Rx, rxSpec); err != nil {
		return nil, nil, nil, err
	}
	return tx, rx, st, st.to(rx)
}

// sendReceive runs pkts from a sender to a receiver, after adjust has
// changed the flow's defaults.
func (t *tcase) sendReceive(txSpec, rxSpec sockSpec, pkts []txPkt, adjust func(*flow)) (string, error) {
	tx, rx, st, err := t.openPair(txSpec, rxSpec, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	return t.run(t.newFlow(tx, rx, st, pkts, adjust))
}

// newFlow is the flow of pkts from tx to rx: the program redirects every
// valid frame.
func (t *tcase) newFlow(tx, rx *sock, st *steer, pkts []txPkt, adjust func(*flow)) *flow {
	f := &flow{from: tx, to: rx, pkts: pkts, prog: st}
	for _, p := range packets(pkts) {
		if p.valid {
			f.progWant.Redirected++
		}
	}
	if adjust != nil {
		adjust(f)
	}
	return f
}

func (t *tcase) pollRxTimeout() (string, error) {
	st, err := t.attach(t.pair.Rx, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	rx, err := t.open(t.pair.Rx, sockSpec{rx: true})
	if err != nil {
		return "", err
	}
	if err := st.to(rx); err != nil {
		return "", err
	}
	const wait = 200
	start := time.Now()
	ready, err := rx.s.Poll(wait, false)
	if err != nil {
		return "", err
	}
	if ready {
		return "", &Failure{Check: "poll(POLLIN) with nothing sent", Expected: fmt.Sprintf("a time-out after %d ms", wait), Got: fmt.Sprintf("ready after %v", time.Since(start).Round(time.Millisecond)), Frame: -1}
	}
	if n := rx.s.Rx.Pending(); n != 0 {
		return "", &Failure{Check: "rx ring", Expected: "empty", Got: fmt.Sprintf("%d descriptors", n), Frame: -1}
	}
	if err := waitStats(rx.s, "receiving", xsk.Statistics{}, xsk.Statistics{}); err != nil {
		return "", err
	}
	return fmt.Sprintf("poll(POLLIN) timed out after %d ms; rx ring empty; counters 0", wait), nil
}

func (t *tcase) pollTxFull() (string, error) {
	if ok, rel := kernelAtLeast([2]int{5, 11}); !ok {
		return "", skipf("not run before Linux 5.11: with the completion ring full, 5.10's poll never times out: each xsk_poll drives copy-mode transmit (xsk_generic_xmit), which allocates an skb before it finds no room on the completion ring and frees it; the free (sock_wfree, sk_write_space) wakes the socket's wait queue, on which xsk_poll waits through datagram_poll, so ppoll never sleeps and its timer never runs (seen on Debian's 5.10.0-32: the thread spinning in ppoll past the 200 ms time-out); this kernel is %s", rel)
	}
	st, err := t.attach(t.pair.Rx, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	tx, err := t.open(t.pair.Tx, sockSpec{tx: true})
	if err != nil {
		return "", err
	}
	s := tx.s
	mem := tx.u.Mem()
	var sent []uint64
	fill := func() error {
		idx, got := s.Tx.Reserve(defaultRing)
		if got != defaultRing {
			return fmt.Errorf("tx ring: room for %d of %d descriptors", got, defaultRing)
		}
		for k := uint32(0); k < got; k++ {
			addr := tx.txBase(uint32(len(sent)))
			writeFrame(mem[addr:addr+minFrameLen], t.pair.Rx.MAC, t.pair.Tx.MAC, uint32(len(sent)))
			s.Tx.Set(idx+k, addr, minFrameLen)
			sent = append(sent, addr)
		}
		s.Tx.Submit(got)
		return nil
	}
	until := func(what string, done func() bool) error {
		for start := time.Now(); !done(); {
			if err := s.WakeTx(); err != nil {
				return err
			}
			if err := t.ctx.Err(); err != nil {
				return err
			}
			if time.Since(start) > idleTimeout {
				return &Failure{Check: what, Expected: "reached", Got: fmt.Sprintf("tx ring pending %d, completion ring %d after %v", s.Tx.Pending(), s.Completion.Pending(), idleTimeout), Frame: -1}
			}
			time.Sleep(10 * time.Microsecond)
		}
		return nil
	}
	// The completion ring fills up: the first ring's worth is sent and
	// not reaped.
	if err := fill(); err != nil {
		return "", err
	}
	if err := until("the first 2048 descriptors sent", func() bool { return s.Completion.Pending() == defaultRing }); err != nil {
		return "", err
	}
	if n := s.Tx.Pending(); n != 0 {
		return "", &Failure{Check: "tx ring after the first 2048 completed", Expected: "empty", Got: fmt.Sprintf("%d pending", n), Frame: -1}
	}
	if err := fill(); err != nil {
		return "", err
	}
	const wait = 200
	ready, err := s.Poll(wait, true)
	if err != nil {
		return "", err
	}
	if ready {
		return "", &Failure{Check: "poll(POLLOUT) with the completion ring full", Expected: fmt.Sprintf("a time-out after %d ms", wait), Got: "ready", Frame: -1}
	}
	if n, c := s.Tx.Pending(), s.Completion.Pending(); n != defaultRing || c != defaultRing {
		return "", &Failure{Check: "rings while the completion ring is full", Expected: "2048 pending on tx, 2048 completions",
			Got: fmt.Sprintf("%d pending on tx, %d completions", n, c), Frame: -1}
	}
	done := 0
	reap := func() error {
		idx, n := s.Completion.Peek(defaultRing)
		for k := uint32(0); k < n; k++ {
			if a := s.Completion.Addr(idx + k); done >= len(sent) || a != sent[done] {
				return &Failure{Check: "completion ring order", Expected: fmt.Sprintf("address %#x", sent[min(done, len(sent)-1)]), Got: fmt.Sprintf("address %#x", a), Frame: done}
			}
			done++
		}
		s.Completion.Release(n)
		return nil
	}
	if err := reap(); err != nil {
		return "", err
	}
	// Each poll sends a budget of descriptors; it reports room once no
	// more than half the tx ring is pending.
	polls := 0
	for {
		ready, err := s.Poll(100, true)
		if err != nil {
			return "", err
		}
		polls++
		if ready {
			break
		}
		if err := reap(); err != nil {
			return "", err
		}
		if polls > defaultRing {
			return "", &Failure{Check: "poll(POLLOUT) after reaping", Expected: "ready", Got: fmt.Sprintf("not ready after %d polls, %d pending", polls, s.Tx.Pending()), Frame: -1}
		}
	}
	if n := s.Tx.Pending(); n > defaultRing/2 {
		return "", &Failure{Check: "poll(POLLOUT) reported room", Expected: fmt.Sprintf("at most %d descriptors pending", defaultRing/2), Got: fmt.Sprint(n), Frame: -1}
	}
	if err := until("all 4096 descriptors sent", func() bool {
		if reap() != nil {
			return true
		}
		return done == len(sent)
	}); err != nil {
		return "", err
	}
	if err := reap(); err != nil {
		return "", err
	}
	if err := waitStats(s, "sending", xsk.Statistics{}, xsk.Statistics{}); err != nil {
		return "", err
	}
	if err := waitCounts(st, bpf.SelftestCounts{}, bpf.SelftestCounts{NoSocket: uint64(len(sent))}); err != nil {
		return "", err
	}
	return fmt.Sprintf("poll(POLLOUT) timed out with 2048 completions unreaped and 2048 descriptors pending, none taken; after reaping, ready after %d polls; %d completions in order; the peer's program saw all %d", polls, done, len(sent)), nil
}

// invalidDescs sends descriptors at the corners of the UMEM.
func (t *tcase) invalidDescs(spec sockSpec) (string, error) {
	tx, rx, st, err := t.openPair(spec, spec, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	fs := uint64(tx.spec.frameSize)
	end := tx.umemSize()
	un := tx.spec.unaligned
	pkts := []txPkt{
		{abs: true, addr: 0, len: minFrameLen, valid: true},                                                // address 0
		{abs: true, addr: tx.txBase(1), len: minFrameLen, valid: true},                                     // an ordinary frame
		{abs: true, addr: ^uint64(1), len: minFrameLen},                                                    // straddling the start of the UMEM
		{abs: true, addr: tx.txBase(2), len: 9001},                                                         // longer than a frame
		{abs: true, addr: end - minFrameLen, len: minFrameLen, valid: true},                                // up to the end of the UMEM
		{abs: true, addr: end, len: minFrameLen},                                                           // past its end
		{abs: true, addr: end - minFrameLen/2, len: minFrameLen},                                           // straddling its end
		{abs: true, addr: tx.txBase(4) - minFrameLen/2, len: minFrameLen, valid: un},                       // straddling a frame (and a 4 KiB page)
		{abs: true, addr: tx.txBase(5) + 0x800 - minFrameLen/2, len: minFrameLen, valid: un || fs > 0x800}, // straddling 2 KiB
		{abs: true, addr: tx.txBase(6), len: minFrameLen, valid: true},                                     // a last valid one
	}
	invalid := 0
	for _, p := range pkts {
		if !p.valid {
			invalid++
		}
	}
	return t.run(t.newFlow(tx, rx, st, pkts, func(f *flow) { f.txStats.TxInvalidDescs = uint64(invalid) }))
}

func (t *tcase) teardown() (string, error) {
	st, err := t.attach(t.pair.Rx, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	const rounds = 10
	for i := 0; i < rounds; i++ {
		sub := &tcase{ctx: t.ctx, pair: t.pair, mode: t.mode, guard: t.guard}
		_, err := func() (string, error) {
			defer sub.close()
			tx, err := sub.open(t.pair.Tx, sockSpec{tx: true})
			if err != nil {
				return "", err
			}
			rx, err := sub.open(t.pair.Rx, sockSpec{rx: true})
			if err != nil {
				return "", err
			}
			if err := st.to(rx); err != nil {
				return "", err
			}
			return sub.run(sub.newFlow(tx, rx, st, stream(defaultPackets, minFrameLen), nil))
		}()
		if err != nil {
			if f, ok := err.(*Failure); ok {
				f.Check = fmt.Sprintf("round %d: %s", i+1, f.Check)
			}
			return "", err
		}
	}
	return fmt.Sprintf("%d rounds of %d frames, each received whole and in order with sockets made anew", rounds, defaultPackets), nil
}

func (t *tcase) bidirectional() (string, error) {
	stA, err := t.attach(t.pair.Tx, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	stB, err := t.attach(t.pair.Rx, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	a, err := t.open(t.pair.Tx, sockSpec{rx: true, tx: true})
	if err != nil {
		return "", err
	}
	b, err := t.open(t.pair.Rx, sockSpec{rx: true, tx: true})
	if err != nil {
		return "", err
	}
	if err := stA.to(a); err != nil {
		return "", err
	}
	if err := stB.to(b); err != nil {
		return "", err
	}
	there, err := t.run(t.newFlow(a, b, stB, stream(defaultPackets, minFrameLen), nil))
	if err != nil {
		return "", err
	}
	back, err := t.run(t.newFlow(b, a, stA, stream(defaultPackets, minFrameLen), nil))
	if err != nil {
		if f, ok := err.(*Failure); ok {
			f.Check = "way back: " + f.Check
		}
		return "", err
	}
	return fmt.Sprintf("%s to %s: %s; back: %s", t.pair.Tx.Name, t.pair.Rx.Name, there, back), nil
}

func (t *tcase) statRxDropped() (string, error) {
	if t.mode == ZC {
		return "", skipf("in zero-copy mode the driver sizes the receive buffers; xskxceiver does not run it there either")
	}
	const big = 1024
	pkts := stream(defaultPackets, minFrameLen)
	for i := 1; i < len(pkts); i += 2 {
		pkts[i].len = big
	}
	rxSpec := sockSpec{headroom: xsk.MaxHeadroom(defaultFrameSize)}
	tx, rx, st, err := t.openPair(sockSpec{}, rxSpec, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	if room := defaultFrameSize - rxSpec.headroom - xsk.KernelHeadroom; room >= big || room < minFrameLen {
		return "", fmt.Errorf("STAT_RX_DROPPED: a buffer with headroom %d has room for %d bytes, not between %d and %d", rxSpec.headroom, room, minFrameLen, big)
	}
	f := t.newFlow(tx, rx, st, pkts, nil)
	var want []rxWant
	for i := 0; i < len(pkts); i += 2 {
		want = append(want, rxWant{nb: uint32(i), len: minFrameLen})
	}
	f.want = want
	f.rxStats.RxDropped = defaultPackets / 2
	return t.run(f)
}

func (t *tcase) dropHalf() (string, error) {
	tx, rx, st, err := t.openPair(sockSpec{}, sockSpec{}, bpf.SelftestOptions{DropHalf: true})
	if err != nil {
		return "", err
	}
	pkts := stream(defaultPackets, minFrameLen)
	f := t.newFlow(tx, rx, st, pkts, nil)
	f.want = nil
	for i := 0; i < len(pkts); i += 2 {
		f.want = append(f.want, rxWant{nb: uint32(i), len: minFrameLen})
	}
	f.progWant = bpf.SelftestCounts{Redirected: defaultPackets / 2, Dropped: defaultPackets / 2}
	return t.run(f)
}

// jumbo sends 9000-byte frames over multi-buffer sockets.
func (t *tcase) jumbo(unaligned, metadata bool) (string, error) {
	if err := t.multiBuffer(); err != nil {
		return "", err
	}
	if err := t.needMTU(jumboMTU); err != nil {
		return "", err
	}
	spec := sockSpec{sg: true, unaligned: unaligned}
	tx, rx, st, err := t.openPair(spec, spec, bpf.SelftestOptions{Frags: true, Metadata: metadata})
	if err != nil {
		return "", err
	}
	pkts := fragmented(defaultPackets, jumboMTU, defaultFrameSize)
	// Each frame takes three receive buffers: a window of 64 frames
	// keeps well within the receiver's 1024.
	return t.run(t.newFlow(tx, rx, st, pkts, func(f *flow) { f.window, f.metadata = 64, metadata }))
}

func (t *tcase) sharedUmem() (string, error) {
	tx0, rx0, st, err := t.openPair(sockSpec{}, sockSpec{}, bpf.SelftestOptions{BySelector: true})
	if err != nil {
		return "", err
	}
	rx0.name, tx0.name = t.pair.Rx.Name+" socket 0", t.pair.Tx.Name+" socket 0"
	rx1, err := t.openShared(rx0, true, false, t.pair.Rx.Name+" socket 1")
	if err != nil {
		return "", err
	}
	if err := st.prog.SetSocket(1, rx1.s.FD()); err != nil {
		return "", err
	}
	tx1, err := t.openShared(tx0, false, true, t.pair.Tx.Name+" socket 1")
	if err != nil {
		return "", err
	}
	var out []string
	for _, tx := range []*sock{tx0, tx1} {
		pkts := stream(defaultPackets, minFrameLen)
		f := t.newFlow(tx, rx0, st, pkts, nil)
		f.selector = func(nb uint32) byte { return byte(nb & 1) }
		f.want, f.also, f.alsoWant = nil, rx1, nil
		for _, w := range expected(pkts) {
			if w.nb&1 == 0 {
				f.want = append(f.want, w)
			} else {
				f.alsoWant = append(f.alsoWant, w)
			}
		}
		d, err := t.run(f)
		if err != nil {
			if fl, ok := err.(*Failure); ok {
				fl.Check = "from " + tx.label() + ": " + fl.Check
			}
			return "", err
		}
		out = append(out, fmt.Sprintf("from %s: %s", tx.label(), d))
	}
	return strings.Join(out, "; "), nil
}

func (t *tcase) progCleanup() (string, error) {
	tx0, rx0, st, err := t.openPair(sockSpec{}, sockSpec{}, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	rx0.name, tx0.name = t.pair.Rx.Name+" socket 0", t.pair.Tx.Name+" socket 0"
	rx1, err := t.openShared(rx0, true, false, t.pair.Rx.Name+" socket 1")
	if err != nil {
		return "", err
	}
	if err := st.prog.SetSocket(1, rx1.s.FD()); err != nil {
		return "", err
	}
	tx1, err := t.openShared(tx0, false, true, t.pair.Tx.Name+" socket 1")
	if err != nil {
		return "", err
	}
	first, err := t.run(t.newFlow(tx0, rx0, st, stream(defaultPackets, minFrameLen), func(f *flow) { f.also = rx1 }))
	if err != nil {
		return "", err
	}
	if err := st.prog.Xsks.Delete(uint32(1)); err != nil {
		return "", fmt.Errorf("remove socket 1 from key 1: %w", err)
	}
	if err := st.to(rx1); err != nil {
		return "", err
	}
	second, err := t.run(t.newFlow(tx1, rx1, st, stream(defaultPackets, minFrameLen), func(f *flow) { f.also = rx0 }))
	if err != nil {
		if fl, ok := err.(*Failure); ok {
			fl.Check = "after the swap: " + fl.Check
		}
		return "", err
	}
	return fmt.Sprintf("to socket 0: %s; socket 1 alone at key 0, from a second sender: %s", first, second), nil
}

// adjustTail sends 64 frames of length bytes, which the program grows or
// shrinks by delta.
func (t *tcase) adjustTail(delta int32, length uint32, mb bool) (string, error) {
	spec, opts := sockSpec{}, bpf.SelftestOptions{AdjustTail: delta}
	if mb {
		if err := t.multiBuffer(); err != nil {
			return "", err
		}
		if err := t.needMTU(jumboMTU); err != nil {
			return "", err
		}
		spec.sg, opts.Frags = true, true
	}
	tx, rx, st, err := t.openPair(spec, spec, opts)
	if err != nil {
		return "", err
	}
	pkts := fragmented(defaultBatch, length, defaultFrameSize)
	f := t.newFlow(tx, rx, st, pkts, nil)
	f.want = expected(pkts)
	for i := range f.want {
		f.want[i].sent = f.want[i].len
		f.want[i].len = uint32(int32(length) + delta)
	}
	d, err := t.run(f)
	if err != nil {
		// Where the helper fails (EOPNOTSUPP: a driver that cannot
		// grow fragments; EINVAL: a frame without the room) the
		// program passes the frame to the stack. xskxceiver takes any
		// failure of the helper for "not supported" and skips; so does
		// this test, saying how many frames and why.
		if c, cerr := st.prog.Counts(); cerr == nil && c.AdjustFailed > 0 {
			return "", skipf("bpf_xdp_adjust_tail by %d failed on %d of %d frames here (%v): resizing is not supported for these frames in this mode",
				delta, c.AdjustFailed, len(f.want), unix.Errno(c.AdjustErr))
		}
		return "", err
	}
	return d, nil
}

// Ring sizes of HW_SW_MIN_RING_SIZE: xskxceiver's tx ring of one batch
// (DEFAULT_BATCH_SIZE) and rx ring of two.
const (
	minHWTxRing = defaultBatch
	minHWRxRing = 2 * defaultBatch
)

func (t *tcase) hwSwMinRing() (string, error) {
	rings, err := t.needRings(func(ringSizes) (uint32, uint32) { return minHWRxRing, minHWTxRing })
	if err != nil {
		return "", err
	}
	return t.ringSteps(rings, sockSpec{}, sockSpec{}, [2]uint32{1, minHWTxRing - 1}, [2]int{defaultPackets, defaultPackets})
}

func (t *tcase) hwSwMaxRing() (string, error) {
	var txMax uint32
	rings, err := t.needRings(func(r ringSizes) (uint32, uint32) {
		txMax = max(txMax, r.txMax)
		return r.rxMax, r.txMax
	})
	if err != nil {
		return "", err
	}
	// The second step's batch is the largest tx ring less 8: xskxceiver
	// keeps it off a multiple of 8 (ice ignores the tail's lowest 3 bits).
	if txMax <= 8 {
		return "", skipf("the largest tx ring is %d descriptors: no batch of it less 8", txMax)
	}
	const descs = 4 * defaultRing
	rx := sockSpec{rxFrames: descs, rxRing: descs, ring: descs}
	tx := sockSpec{txFrames: descs}
	return t.ringSteps(rings, tx, rx, [2]uint32{defaultRing, txMax - 8}, [2]int{defaultPackets, descs})
}

// ringSteps runs SEND_RECEIVE twice on one pair of sockets: step i sends
// n[i] frames in batches of batch[i] descriptors (sent and received).
func (t *tcase) ringSteps(rings string, txSpec, rxSpec sockSpec, batch [2]uint32, n [2]int) (string, error) {
	tx, rx, st, err := t.openPair(txSpec, rxSpec, bpf.SelftestOptions{})
	if err != nil {
		return "", err
	}
	var did []string
	for i := range batch {
		got, err := t.run(t.newFlow(tx, rx, st, stream(n[i], minFrameLen), func(f *flow) {
			f.batch = batch[i]
			f.window = max(defaultWindow, int(batch[i]))
		}))
		if err != nil {
			if f, ok := err.(*Failure); ok {
				f.Check = fmt.Sprintf("step %d (batches of %d): %s", i+1, batch[i], f.Check)
			}
			return "", err
		}
		did = append(did, fmt.Sprintf("batches of %d: %s", batch[i], got))
	}
	return fmt.Sprintf("rings %s; %s", rings, strings.Join(did, "; ")), nil
}

// needInvalidMB skips a test of invalid multi-buffer packets where the
// device cannot take multi-buffer frames in the test's mode, in zero-copy
// and where the MTU is short of jumbo frames.
func (t *tcase) needInvalidMB() error {
	if err := t.multiBuffer(); err != nil {
		return err
	}
	if err := zeroCopyReadings(t.mode); err != nil {
		return err
	}
	return t.needMTU(jumboMTU)
}

// invalidDescsMB sends multi-buffer packets with invalid descriptors
// (xskxceiver's testapp_invalid_desc_mb). Every descriptor has an address
// of its own, so that each completion says whose it is.
func (t *tcase) invalidDescsMB(unaligned bool) (string, error) {
	if err := t.needInvalidMB(); err != nil {
		return "", err
	}
	spec := sockSpec{sg: true, unaligned: unaligned}
	tx, rx, st, err := t.openPair(spec, spec, bpf.SelftestOptions{Frags: true})
	if err != nil {
		return "", err
	}
	pkts := invalidMBStream(tx.txBase, tx.umemSize(), unaligned)
	maxFrags, err := t.maxFrags()
	if err != nil {
		return "", err
	}
	return t.run(t.newFlow(tx, rx, st, pkts, func(f *flow) {
		f.readings = invalidReadings(pkts, maxFrags)
	}))
}

// invalidMBStream is the stream of ALIGNED_INV_DESC_MULTI_BUFF (in
// unaligned chunk mode, UNALIGNED_INV_DESC_MULTI_BUFF) from a UMEM of end
// bytes whose transmit frame k is at at(k).
func invalidMBStream(at func(uint32) uint64, end uint64, unaligned bool) []txPkt {
	const (
		large   = 3 * 1024 // XSK_UMEM__LARGE_FRAME_SIZE
		whole   = defaultFrameSize
		badOpts = 0xffff // XSK_DESC__INVALID_OPTION
	)
	c := uint32(xsk.PacketContinues)
	// Each packet's descriptors, and which the kernel refuses (bad).
	pkts := []txPkt{
		{addr: at(0), len: minFrameLen, valid: true}, // a valid frame to begin with
		// A packet whose last descriptor has no length.
		{addr: at(1), len: large, opts: c},
		{addr: at(2), len: large, opts: c},
		{addr: at(3), len: 0, bad: true},
		// A packet whose second descriptor is past the UMEM.
		{addr: at(4), len: large, opts: c},
		{addr: end, len: large, opts: c, bad: true, last: true},
		// A packet whose second descriptor is longer than a frame.
		{addr: at(6), len: large, opts: c},
		{addr: at(7), len: whole + 1, opts: c, bad: true, last: true},
		// A packet whose second descriptor has options that do not
		// exist (XDP_PKT_CONTD among them).
		{addr: at(8), len: large, opts: c},
		{addr: at(9), len: large, opts: badOpts, bad: true, last: true},
		// A valid packet of two whole frames (three receive buffers).
		{addr: at(10), len: whole, opts: c, valid: true},
		{addr: at(11), len: whole, valid: true},
		// A packet whose last descriptor straddles a frame: valid in
		// unaligned chunk mode.
		{addr: at(12), len: large, opts: c, valid: unaligned},
		{addr: at(14) - minFrameLen/2, len: minFrameLen, valid: unaligned, bad: !unaligned},
		// The valid packet of two whole frames again: where an invalid
		// descriptor with XDP_PKT_CONTD drops the descriptors after it
		// up to the end of its packet, the first one went with the
		// packet before it; this one follows a descriptor without
		// XDP_PKT_CONTD, so every kernel sends it.
		{addr: at(15), len: whole, opts: c, valid: true},
		{addr: at(16), len: whole, valid: true},
		{addr: at(17), len: minFrameLen, valid: true}, // a valid frame to end with
	}
	for i := range pkts {
		pkts[i].abs = true
	}
	return pkts
}

// invalidReadings are the outcomes of pkts that kernels are known to
// produce in copy mode, each exactly; a packet of more than maxFrags
// descriptors is too long. pkts are grouped into packets as kernels before
// the reclaim series read them: a packet ends at a descriptor without
// XDP_PKT_CONTD, at an invalid descriptor and at the one a packet can
// take no more after (last), and valid marks the descriptors of the
// packets such a kernel sends.
func invalidReadings(pkts []txPkt, maxFrags int) []reading {
	// Kernels with the reclaim series ("xsk: drain continuation descs
	// after overflow in xsk_build_skb()", "xsk: fix buffer leak in
	// xsk_drop_skb() for AF_XDP multi-buffer Tx"): a packet ends only at
	// a descriptor without XDP_PKT_CONTD, and one with an invalid
	// descriptor or too many is dropped whole, each of its descriptors
	// counted in tx_invalid_descs and every descriptor, sent or dropped,
	// returned on the completion ring in its place.
	nb := make([]uint32, len(pkts)) // the frame each descriptor's packet carries
	for n, p := range packets(pkts) {
		for d := p.first; d < p.first+p.n; d++ {
			nb[d] = uint32(n)
		}
	}
	drain := reading{name: "kernels with the reclaim series (an invalid or too long packet dropped up to its last descriptor without XDP_PKT_CONTD, every descriptor returned on the completion ring, a dropped one as it is read; Linux 7.2, and stable kernels with it such as this host's 6.18.44)",
		dropped: map[uint64]bool{}}
	for start := 0; start < len(pkts); {
		end := start
		for end < len(pkts)-1 && pkts[end].opts&xsk.PacketContinues != 0 {
			end++
		}
		dropped := end-start+1 > maxFrags
		var length uint32
		for d := start; d <= end; d++ {
			drain.completions = append(drain.completions, pkts[d].addr)
			dropped = dropped || pkts[d].bad
			length += pkts[d].len
		}
		if dropped {
			drain.txInvalid += uint64(end - start + 1)
			for d := start; d <= end; d++ {
				drain.dropped[pkts[d].addr] = true
			}
		} else {
			drain.want = append(drain.want, rxWant{nb: nb[start], len: length})
		}
		start = end + 1
	}
	// Kernels before it (Linux 6.6, which brought multi-buffer Tx, to
	// 7.1), by their __xsk_generic_xmit and xsk_build_skb: an invalid
	// descriptor ends its packet, which is dropped with the descriptors
	// before it (xsk_drop_skb), each counted in tx_invalid_descs and none
	// returned on the completion ring; a packet that needs more than
	// MAX_SKB_FRAGS fragments is dropped at the descriptor it cannot take
	// (-EOVERFLOW), which is counted with them; the next descriptor
	// begins a packet.
	before := reading{name: "kernels before the reclaim series (an invalid descriptor ends its packet, which is dropped, none of it returned on the completion ring; Linux 6.6 to 7.1, read from their source, not measured here)",
		want: expected(pkts)}
	for _, p := range packets(pkts) {
		for d := p.first; d < p.first+p.n; d++ {
			if p.valid {
				before.completions = append(before.completions, pkts[d].addr)
			} else {
				before.txInvalid++
			}
		}
	}
	// Stable kernels with part of the series (Debian 13's 6.12.117):
	// an invalid descriptor is counted and returned in its place, and
	// one that says XDP_PKT_CONTD drains the descriptors after it up to
	// one without, each counted and returned; but the descriptors of the
	// dropped packet before the one that ended it (an invalid one, or
	// one past maxFrags) are counted and never returned: their frames
	// are lost to the application, the leak that "xsk: fix buffer leak in
	// xsk_drop_skb() for AF_XDP multi-buffer Tx" mends. A flow that holds
	// this reading skips, naming the leak.
	partial := reading{name: "stable kernels with part of the reclaim series (an invalid descriptor returned and one with XDP_PKT_CONTD draining its packet, but the descriptors of a dropped packet before the one that ended it never returned; Debian 13's 6.12.117)",
		dropped: map[uint64]bool{}}
	var held []int // descriptors of the packet being built
	draining := false
	for d, p := range pkts {
		cont := p.opts&xsk.PacketContinues != 0
		switch {
		case draining:
			partial.txInvalid++
			partial.completions = append(partial.completions, p.addr)
			partial.dropped[p.addr] = true
			draining = cont
		case p.bad:
			partial.txInvalid += uint64(len(held)) + 1
			partial.leaked += len(held)
			partial.completions = append(partial.completions, p.addr)
			partial.dropped[p.addr] = true
			held, draining = nil, cont
		case len(held)+1 > maxFrags:
			partial.txInvalid += uint64(len(held)) + 1
			partial.leaked += len(held) + 1
			held, draining = nil, cont
		default:
			held = append(held, d)
			if !cont || d == len(pkts)-1 {
				var length uint32
				for _, h := range held {
					partial.completions = append(partial.completions, pkts[h].addr)
					length += pkts[h].len
				}
				partial.want = append(partial.want, rxWant{nb: nb[held[0]], len: length})
				held = nil
			}
		}
	}
	partial.bug = fmt.Sprintf("Linux %s never returns on the completion ring the descriptors it had gathered of a multi-buffer packet it drops, though it counts them in tx_invalid_descs (%d here): an application loses their UMEM frames (the fix of the 2026 reclaim series, \"xsk: fix buffer leak in xsk_drop_skb() for AF_XDP multi-buffer Tx\", is not in it)",
		kernelRelease(), partial.leaked)
	return []reading{drain, before, partial}
}

// tooManyFrags sends a packet of the most descriptors the kernel takes,
// and one of as many that says it goes on (xskxceiver's
// testapp_too_many_frags).
func (t *tcase) tooManyFrags() (string, error) {
	if err := t.needInvalidMB(); err != nil {
		return "", err
	}
	maxFrags, err := t.maxFrags()
	if err != nil {
		return "", err
	}
	spec := sockSpec{sg: true}
	tx, rx, st, err := t.openPair(spec, spec, bpf.SelftestOptions{Frags: true})
	if err != nil {
		return "", err
	}
	pkts := tooManyFragsStream(tx.txBase, maxFrags)
	return t.run(t.newFlow(tx, rx, st, pkts, func(f *flow) {
		f.readings = invalidReadings(pkts, maxFrags)
	}))
}

// tooManyFragsStream is the stream of TOO_MANY_FRAGS, for packets of at
// most maxFrags descriptors, transmit frame k being at at(k): a frame, a
// packet of maxFrags descriptors, one of as many whose last says
// XDP_PKT_CONTD, and a frame.
func tooManyFragsStream(at func(uint32) uint64, maxFrags int) []txPkt {
	n := 2*maxFrags + 2
	pkts := make([]txPkt, n)
	for i := range pkts {
		pkts[i] = txPkt{abs: true, addr: at(uint32(i)), len: minFrameLen, valid: true}
	}
	for i := 1; i < maxFrags; i++ {
		pkts[i].opts = xsk.PacketContinues
	}
	for i := maxFrags + 1; i <= 2*maxFrags; i++ {
		pkts[i].opts, pkts[i].valid = xsk.PacketContinues, false
	}
	pkts[2*maxFrags].last = true
	return pkts
}

// zeroCopyReadings skips a test of invalid multi-buffer packets in
// zero-copy mode: there the driver takes descriptors in batches
// (xsk_tx_peek_release_desc_batch), up to its xdp-zc-max-segs a packet,
// and what each kernel then returns on the completion ring and counts is
// not written here, nor measured (no zero-copy multi-buffer device here).
func zeroCopyReadings(m Mode) error {
	if m != ZC {
		return nil
	}
	return skipf("in zero-copy the driver's batch path (xsk_tx_peek_release_desc_batch) ends invalid multi-buffer packets, and its exact outcome on each kernel is not written here: only copy mode's (__xsk_generic_xmit) is")
}

// noLinearTx are the drivers that set IFF_TX_SKB_NO_LINEAR (not visible
// from user space): copy-mode transmit builds their packets of fragments
// only, every descriptor one (xsk_build_skb_zerocopy), with no linear part.
var noLinearTx = map[string]bool{"virtio_net": true}

// maxFrags is how many descriptors a copy-mode packet sent from the pair's
// sending end may have: MAX_SKB_FRAGS + 1 (the first goes to the skb's
// linear part), or MAX_SKB_FRAGS on a driver of noLinearTx; MAX_SKB_FRAGS
// is read as xskxceiver does from net.core.max_skb_frags, which is it
// unless an administrator lowered it.
func (t *tcase) maxFrags() (int, error) {
	b, err := os.ReadFile("/proc/sys/net/core/max_skb_frags")
	if err != nil {
		return 0, fmt.Errorf("read MAX_SKB_FRAGS: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("read MAX_SKB_FRAGS: /proc/sys/net/core/max_skb_frags holds %q, not a count", strings.TrimSpace(string(b)))
	}
	if noLinearTx[driverName(t.pair.Tx)] {
		return n, nil
	}
	return n + 1, nil
}

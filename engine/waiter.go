package engine

import (
	"fmt"
	"time"

	"github.com/xdpeng/xdpeng/xsk"
)

// waiter is what a worker does when a turn of its loop found nothing to do:
// the wait modes (Config.Wait), the busy-poll probe, the detection of a
// shared CPU and the naps taken on one. A worker calls busy after a turn
// that found work, waitRx or waitTx after one that found none, and sleep
// to wait in poll() (WaitPoll before each turn). It counts its system
// calls, sleeps and naps in the worker's counters and publishes them before
// it sleeps.
type waiter struct {
	w      *port
	mode   WaitMode
	pollMs int
	// spins are the empty turns since the last busy one.
	spins int
	// napiChecked is set once WaitBusyPoll has been checked for a NAPI
	// instance to poll (checkBusyPoll).
	napiChecked bool
	shared      cpuShare
	rxAtSleep   uint64        // rxPackets when the worker last napped
	idleFrom    time.Time     // when the rx ring was last found empty after frames
	nap         time.Duration // how long it naps, kept to a share of the rx ring
}

func newWaiter(w *port, o options) waiter {
	mode := o.wait
	if mode == WaitThreadedBusyPoll {
		// The NAPI's thread does the kernel's share: nothing to drive.
		mode = WaitAdaptive
	}
	return waiter{w: w, mode: mode, pollMs: int(o.pollTimeout.Milliseconds()), nap: maxNap / 2, shared: cpuShare{fd: -1}}
}

// adaptiveSpins is how many empty turns WaitAdaptive makes in txonly before
// it sleeps.
const adaptiveSpins = 2000

// spinFor is how long WaitAdaptive spins on an empty rx ring, on a CPU of its
// own, before it sleeps in poll(). It rides out the gaps between NAPI
// batches under load, including a descheduled vCPU on the sending side: a
// sleep costs the kernel a wake-up on the receiving CPU and, when it
// outlasts what the fill ring holds, dropped frames.
const spinFor = time.Millisecond

// pollsFirst reports whether the worker sleeps in poll() before every turn
// (WaitPoll).
func (wt *waiter) pollsFirst() bool { return wt.mode == WaitPoll }

// busy notes a turn that found work.
func (wt *waiter) busy() { wt.spins = 0 }

// open starts watching the calling thread's share of its CPU; call it on the
// worker's own, pinned thread, and close when the worker ends.
func (wt *waiter) open()  { wt.shared.open() }
func (wt *waiter) close() { wt.shared.close() }

// waitRx is called when the rx ring was found empty. It reports whether it
// slept in poll().
func (wt *waiter) waitRx() (slept bool, err error) {
	w := wt.w
	if wt.mode == WaitBusyPoll && w.c.rxPackets > 0 && !wt.napiChecked {
		wt.checkBusyPoll()
	}
	switch wt.mode {
	case WaitBusyPoll:
		// The recvfrom runs the driver's NAPI in our context.
		w.c.rxWakeups++
		return false, w.sock.WakeRx()
	case WaitPoll:
		return false, nil
	}
	if w.needWakeup && w.sock.Fill.NeedWakeup() {
		w.c.rxWakeups++
		if err := w.sock.WakeRx(); err != nil {
			return false, err
		}
	}
	if wt.mode != WaitAdaptive {
		return false, nil
	}
	first := wt.spins == 0
	wt.spins++
	if !first {
		// The clock only every 64th empty poll: reading it costs tens of
		// times an empty poll, and spinFor is long next to 64 polls.
		if wt.spins&63 != 0 || time.Since(wt.idleFrom) < spinFor {
			return false, nil
		}
		wt.spins = 0
		w.publish()
		return true, wt.sleep()
	}
	now := time.Now()
	if wt.shared.check(now, w.c.naps) {
		// Another thread wants this CPU (a NAPI thread, a generator):
		// spinning would only take its time. While frames flow, nap for
		// a fixed time so that they gather into large batches, one
		// context switch per many frames; when they stop, sleep in
		// poll() until the kernel wakes us.
		wt.spins = 0
		w.publish()
		if got := w.c.rxPackets - wt.rxAtSleep; got != 0 {
			wt.rxAtSleep = w.c.rxPackets
			wt.adaptNap(got)
			w.c.naps++
			if err := xsk.Nap(wt.nap); err != nil {
				return false, fmt.Errorf("queue %d: nap: %w", w.queue, err)
			}
			return false, nil
		}
		return true, wt.sleep()
	}
	wt.idleFrom = now
	return false, nil
}

// waitTx is called when a generator worker could neither send nor reap:
// completions of copy mode come when the receiver frees the frames, with
// no event to wait for, so WaitAdaptive spins a while and then sleeps
// briefly on c.
func (wt *waiter) waitTx(c clock) error {
	switch wt.mode {
	case WaitBusy, WaitBusyPoll:
		return nil
	case WaitPoll:
		return wt.sleep()
	}
	if wt.spins++; wt.spins < adaptiveSpins {
		return nil
	}
	wt.spins = 0
	wt.w.publish()
	c.Sleep(50 * time.Microsecond)
	return nil
}

// clock is how a generator worker reads the time and waits: the pacer's
// time source, replaced in tests so that pacing is checked without the
// wall clock.
type clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

// wallClock is the clock of a running engine.
type wallClock struct{}

func (wallClock) Now() time.Time        { return time.Now() }
func (wallClock) Sleep(d time.Duration) { time.Sleep(d) }

// checkBusyPoll looks, once frames have come in, at whether busy polling
// has anything to run: the NAPI instance the socket's frames came through.
// Without one (the socket's NAPI ID is 0: veth) a recvfrom polls nothing,
// and a worker spinning on it would only take the CPU from whatever does
// run the device's receive work, its NAPI thread in layout B; the worker
// then waits as WaitAdaptive does, and its stats say so.
func (wt *waiter) checkBusyPoll() {
	wt.napiChecked = true
	if id, err := wt.w.sock.NAPIID(); err == nil && id == 0 {
		wt.mode = WaitAdaptive
		wt.w.pub.busyPollInert.Store(true)
	}
}

// adaptNap adjusts the nap to the frames that arrived around the last one.
func (wt *waiter) adaptNap(frames uint64) {
	ring := uint64(wt.w.sock.Rx.Size())
	switch {
	case frames > ring/2 && wt.nap > minNap:
		wt.nap /= 2
	case frames < ring/8 && wt.nap < maxNap:
		wt.nap *= 2
	}
	wt.nap = min(max(wt.nap, minNap), maxNap)
}

// sleep waits in poll() for frames (or tx room) or the timeout.
func (wt *waiter) sleep() error {
	w := wt.w
	w.c.polls++
	if _, err := w.sock.Poll(wt.pollMs, w.txOutstanding > 0); err != nil {
		return fmt.Errorf("queue %d: %w", w.queue, err)
	}
	return nil
}

// pollTimeout is the longest a sleep lasts.
func (wt *waiter) pollTimeout() time.Duration { return time.Duration(wt.pollMs) * time.Millisecond }

// cpuShare tells whether a worker shares its CPU with other busy threads,
// from the time its thread spent runnable but waiting for the CPU (the
// run_delay of /proc/thread-self/schedstat). A NAPI thread or a generator on
// the same CPU makes that a large share of the time; the Go runtime's own
// brief visits (sysmon, timers) do not. Once seen, sharing is assumed for
// shareHold, then probed again, so a worker that got its CPU back resumes
// spinning.
type cpuShare struct {
	fd        int       // /proc/thread-self/schedstat of the worker's thread, -1 if unreadable
	nextCheck time.Time // no read before this
	last      time.Time // when runDelay was read
	until     time.Time // shared until this, unless seen again
	runDelay  int64     // ns spent waiting for the CPU, as last read
	naps      uint64    // the worker's naps, as of the last read
	strikes   int       // spans in a row above shareWait
	buf       [96]byte
}

const (
	// maxNap and minNap bound a nap. A nap lets frames gather into
	// large batches, one context switch per many frames; it is shortened
	// when a nap's worth of frames fills more than half the rx ring, and
	// lengthened again when it fills less than an eighth.
	maxNap = 200 * time.Microsecond
	minNap = 10 * time.Microsecond
	// shareCheck is how often the worker reads its run delay.
	shareCheck = 5 * time.Millisecond
	// shareHold is how long sharing, once seen, is assumed.
	shareHold = time.Second
	// shareWait is the share of the time spent waiting for the CPU above
	// which a span counts as shared, and shareSpans how many such spans in
	// a row make the CPU shared. A thread that wants the CPU all the time (a
	// NAPI thread, a generator) makes it half or more in every span.
	// Another thread's burst of some milliseconds (kdamond, a kworker, a
	// VM's agent) can fill two spans, and an ordinary wait the third; six
	// spans, 30 ms, outlast such bursts, so that a worker with a CPU of its
	// own does not take to napping for a second (shareHold) after one.
	shareWait  = 0.10
	shareSpans = 6
)

// check reports whether the CPU is shared at now, reading the thread's run
// delay at most every shareCheck. naps is how often the worker has napped so
// far.
func (c *cpuShare) check(now time.Time, naps uint64) bool {
	if c.fd < 0 || now.Before(c.nextCheck) {
		return now.Before(c.until)
	}
	c.nextCheck = now.Add(shareCheck)
	if d, ok := c.readRunDelay(); ok {
		c.observe(now, d, naps)
	}
	return now.Before(c.until)
}

// observe takes a reading of the run delay: the CPU is shared when the
// thread waited for it more than shareWait of the time since the last
// reading, shareSpans times in a row. Only a span in which the worker did
// not nap counts: the wait to run again after a nap is run delay too, and at
// ten thousand naps a second that alone can pass the threshold, which would
// keep a worker napping on a CPU it has to itself. So a worker that naps goes back to spinning when
// shareHold runs out, and the first spans without a nap decide again.
// (Sleeps in poll() are rare on a CPU of its own, see spinFor, and on a
// shared one they are all the worker does before it starts napping, so
// their spans count.)
func (c *cpuShare) observe(now time.Time, runDelay int64, naps uint64) {
	if !c.last.IsZero() && naps == c.naps {
		if waited, span := runDelay-c.runDelay, now.Sub(c.last); float64(waited) > shareWait*float64(span) {
			if c.strikes++; c.strikes >= shareSpans {
				c.until = now.Add(shareHold)
			}
		} else {
			c.strikes = 0
		}
	}
	c.runDelay, c.last, c.naps = runDelay, now, naps
}

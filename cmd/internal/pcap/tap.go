package pcap

import (
	"time"

	"github.com/xdpeng/xdpeng/engine"
)

// Tap returns a handler that copies every frame of a batch into ring, as
// the worker received it, and then hands the batch to inner; nil inner
// drops every frame, as a nil engine.Config.Handler does. It never waits:
// a frame the ring has no room for is skipped (Stats.Skipped), in the
// capture only, and the batch goes on to inner all the same.
//
// Each frame is stamped with the time the batch was handed to the handler
// (CLOCK_REALTIME, one read per batch): AF_XDP gives userspace no receive
// timestamp of the kernel's.
//
// The tap keeps inner's ReceiveOnly hint and calls its Idle, but never
// declares DropAll: the worker must call Handle for the tap to see the
// frames, so rxdrop's fast path (frames back to the fill ring unread) is
// given up while capturing.
func Tap(ring *Ring, inner engine.Handler) engine.Handler {
	t := &tap{ring: ring, inner: inner, receiveOnly: true}
	if inner != nil {
		t.idler, _ = inner.(engine.Idler)
		t.receiveOnly = false
		if h, ok := inner.(engine.Hinter); ok {
			hs := h.Hints()
			t.receiveOnly = hs.ReceiveOnly || hs.DropAll
		}
	}
	return t
}

type tap struct {
	ring        *Ring
	inner       engine.Handler
	idler       engine.Idler
	receiveOnly bool
}

func (t *tap) Handle(b *engine.Batch) {
	ts := time.Now().UnixNano()
	for i := 0; i < b.Len(); i++ {
		t.ring.Put(ts, b.Frame(i))
	}
	if t.inner != nil {
		t.inner.Handle(b)
	}
}

func (t *tap) Idle() {
	if t.idler != nil {
		t.idler.Idle()
	}
}

func (t *tap) Hints() engine.Hints { return engine.Hints{ReceiveOnly: t.receiveOnly} }

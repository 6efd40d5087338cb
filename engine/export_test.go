package engine

// What the external tests of this directory (package engine_test, which may
// import engine/handler: the internal tests may not, as it imports engine)
// reach inside an engine for.

import "github.com/xdpeng/xdpeng/xsk"

// OutputSockets returns each queue's socket on output port p.
func OutputSockets(e *Engine, p Dest) []*xsk.Socket {
	s := make([]*xsk.Socket, len(e.workers))
	for i, w := range e.workers {
		s[i] = w.base().ports[p]
	}
	return s
}

// NewCopyLoop is Sim.NewLoop with each output on a UMEM of its own, as
// Output.Copy makes it: the worker copies every forwarded frame.
func NewCopyLoop(c Sim, h Handler, frames [][]byte) (*SimLoop, error) {
	return c.newLoop(h, frames, true)
}

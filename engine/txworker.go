package engine

import "github.com/xdpeng/xdpeng/xsk"

// txWorker is a generator's worker (txonly): it puts the frames of tx, its
// share of the generator, on its port's tx ring and counts their
// completions; it receives nothing.
type txWorker struct {
	port
	tx *txGen
	// wait is what the worker does when it can neither send nor reap.
	wait waiter
}

// newTxWorker makes the worker of queue on cpu that sends tx's frames
// through sock.
func newTxWorker(queue, cpu int, sock *xsk.Socket, o options, tx *txGen) *txWorker {
	w := &txWorker{port: newPort(queue, cpu, sock, o), tx: tx}
	w.wait = newWaiter(&w.port, o)
	w.syncPorts()
	return w
}

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/xdpeng/xdpeng/engine"
)

// flowBuckets counts the frames of its queue in buckets by RX hash: flows
// spread without a header parsed, as a forwarder would spread them over
// workers. Frames without a hash (a driver that has none for them) are
// counted apart.
type flowBuckets struct {
	buckets  [16]uint64
	unhashed uint64
}

func (f *flowBuckets) Handle(b *engine.Batch) {
	for i := range b.Len() {
		h, _, ok := b.RxHash(i)
		if !ok {
			f.unhashed++
			continue
		}
		f.buckets[h%uint32(len(f.buckets))]++
	}
}

// Flows by RX hash: the engine asks the driver for each frame's hash
// (Config.RxMetadata), and the handler reads it with Batch.RxHash. Run it
// as root on a device whose driver gives hashes (probe lists its XDP
// receive metadata), until Ctrl-C.
func Example_rxHash() {
	cfg := engine.DefaultConfig()
	cfg.Interface = "eth1"
	cfg.RxMetadata = engine.RxHash
	perQueue := map[int]*flowBuckets{}
	cfg.Handler = func(queue int) engine.Handler {
		f := new(flowBuckets)
		perQueue[queue] = f
		return f
	}
	e, err := engine.New(cfg)
	if errors.Is(err, engine.ErrRxMetadata) {
		fmt.Println("no RX hash here:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := e.Run(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// Run has returned: the workers are done with their handlers.
	for _, q := range e.Config().Queues {
		f := perQueue[q]
		fmt.Printf("queue %d: %v by hash bucket, %d without a hash\n", q, f.buckets, f.unhashed)
	}
}

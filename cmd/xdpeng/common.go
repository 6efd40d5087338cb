package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/ebpf/rlimit"
)

// raiseMemlock lifts RLIMIT_MEMLOCK for kernels that still charge BPF maps
// and UMEMs against it.
func raiseMemlock() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err)
	}
	return nil
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

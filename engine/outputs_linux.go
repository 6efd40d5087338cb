package engine

import (
	"fmt"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// lookupOutputs finds the output devices and checks them against the input.
// Queue q is forwarded out of queue q: queues are not folded, as two input
// queues on one output queue would need two sockets on it, which the kernel
// refuses.
func lookupOutputs(cfg *Config, in *netdev.Info) ([]output, error) {
	var outs []output
	for _, o := range cfg.Outputs {
		info, err := lookup(o.Interface)
		if err != nil {
			return nil, fmt.Errorf("output device: %w", err)
		}
		if info.Index == in.Index {
			return nil, fmt.Errorf("input %s and output %s are the same device", in.Name, info.Name)
		}
		outQueues := max(info.TxQueues, info.RxQueues)
		for _, q := range cfg.Queues {
			if q >= outQueues {
				return nil, &OutputQueueError{Output: info.Name, Queue: q, OutQueues: outQueues}
			}
		}
		outs = append(outs, output{info: info, copy: o.Copy})
	}
	return outs, nil
}

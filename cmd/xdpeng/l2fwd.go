package main

import (
	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

func init() { addCommand(newL2fwdCmd()) }

func newL2fwdCmd() *cobra.Command {
	var f xskFlags
	c := &cobra.Command{
		Use:   "l2fwd -i DEV [flags]",
		Short: "Receive on AF_XDP sockets, swap MAC addresses, send back out (xdpsock -l)",
		Long: `l2fwd binds one AF_XDP socket per rx queue, like rxdrop, and sends every frame
back out of the queue it arrived on with its source and destination MAC
addresses swapped: a reflector, for measuring the full receive-and-transmit
path. A frame goes out of the UMEM frame it arrived in: no copy in userspace.

The interval lines show rx and tx per queue; tx counts frames the kernel has
completed. A frame that finds the tx ring full is dropped and counted in
tx_ring_full, so that rx = tx + tx_ring_full + dropped (frames too short for
an Ethernet header) once the run ends.

On a real NIC, l2fwd reflects everything it receives, SSH included: use
--udp-port to take only the test traffic out of the kernel.`,
		Example: `  # all queues of dut0, until Ctrl-C
  xdpeng l2fwd -i dut0
  # one queue, busy-polling sockets, 10 s, with the XDP and app statistics
  xdpeng l2fwd -i dut0 -q 0 --busy-poll -d 10s -x -a
  # on a real NIC: reflect only UDP to port 9, copy mode
  xdpeng l2fwd -i eth1 --udp-port 9 -c
  # on the test bed
  ip netns exec xdpeng-dut xdpeng l2fwd -i dut0 --json
  # jumbo frames, each sent back whole (a bed of testbed up --mtu 9000)
  ip netns exec xdpeng-dut xdpeng l2fwd -i dut0 -F`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			cfg.Handler = func(int) engine.Handler { return handler.L2Fwd{} }
			return runXsk(cmd, "l2fwd", &f, cfg)
		},
	}
	c.Long += "\n\n" + fcsNote
	f.register(c.Flags())
	return c
}

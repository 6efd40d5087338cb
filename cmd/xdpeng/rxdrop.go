package main

import (
	"github.com/spf13/cobra"
)

func init() { addCommand(newRxdropCmd()) }

func newRxdropCmd() *cobra.Command {
	var f xskFlags
	c := &cobra.Command{
		Use:   "rxdrop -i DEV [flags]",
		Short: "Receive on AF_XDP sockets and drop every frame (xdpsock -r)",
		Long: `rxdrop binds one AF_XDP socket per rx queue, steers each queue into its socket
with an XDP program, and runs one worker per queue, pinned to its own CPU, that
takes frames from the rx ring in batches and hands them straight back to the
fill ring. It prints per-queue rates every interval and the totals at the end.

UMEM frames (every AF_XDP mode): -f sets their size (2048 or 4096, a power of
two up to the page size), --headroom what the kernel leaves free in front of
each received frame. A frame must fit in one UMEM frame, or with -F
(multi-buffer, XDP frags) in up to 18: jumbo frames, counted as frames and
bytes, never as buffers. -u registers the UMEM in unaligned chunk mode, in huge
pages where the pool has them free (--huge-pages on requires them); the header
says where it is.`,
		Example: `  # all queues of dut0, until Ctrl-C
  xdpeng rxdrop -i dut0
  # queues 0-1 on CPUs 1 and 0, 5 seconds, JSON lines
  xdpeng rxdrop -i dut0 -q 0-1 --cpus 1,0 -d 5s --json
  # on the test bed
  ip netns exec xdpeng-dut xdpeng rxdrop -i dut0 -x -a
  # jumbo frames on a bed made with: xdpeng testbed up --mtu 9000
  ip netns exec xdpeng-dut xdpeng rxdrop -i dut0 -F
  # unaligned chunks, 4096-byte frames, 256 bytes of UMEM headroom
  xdpeng rxdrop -i dut0 -u -f 4096 --headroom 256`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			return runXsk(cmd, "rxdrop", &f, cfg)
		},
	}
	c.Long += "\n\n" + fcsNote
	f.register(c.Flags())
	return c
}

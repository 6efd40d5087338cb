package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/vm"
)

func init() { addCommand(newTestbedCmd()) }

const defaultBedName = "xdpeng"

func newTestbedCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testbed",
		Short: "Create, inspect and remove a test bed: veth pairs, or a QEMU guest (--vm)",
		Long: `A test bed is two network namespaces, NAME-gen (the generator) and NAME-dut
(the device under test), joined by veth pairs genK <-> dutK with addresses
198.18.K.1 and 198.18.K.2, static neighbours, GRO on (so that XDP-redirected
frames are delivered). The DUT's receive work runs in softirq on the sending
CPU (layout A) or, with --napi threaded, in NAPI threads pinned to the DUT's
own CPU (layout B).

With --vm KERNEL the device under test is a QEMU guest instead: a kernel
users run (Debian's 5.10, 6.1, 6.12, fetched once with apt into
/var/cache/xdpeng/kernels) and a real driver, virtio-net, with NAPI,
interrupts and --queues RSS queues. Its ports eth0.. are taps vtap0.. in
NAME-gen; commands run in it with testbed exec.`,
		Example: `  xdpeng testbed up --queues 2
  xdpeng testbed status
  xdpeng testbed down --name xdpeng
  xdpeng testbed up --vm 6.1 --name v1 --queues 2
  xdpeng testbed exec v1 -- xdpeng probe -i eth0`,
	}
	cmd.AddCommand(newTestbedUpCmd(), newTestbedDownCmd(), newTestbedStatusCmd(), newTestbedExecCmd())
	requireSubcommand(cmd)
	return cmd
}

func newTestbedUpCmd() *cobra.Command {
	var (
		cfg              testbed.Config
		genCPUs, dutCPUs string
		napi             string
		vmKernel         string
		loop, hash       bool
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Create a test bed",
		Long: `Create namespaces NAME-gen and NAME-dut and --links veth pairs with --queues
receive and transmit queues on each end, then print what was made and how to
use it. Nothing is left behind if a step fails.

--napi chooses where the DUT's veth receive work runs:
  softirq   on the sending CPU (the generator's): layout "A", the default
  threaded  threaded and pinned to --dut-cpus, or fail: layout "B"
  auto      threaded, pinned to --dut-cpus, if they differ from --gen-cpus`,
		Example: `  xdpeng testbed up
  xdpeng testbed up --name t1 --queues 4 --links 2
  xdpeng testbed up --gen-cpus 0 --dut-cpus 1 --napi threaded
  xdpeng testbed up --mtu 9000              # jumbo frames (rxdrop -F, txonly -F)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if vmKernel != "" {
				for _, f := range []string{"gen-cpus", "dut-cpus", "napi", "mtu"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s is for a veth bed: a VM bed (--vm) takes --name, --queues, --links, --loop and --hash", f)
					}
				}
				return upVM(cmd, vm.Config{Name: cfg.Name, Kernel: vmKernel, Queues: cfg.Queues, Links: cfg.Links, Loop: loop, Hash: hash})
			}
			if loop || hash {
				return errors.New("--loop and --hash are for a VM bed: add --vm KERNEL")
			}
			if cfg.Queues < 1 || cfg.Links < 1 {
				return fmt.Errorf("--queues %d, --links %d: each needs at least 1", cfg.Queues, cfg.Links)
			}
			if cmd.Flags().Changed("mtu") && (cfg.MTU < testbed.MinMTU || cfg.MTU > testbed.MaxMTU) {
				return fmt.Errorf("--mtu %d: use %d-%d (9000 for jumbo frames)", cfg.MTU, testbed.MinMTU, testbed.MaxMTU)
			}
			var err error
			if cfg.NAPI, err = parseNAPIMode(napi); err != nil {
				return err
			}
			if cfg.GenCPUs, cfg.DUTCPUs, err = bedCPUs(genCPUs, dutCPUs); err != nil {
				return err
			}
			if err := privilege.Check(typed(cmd), privilege.Namespaces|privilege.Links); err != nil {
				return err
			}
			// Ctrl-C or SIGTERM half-way would leave half a bed: hold them
			// until Up has finished, then undo what it made.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			bed, err := testbed.Up(cfg)
			if err != nil {
				return err
			}
			select {
			case sig := <-sigs:
				return errors.Join(fmt.Errorf("interrupted (%v): removing test bed %s", sig, bed.Name), bed.Down())
			default:
			}
			printBed(cmd.OutOrStdout(), bed)
			printExamples(cmd.OutOrStdout(), bed)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Name, "name", defaultBedName, "test bed name: namespaces are NAME-gen and NAME-dut")
	f.IntVarP(&cfg.Queues, "queues", "q", 1, fmt.Sprintf("receive and transmit queues per veth end (1-%d)", testbed.MaxQueues))
	f.IntVar(&cfg.Links, "links", 1, fmt.Sprintf("veth pairs genK <-> dutK (1-%d)", testbed.MaxLinks))
	f.StringVar(&genCPUs, "gen-cpus", "", "CPUs of the generator, e.g. 0 (default: the first CPU)")
	f.StringVar(&dutCPUs, "dut-cpus", "", "CPUs for the DUT's NAPI kthreads, queue 0's on the first, round-robin, e.g. 1 or 1,0 (default: the last CPU)")
	f.StringVar(&napi, "napi", "softirq", "DUT receive work: softirq (layout A), threaded (layout B) or auto")
	f.StringVar(&vmKernel, "vm", "", "boot a QEMU guest as the DUT, with this Debian kernel: "+vmKernels())
	f.BoolVar(&loop, "loop", false, "with --vm: bridge the ports' taps, so that what the guest sends out of one port arrives at the others")
	f.BoolVar(&hash, "hash", false, "with --vm: offer the guest virtio-net's hash report, so that its driver gives XDP each frame's RSS hash (Linux 6.11+; count --by rxhash)")
	f.IntVar(&cfg.MTU, "mtu", 0, fmt.Sprintf("MTU of both ends of every link, %d-%d (default: the kernel's, 1500); 9000 for jumbo frames", testbed.MinMTU, testbed.MaxMTU))
	return cmd
}

func parseNAPIMode(s string) (testbed.NAPIMode, error) {
	switch s {
	case "auto":
		return testbed.NAPIAuto, nil
	case "softirq":
		return testbed.NAPISoftirq, nil
	case "threaded":
		return testbed.NAPIThreaded, nil
	}
	return 0, fmt.Errorf("--napi %q: use auto, softirq or threaded", s)
}

func newTestbedDownCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove a test bed",
		Long: `Delete the veth pairs and the namespaces NAME-gen and NAME-dut. Removing a bed
that is already gone, or half made, is not an error.`,
		Example: `  xdpeng testbed down
  xdpeng testbed down --name t1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := testbed.ValidateName(name); err != nil {
				return err
			}
			if err := privilege.Check(typed(cmd), privilege.Namespaces|privilege.Links); err != nil {
				return err
			}
			if slices.Contains(vmNames(), name) {
				if err := vm.Down(name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "VM test bed %s removed (QEMU, taps, namespace %s)\n", name, testbed.GenNS(name))
				return nil
			}
			beds, err := testbed.List()
			if err != nil {
				return err
			}
			if !slices.Contains(beds, name) {
				fmt.Fprintf(cmd.OutOrStdout(), "no test bed %s (namespaces %s, %s): nothing to remove\n", name, testbed.GenNS(name), testbed.DUTNS(name))
				return nil
			}
			if err := testbed.Down(name); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "test bed %s removed (namespaces %s, %s)\n", name, testbed.GenNS(name), testbed.DUTNS(name))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", defaultBedName, "test bed name")
	return cmd
}

func newTestbedStatusCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Describe test beds",
		Long: `Without --name, describe every test bed found (NAME-gen/NAME-dut namespaces in
/var/run/netns); with --name, describe that one or fail if it does not exist.`,
		Example: `  xdpeng testbed status
  xdpeng testbed status --name t1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Describing a bed means entering its namespaces.
			if err := privilege.Check(typed(cmd), privilege.Namespaces); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			vms := vmNames()
			if name != "" && slices.Contains(vms, name) {
				b, err := vm.Open(name)
				if err != nil {
					return err
				}
				printVMBed(out, b)
				return nil
			}
			if name != "" {
				bed, err := testbed.Open(name)
				if err != nil {
					return err
				}
				printBed(out, bed)
				return nil
			}
			names, err := testbed.List()
			if err != nil {
				return err
			}
			names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(vms, n) })
			if len(names) == 0 && len(vms) == 0 {
				fmt.Fprintln(out, "no test beds; create one with: xdpeng testbed up")
				return nil
			}
			for i, n := range vms {
				if i > 0 {
					fmt.Fprintln(out)
				}
				b, err := vm.Open(n)
				if err != nil {
					fmt.Fprintf(out, "VM test bed %s: %v\n", n, err)
					continue
				}
				printVMBed(out, b)
			}
			if len(vms) > 0 && len(names) > 0 {
				fmt.Fprintln(out)
			}
			var errs []error
			for i, n := range names {
				if i > 0 {
					fmt.Fprintln(out)
				}
				bed, err := testbed.Open(n)
				if err != nil {
					// Keep listing: a half-made bed should not hide the others.
					fmt.Fprintf(out, "test bed %s: %v\n", n, err)
					errs = append(errs, err)
					continue
				}
				printBed(out, bed)
			}
			if len(errs) > 0 {
				return fmt.Errorf("%d of %d test beds are broken: %w", len(errs), len(names), errors.Join(errs...))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "test bed name (default: all)")
	return cmd
}

func printBed(w io.Writer, b *testbed.Bed) {
	fmt.Fprintf(w, "test bed %s\n", b.Name)
	fmt.Fprintf(w, "  namespaces   %s (generator), %s (device under test)\n", b.GenNS, b.DUTNS)
	fmt.Fprintf(w, "  queues       %d rx + %d tx per veth end\n", b.Queues, b.Queues)
	fmt.Fprintf(w, "  MTU          %d\n", b.MTU)
	for _, l := range b.Links {
		fmt.Fprintf(w, "  link         %-6s %s %-15s <-> %-6s %s %s\n",
			l.Gen, l.GenMAC, l.GenIP, l.DUT, l.DUTMAC, l.DUTIP)
	}
	fmt.Fprintf(w, "  CPUs         generator %s, DUT %s\n", cpusOrDash(b.GenCPUs), cpusOrDash(b.DUTCPUs))
	if b.ThreadedNAPI {
		var ts []string
		for _, t := range b.NAPIThreads {
			ts = append(ts, fmt.Sprintf("napi/%s-%d (pid %d, CPU %s)", t.Dev, t.ID, t.PID, cpusOrDash(t.CPUs)))
		}
		fmt.Fprintf(w, "  threaded NAPI yes: %s\n", strings.Join(ts, ", "))
		if b.NAPINote != "" {
			fmt.Fprintf(w, "                %s\n", b.NAPINote)
		}
	} else {
		fmt.Fprintf(w, "  threaded NAPI no (%s)\n", b.NAPINote)
	}
}

func cpusOrDash(c []int) string {
	if len(c) == 0 {
		return "-"
	}
	return cpuset.Format(c)
}

func printExamples(w io.Writer, b *testbed.Bed) {
	l := b.Links[0]
	q := "0"
	if b.Queues > 1 {
		q = fmt.Sprintf("0-%d", b.Queues-1)
	}
	self := os.Args[0]
	fmt.Fprintf(w, "\ntry:\n")
	fmt.Fprintf(w, "  ip netns exec %s %s rxdrop -i %s -q %s\n", b.DUTNS, self, l.DUT, q)
	fmt.Fprintf(w, "  ip netns exec %s %s gen -i %s -d 5s\n", b.GenNS, self, l.Gen)
	if b.MTU > 1500 {
		// Live frames stop at a page; AF_XDP transmit sends jumbo frames.
		fmt.Fprintf(w, "  ip netns exec %s %s rxdrop -i %s -q %s -F\n", b.DUTNS, self, l.DUT, q)
		fmt.Fprintf(w, "  ip netns exec %s %s txonly -i %s -F -s %d --count 100000\n", b.GenNS, self, l.Gen, wireSize(min(b.MTU, 9000)+14))
	}
	fmt.Fprintf(w, "  ip netns exec %s ethtool -S %s\n", b.DUTNS, l.DUT)
	fmt.Fprintf(w, "  %s testbed down --name %s\n", self, b.Name)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/lab/vm"
)

// upVM boots a VM test bed: `testbed up --vm KERNEL`. Ctrl-C or SIGTERM
// while it boots removes what was made.
func upVM(cmd *cobra.Command, cfg vm.Config) error {
	if err := privilege.Check(typed(cmd), privilege.Namespaces|privilege.Links); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(cmd.ErrOrStderr(), "booting guest kernel %s under QEMU (TCG: rates in the guest are emulator speed)...\n", cfg.Kernel)
	b, err := vm.Up(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: VM test bed %s removed: %w", cfg.Name, err)
		}
		var ue *vm.UnavailableError
		if errors.As(err, &ue) {
			return fmt.Errorf("%w (kernels are fetched with apt from the system's Debian mirror into %s)", err, vm.CacheDir)
		}
		return err
	}
	printVMBed(cmd.OutOrStdout(), b)
	// The guest sees the host's files at the same paths: a relative one
	// would be taken from the guest's working directory.
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "\ntry:\n")
	fmt.Fprintf(w, "  %s testbed exec %s -- %s probe -i eth0\n", self, b.Name, self)
	fmt.Fprintf(w, "  %s testbed exec %s -- %s rxdrop -i eth0 -d 10s\n", self, b.Name, self)
	if b.Loop {
		fmt.Fprintf(w, "  %s testbed exec %s -- %s txonly -i eth1 -G %s --count 1000\n", self, b.Name, self, b.Ports[0].MAC)
	} else {
		fmt.Fprintf(w, "  ip netns exec %s %s txonly -i %s -G %s --count 1000\n", b.GenNS, self, b.Ports[0].Tap, b.Ports[0].MAC)
	}
	fmt.Fprintf(w, "  %s testbed down --name %s\n", self, b.Name)
	return nil
}

func printVMBed(w io.Writer, b *vm.Bed) {
	state := "not running (remove it with testbed down)"
	if b.Running {
		state = fmt.Sprintf("running (QEMU pid %d)", b.PID)
	}
	fmt.Fprintf(w, "VM test bed %s: %s\n", b.Name, state)
	if b.Kernel.Version == "" {
		fmt.Fprintf(w, "  state        incomplete (%s)\n", b.Dir)
		return
	}
	fmt.Fprintf(w, "  kernel       %s (Debian %s, %s)\n", b.Kernel.Version, b.Kernel.Suite, b.Kernel.Package)
	fmt.Fprintf(w, "  guest        %d CPUs, virtio-net, %d queues per port, TCG\n", b.CPUs, b.Queues)
	fmt.Fprintf(w, "  namespace    %s (generator: the taps)\n", b.GenNS)
	for _, p := range b.Ports {
		tester := p.Tap + " " + p.TapIP
		if b.Loop {
			tester = p.Tap + " (bridged to the other ports)"
		}
		fmt.Fprintf(w, "  port         %-5s %s %-15s <-> %s\n", p.Guest, p.MAC, p.GuestIP, tester)
	}
	fmt.Fprintf(w, "  management   ssh root@%s from %s (testbed exec)\n", b.MgmtIP, b.GenNS)
	fmt.Fprintf(w, "  console      %s/console.log\n", b.Dir)
}

func newTestbedExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "exec NAME -- COMMAND [ARG...]",
		Short: "Run a command in a VM test bed's guest",
		Long: `Run COMMAND as root in the guest of VM test bed NAME, over ssh on its
management link, with this terminal's standard input and output; the exit
status is the command's (255: ssh itself failed). The guest's root is the
host's / read-only with a writable overlay, so host paths work as they are.`,
		Example: `  xdpeng testbed exec v1 -- uname -r
  xdpeng testbed exec v1 -- xdpeng probe -i eth0`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return errors.New("give the bed's name and a command: testbed exec NAME -- COMMAND")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := privilege.Check(typed(cmd), privilege.Namespaces); err != nil {
				return err
			}
			b, err := vm.Open(args[0])
			if err != nil {
				return err
			}
			if !b.Running {
				return fmt.Errorf("VM test bed %s is not running: remove it with testbed down --name %s, then boot it again", b.Name, b.Name)
			}
			c := b.Command(context.Background(), args[1:]...)
			// The terminal's own files, not pipes: ssh hands them to the
			// bed's master connection, and a pipe's reader would wait
			// for that to let go of them.
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
			// The guest's command gets the terminal's signals through ssh.
			signal.Ignore(os.Interrupt, syscall.SIGTERM)
			err = c.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return passedExit(ee.ExitCode())
			}
			return err
		},
	}
}

// vmNames lists the VM beds, so that the veth bed commands leave their
// generator namespaces alone.
func vmNames() []string {
	names, _ := vm.List()
	return names
}

func vmKernels() string {
	var s []string
	for _, r := range vm.Releases {
		s = append(s, r.Name)
	}
	return strings.Join(s, ", ")
}

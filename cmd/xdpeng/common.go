package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/cpuset"
)

// needRoot is what every command that loads programs or opens sockets does
// first, after its flags are checked: refuse without the capabilities need
// asks for, naming the command, and lift RLIMIT_MEMLOCK for kernels that
// still charge BPF maps and UMEMs against it (not for privilege.Sockets,
// a worker that loads nothing and may run without root).
func needRoot(command string, need privilege.Need) error {
	if err := privilege.Check(command, need); err != nil {
		return err
	}
	if need == privilege.Sockets {
		// It loads nothing; its UMEM is charged to RLIMIT_MEMLOCK
		// unless it holds CAP_IPC_LOCK, and it may not raise the limit.
		return nil
	}
	return privilege.RaiseMemlock()
}

// typed is the command as the user typed it, without the program's name:
// "testbed status", "kern drop", "demo".
func typed(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// driverLabel names a device's driver in a header: "veth", or "no driver"
// for a device that reports none (lo).
func driverLabel(driver string) string {
	if driver == "" {
		return "no driver"
	}
	return driver
}

// bedCPUs parses --gen-cpus and --dut-cpus, each an ordered list of CPUs
// (empty: nil, for the default).
func bedCPUs(gen, dut string) (genCPUs, dutCPUs []int, err error) {
	if gen != "" {
		if genCPUs, err = cpuset.ParseList(gen, "CPU"); err != nil {
			return nil, nil, fmt.Errorf("--gen-cpus: %w", err)
		}
	}
	if dut != "" {
		if dutCPUs, err = cpuset.ParseList(dut, "CPU"); err != nil {
			return nil, nil, fmt.Errorf("--dut-cpus: %w", err)
		}
	}
	return genCPUs, dutCPUs, nil
}

// progressLines prints a run's progress on cmd's stderr, each line after
// the command's name; nil when quiet.
func progressLines(cmd *cobra.Command, name string, quiet bool) func(string) {
	if quiet {
		return nil
	}
	errw := cmd.ErrOrStderr()
	return func(msg string) { fmt.Fprintf(errw, "%s: %s\n", name, msg) }
}

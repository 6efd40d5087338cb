// Command xdpeng is an AF_XDP userspace drop/forward engine and the in-kernel
// paths to compare it with. Each subcommand lives in its own file; this file
// holds the root command and what the subcommands share.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/selftest"
)

var rootCmd = &cobra.Command{
	Use:   "xdpeng",
	Short: "AF_XDP userspace drop/forward engine and in-kernel XDP comparison",
	Long: `xdpeng steers each receive queue into an AF_XDP socket and runs one pinned Go
worker per queue that drops, counts or forwards frames in batches. Beside it
stand the in-kernel paths (XDP drop/tx/redirect, tc drop) so that one tool
measures what moving the work to userspace costs, per packet and per core.

Commands that attach programs, open AF_XDP sockets or make namespaces need
root (CAP_NET_ADMIN, CAP_BPF, ...); probe and stats, which only read, do not.
Try it on the built-in veth test bed:
  sudo xdpeng demo          (from a checkout: sudo make demo)`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// addCommand registers a subcommand; each subcommand file calls it from init.
func addCommand(c *cobra.Command) { rootCmd.AddCommand(c) }

// requireSubcommand makes a command that only groups subcommands fail,
// naming its subcommands, when it is run without one or with an unknown one
// (cobra would print the help and exit 0).
func requireSubcommand(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		if len(args) == 0 {
			return fmt.Errorf("%s needs a subcommand: one of %s (see %s --help)", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
		}
		return fmt.Errorf("unknown subcommand %q for %s: use one of %s", args[0], cmd.CommandPath(), strings.Join(names, ", "))
	}
}

// noArgs refuses arguments to a command that takes flags only, saying what
// the word may have been meant as: a duration given without -d, a device
// without -i, a test bed without --name.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if _, err := parseSeconds(args[0]); err == nil && cmd.Flags().Lookup("duration") != nil {
		hint = fmt.Sprintf(" (did you mean -d %s?)", args[0])
	} else if _, err := net.InterfaceByName(args[0]); err == nil && cmd.Flags().Lookup("interface") != nil {
		hint = fmt.Sprintf(" (did you mean -i %s?)", args[0])
	} else if cmd.Flags().Lookup("name") != nil {
		hint = fmt.Sprintf(" (did you mean --name %s?)", args[0])
	}
	return cliFlagError{fmt.Errorf("%s takes no arguments, only flags: %q%s (see %s --help)", typed(cmd), args[0], hint, cmd.CommandPath())}
}

// explainNoArgs gives every command that takes no arguments
// (cobra.NoArgs, whose refusal is "unknown command \"5\"") noArgs instead.
func explainNoArgs(c *cobra.Command) {
	if c.Args != nil && reflect.ValueOf(c.Args).Pointer() == reflect.ValueOf(cobra.NoArgs).Pointer() {
		c.Args = noArgs
	}
	for _, sub := range c.Commands() {
		explainNoArgs(sub)
	}
}

// completionsOnce registers the flags' value completions before the first
// command line runs, when every command has been added.
var completionsOnce sync.Once

// exitCode is returned by errors that want a specific process exit status.
type exitCode interface{ ExitCode() int }

// passedExit is the exit status of a command xdpeng ran for the user
// (testbed exec), passed on as it is: that command said what went wrong.
type passedExit int

func (e passedExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// cliFlagError is a flag that could not be parsed, or a required one that
// is missing: main prints the command's usage line under it.
type cliFlagError struct{ err error }

func (e cliFlagError) Error() string { return e.err.Error() }
func (e cliFlagError) Unwrap() error { return e.err }

// isFlagError reports whether err is about the command line's flags:
// one that could not be parsed, or a required one not given (cobra says
// "required flag(s) ... not set" and has no type for it).
func isFlagError(err error) bool {
	var fe cliFlagError
	return errors.As(err, &fe) || strings.HasPrefix(err.Error(), "required flag(s) ")
}

func main() {
	// selftest's guard (which puts ring sizes back if a run is killed) is
	// this program started again.
	selftest.GuardMain()
	// So is the one that puts back the NAPI settings of --busy-poll.
	napiGuardMain()
	catchSIGPIPE()
	rootCmd.SetOut(stdout)
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run runs the command line args and returns the exit status; errors go
// to stderr as one line, "xdpeng: ...", with the command's usage line
// under an error about its flags.
func run(args []string, stderr io.Writer) int {
	explainNoArgs(rootCmd)
	completionsOnce.Do(func() { registerCompletions(rootCmd) })
	rootCmd.SetArgs(args)
	rootCmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cliFlagError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	c, err := rootCmd.ExecuteC()
	if stdout.closed() {
		// Whoever reads the output is gone (| head, a dead ssh
		// session): nothing more to say, as a tool ended by SIGPIPE.
		return sigpipeStatus
	}
	if err == nil {
		return 0
	}
	var pe passedExit
	if errors.As(err, &pe) {
		return int(pe)
	}
	if s := xdpsockHint(args); c == rootCmd && s != "" {
		// Cobra's own words ("unknown command "0"") would mislead.
		fmt.Fprintf(stderr, "xdpeng: %s\n", s)
		return 1
	}
	fmt.Fprintf(stderr, "xdpeng: %v\n", err)
	if s := bedAdvice(err, args); s != "" {
		fmt.Fprintf(stderr, "xdpeng: %s\n", s)
	}
	var hp *engine.HandlerPanicError
	if errors.As(err, &hp) {
		// A panic in one of xdpeng's own handlers is a bug: its stack
		// is what a report needs.
		fmt.Fprintf(stderr, "%s", hp.Stack)
	}
	if isFlagError(err) {
		fmt.Fprintf(stderr, "usage: %s\n", c.UseLine())
	}
	var ec exitCode
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// xdpsockModes are xdpsock's mode flags and the xdpeng command of each.
var xdpsockModes = map[string]string{
	"-r": "rxdrop", "--rxdrop": "rxdrop",
	"-t": "txonly", "--txonly": "txonly",
	"-l": "l2fwd", "--l2fwd": "l2fwd",
}

// xdpsockHint answers a command line that starts with flags, as xdpsock's
// does (xdpsock -i dut0 -r), with the xdpeng command that does the same;
// "" for one that names no interface.
func xdpsockHint(args []string) string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return ""
	}
	mode, rest, iface := "", []string{}, false
	for _, a := range args {
		if m, ok := xdpsockModes[a]; ok && mode == "" {
			mode = m
			continue
		}
		if strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "--interface") {
			iface = true
		}
		rest = append(rest, a)
	}
	if !iface {
		return ""
	}
	if mode == "" {
		return fmt.Sprintf("the command comes first, then its flags: xdpeng rxdrop|txonly|l2fwd %s (xdpsock's -r, -t, -l)", strings.Join(rest, " "))
	}
	return fmt.Sprintf("xdpsock's spelling; in xdpeng the mode is the command: xdpeng %s %s", mode, strings.Join(rest, " "))
}

package main

// xdpeng selftest: the kernel's AF_XDP conformance tests (xskxceiver) on a
// device pair or a test bed of its own (internal/lab/selftest).

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/lab/selftest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

func init() { addCommand(newSelftestCmd()) }

func newSelftestCmd() *cobra.Command {
	var (
		dev, peer string
		modes     []string
		tests     []string
		list      bool
		asJSON    bool
	)
	c := &cobra.Command{
		Use:   "selftest [-i DEV --peer DEV2] [--modes skb,drv,zc] [--tests NAME,...|--list] [--json]",
		Short: "Check that AF_XDP works on a device: the kernel's xskxceiver tests",
		Long: `selftest runs the AF_XDP conformance tests of the kernel's own suite
(xskxceiver, tools/testing/selftests/bpf), under the same names, on queue 0 of
DEV with frames sent from --peer (its veth peer, or the other port of a cable
loop), in each mode:

  skb  generic XDP, copy mode
  drv  native XDP in the driver, copy mode
  zc   native XDP, zero-copy

Each frame is checked whole (length, headers, every payload word, its order,
where in its buffer the kernel put it), each completion in order, and each
XDP_STATISTICS counter against what the test arranged, exactly. A test ends
pass, fail (what was expected, what came, at which frame) or skip (what the
device or kernel lacks). Only frames of the test (EtherType 0x9000) arriving
on queue 0 go to its sockets; the device's other traffic goes on to the stack.

Without -i it makes a veth test bed of its own and removes it at the end.
Everything a test attaches is removed when it ends; the steering program is
held by a bpf_link, which the kernel removes even if selftest is killed.
The exit status is 1 when a test failed.`,
		Example: `  xdpeng selftest
  xdpeng selftest --modes skb --tests SEND_RECEIVE,POLL_RX
  xdpeng selftest -i eth1 --peer eth2 --modes drv,zc
  xdpeng selftest --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			sel, err := selftest.Select(tests)
			if err != nil {
				return cliFlagError{fmt.Errorf("--tests: %w", err)}
			}
			if list {
				printTestList(out, sel, asJSON)
				return nil
			}
			var ms []selftest.Mode
			for _, m := range modes {
				mode, err := selftest.ParseMode(strings.TrimSpace(m))
				if err != nil {
					return cliFlagError{fmt.Errorf("--modes: %w", err)}
				}
				ms = append(ms, mode)
			}
			if len(ms) == 0 {
				return cliFlagError{errors.New("--modes: give at least one of skb, drv, zc")}
			}
			if dev == "" && peer != "" {
				return cliFlagError{errors.New("--peer needs -i DEV, the device under test")}
			}
			if dev != "" && peer == "" {
				return cliFlagError{errors.New("-i needs --peer DEV2: the device the test frames come from (DEV's veth peer, or the other port of a cable loop)")}
			}
			need := privilege.AFXDP
			if dev == "" {
				need |= privilege.Namespaces | privilege.Links
			}
			if err := needRoot(typed(cmd), need); err != nil {
				return err
			}
			var pair selftest.Pair
			var where string
			if dev != "" {
				if pair, err = selftest.LocalPair(dev, peer); err != nil {
					var nf *netdev.NoInterfaceError
					if errors.As(err, &nf) {
						return fmt.Errorf("%w (list them with: ip link)", err)
					}
					return err
				}
				where = fmt.Sprintf("%s -> %s", peer, dev)
			} else {
				bed, err := testbed.Up(testbed.Config{Name: testbed.UniqueName("xst")})
				if err != nil {
					return err
				}
				defer bed.Down()
				pair = selftest.BedPair(bed)
				where = fmt.Sprintf("test bed %s: %s (%s) -> %s (%s)", bed.Name, pair.Tx.Name, bed.GenNS, pair.Rx.Name, bed.DUTNS)
			}
			ctx, stop := signalContext()
			defer stop()
			if !asJSON {
				fmt.Fprintf(out, "selftest: %s, queue 0; %d tests in %s\n", where, len(sel), strings.Join(modes, ", "))
			}
			failed := 0
			_, err = selftest.Run(ctx, selftest.Config{
				Pair: pair, Modes: ms, Tests: sel,
				OnResult: func(r selftest.Result) {
					if r.Status == selftest.Fail {
						failed++
					}
					printResult(out, r, asJSON)
				},
				OnSummary: func(s selftest.Summary) { printSummary(out, s, asJSON) },
			})
			if err != nil {
				if ctx.Err() != nil {
					return interrupted{err}
				}
				return err
			}
			if failed > 0 {
				return fmt.Errorf("selftest: %d test(s) failed", failed)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&dev, "interface", "i", "", "device under test (it receives); without it, a veth test bed of selftest's own")
	c.Flags().StringVar(&peer, "peer", "", "the device that sends to DEV: its veth peer, or the other port of a cable loop")
	c.Flags().StringSliceVar(&modes, "modes", []string{"skb", "drv", "zc"}, "modes to run: skb, drv, zc")
	c.Flags().StringSliceVar(&tests, "tests", nil, "tests to run (default all; see --list)")
	c.Flags().BoolVar(&list, "list", false, "list the tests and what each checks, and run none")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON lines: one per test (type test), one per mode (type summary)")
	return c
}

// testJSON is a --json line.
type testJSON struct {
	Type string `json:"type"`
	selftest.Result
}

type summaryJSON struct {
	Type string `json:"type"`
	selftest.Summary
}

type listJSON struct {
	Type   string `json:"type"`
	Test   string `json:"test"`
	Checks string `json:"checks"`
}

func printTestList(w io.Writer, tests []selftest.Test, asJSON bool) {
	for _, t := range tests {
		if asJSON {
			writeJSON(w, listJSON{Type: "list", Test: t.Name, Checks: t.Checks})
			continue
		}
		fmt.Fprintf(w, "%-34s %s\n", t.Name, t.Checks)
	}
}

func printResult(w io.Writer, r selftest.Result, asJSON bool) {
	if asJSON {
		writeJSON(w, testJSON{Type: "test", Result: r})
		return
	}
	line := fmt.Sprintf("%-3s  %-34s %-4s %6.2fs  ", strings.ToUpper(r.Mode), r.Test, r.Status, r.Seconds)
	switch r.Status {
	case selftest.Fail:
		if r.Expected != "" || r.Got != "" {
			line += fmt.Sprintf("%s: expected %s, got %s", r.Detail, r.Expected, r.Got)
		} else {
			line += r.Detail
		}
		if r.Frame != nil {
			line += fmt.Sprintf(" (frame %d)", *r.Frame)
		}
	default:
		line += r.Detail
	}
	fmt.Fprintln(w, line)
}

func printSummary(w io.Writer, s selftest.Summary, asJSON bool) {
	if asJSON {
		writeJSON(w, summaryJSON{Type: "summary", Summary: s})
		return
	}
	fmt.Fprintf(w, "%-3s  summary: %d passed, %d failed, %d skipped (%.1f s)\n", strings.ToUpper(s.Mode), s.Passed, s.Failed, s.Skipped, s.Seconds)
}

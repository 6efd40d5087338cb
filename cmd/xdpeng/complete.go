package main

// Completion of flag values: the shells' completion scripts ask the binary
// (xdpeng __complete ...), and these answer for the flags that take a
// device, a test bed or one of a fixed set of words.

import (
	"net"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/internal/lab/bench"
	"github.com/xdpeng/xdpeng/internal/lab/compare"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/progbench"
	"github.com/xdpeng/xdpeng/internal/lab/selftest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
)

// valueCompletions are, by flag name, the words a flag takes; a flag of
// a list (a StringSlice, or one whose name is in listFlags) completes each
// element after a comma.
var valueCompletions = map[string]func(c *cobra.Command) []string{
	"interface":        devices,
	"out":              devices,
	"peer":             devices,
	"family":           words("drop", "forward", "all"),
	"layout":           words("A", "B"),
	"modes":            words("skb", "drv", "zc"),
	"huge-pages":       words("auto", "on", "off"),
	"xdp-pass":         words(xdpPassAuto, xdpPassAlways, xdpPassNever),
	"hook":             words("xdp", "tc"),
	"method":           words("auto", "live", "xsk", "packet"),
	"gen-method":       words("auto", "live", "xsk", "packet"),
	"by":               words("port", "rxhash"),
	"packet-operation": func(*cobra.Command) []string { return kern.PacketOps },
	"packet-ops":       func(*cobra.Command) []string { return kern.PacketOps },
	"load-mode":        words("dpa", "load-bytes"),
	"remote-action":    words("drop", "pass"),
	"policy":           words("SCHED_OTHER", "SCHED_FIFO", "SCHED_RR"),
	"programs":         func(*cobra.Command) []string { return progbench.Programs },
	"tests": func(*cobra.Command) []string {
		var out []string
		for _, t := range selftest.Tests() {
			out = append(out, t.Name)
		}
		return out
	},
	"scenarios": func(*cobra.Command) []string {
		var out []string
		for _, s := range bench.Scenarios() {
			out = append(out, s.Name)
		}
		return out
	},
	"paths": func(c *cobra.Command) []string {
		ps := compare.AllPaths()
		if c.Name() == "latency" {
			ps = compare.LatencyPaths()
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name+"\t"+p.Doc)
		}
		return out
	},
	"name": func(c *cobra.Command) []string {
		if c.Parent() == nil || c.Parent().Name() != "testbed" || c.Name() == "up" {
			return nil // a new bed's name
		}
		beds, _ := testbed.List()
		return beds
	},
}

// listFlags take comma-separated values although they are plain strings.
var listFlags = []string{"paths", "scenarios"}

// registerCompletions gives every flag of root's commands that
// valueCompletions knows its completion; the rest of a command's flags
// complete file names, as cobra's do by default.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			values, ok := valueCompletions[f.Name]
			if !ok {
				return
			}
			if _, done := c.GetFlagCompletionFunc(f.Name); done {
				return
			}
			list := strings.HasSuffix(f.Value.Type(), "Slice") || slices.Contains(listFlags, f.Name)
			_ = c.RegisterFlagCompletionFunc(f.Name, func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				return completeValue(values(c), toComplete, list)
			})
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeValue is the completion of toComplete among values ("word" or
// "word\tdescription"): with list, of the element after its last comma,
// leaving out the words already given and the trailing space, so that
// another may follow.
func completeValue(values []string, toComplete string, list bool) ([]string, cobra.ShellCompDirective) {
	prefix, last := "", toComplete
	var given []string
	if list {
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			prefix, last = toComplete[:i+1], toComplete[i+1:]
			given = strings.Split(toComplete[:i], ",")
		}
	}
	var out []string
	for _, v := range values {
		word, _, _ := strings.Cut(v, "\t")
		if strings.HasPrefix(word, last) && !slices.Contains(given, word) {
			out = append(out, prefix+v)
		}
	}
	directive := cobra.ShellCompDirectiveNoFileComp
	if list {
		directive |= cobra.ShellCompDirectiveNoSpace
	}
	return out, directive
}

// words completes a fixed set.
func words(w ...string) func(*cobra.Command) []string {
	return func(*cobra.Command) []string { return w }
}

// devices are the network devices of this namespace and, where this
// process may enter them (root), of the test beds' namespaces, each of
// those described by its namespace (for ip netns exec NS xdpeng ...).
func devices(*cobra.Command) []string {
	var out []string
	seen := map[string]bool{}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			out = append(out, i.Name)
			seen[i.Name] = true
		}
	}
	beds, _ := testbed.List()
	for _, bed := range beds {
		for _, ns := range []string{bed + "-dut", bed + "-gen"} {
			var ifs []net.Interface
			if testbed.Do(ns, func() (err error) { ifs, err = net.Interfaces(); return err }) != nil {
				continue
			}
			for _, i := range ifs {
				if !seen[i.Name] && i.Name != "lo" {
					out = append(out, i.Name+"\tin "+ns+": ip netns exec "+ns+" xdpeng ...")
					seen[i.Name] = true
				}
			}
		}
	}
	return out
}

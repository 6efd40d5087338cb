package main

// The manual pages and shell completion files, generated from the commands
// themselves so that they cannot drift from --help: `make install` runs
// the hidden `xdpeng docs` and installs what it writes.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { addCommand(newDocsCmd()) }

// completionFiles are the completion scripts writeCompletions makes, by
// shell, under the names each shell's completion directory wants.
var completionFiles = map[string]string{"bash": "xdpeng", "zsh": "_xdpeng", "fish": "xdpeng.fish"}

func newDocsCmd() *cobra.Command {
	var manDir, compDir string
	c := &cobra.Command{
		Use:   "docs [--man DIR] [--completion DIR]",
		Short: "Write the manual pages and the shell completion files (for make install)",
		Long: `docs writes a manual page per command, xdpeng(1), xdpeng-rxdrop(1),
xdpeng-kern-drop(1), ..., into the --man directory, and the completion files
for bash (xdpeng), zsh (_xdpeng) and fish (xdpeng.fish) into the --completion
directory, all from the commands' own help. make install runs it.`,
		Example: `  xdpeng docs --man /tmp/man --completion /tmp/completion
  man -l /tmp/man/xdpeng-rxdrop.1`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if manDir == "" && compDir == "" {
				return cliFlagError{errors.New("nothing to write: give --man DIR, --completion DIR or both")}
			}
			if manDir != "" {
				if err := writeManPages(cmd.Root(), manDir); err != nil {
					return err
				}
			}
			if compDir != "" {
				if err := writeCompletions(cmd.Root(), compDir); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&manDir, "man", "", "write the manual pages (section 1) into DIR")
	c.Flags().StringVar(&compDir, "completion", "", "write the bash, zsh and fish completion files into DIR")
	return c
}

// writeManPages writes a page for root and each of its commands into dir:
// xdpeng.1, xdpeng-rxdrop.1, xdpeng-kern-drop.1, ..., each titled by its
// own name (XDPENG-RXDROP(1)).
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	date := time.Now().UTC()
	if t, ok := buildTime(); ok {
		date = t // the commit's time, so that a build gives the same pages
	}
	root.InitDefaultCompletionCmd() // cobra adds it when it runs a command: here too
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if c != root && !c.IsAvailableCommand() {
			return nil
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		page := md2man.Render(manPage(c, date, manSource(root.Version)))
		if err := os.WriteFile(filepath.Join(dir, name+".1"), page, 0o644); err != nil {
			return fmt.Errorf("write manual pages into %s: %w", dir, err)
		}
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

// manPage is c's page in go-md2man's markdown: NAME, SYNOPSIS, DESCRIPTION,
// OPTIONS, EXAMPLE, EXIT STATUS and SEE ALSO.
func manPage(c *cobra.Command, date time.Time, source string) []byte {
	var b strings.Builder
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	fmt.Fprintf(&b, "%% \"%s\" \"1\" \"%s\" \"%s\" \"xdpeng manual\"\n", strings.ToUpper(strings.ReplaceAll(name, "-", `\-`)), date.Format("2006-01-02"), source)
	fmt.Fprintf(&b, "# NAME\n%s \\- %s\n\n", name, c.Short)
	fmt.Fprintf(&b, "# SYNOPSIS\n**%s**\n\n", c.UseLine())
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, "# DESCRIPTION\n%s\n\n", desc)
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString("# OPTIONS\n")
		manFlags(&b, fs)
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		b.WriteString("# OPTIONS INHERITED FROM PARENT COMMANDS\n")
		manFlags(&b, fs)
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "# EXAMPLE\n```\n%s\n```\n\n", c.Example)
	}
	b.WriteString("# EXIT STATUS\n")
	for _, st := range exitStatuses(c) {
		fmt.Fprintf(&b, "**%s**\n: %s\n\n", st[0], st[1])
	}
	b.WriteString("# SEE ALSO\n")
	var refs []string
	for _, r := range seeAlso(c) {
		refs = append(refs, "**"+r+"**")
	}
	b.WriteString(strings.Join(refs, ", ") + "\n")
	return []byte(b.String())
}

// manFlags writes fs's flags as a page's option list: -i, --interface=DEV
// for one that takes a value, --json alone for a boolean or a count, the
// default where it is not the zero value.
func manFlags(b *strings.Builder, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			fmt.Fprintf(b, "**-%s**, **--%s**", f.Shorthand, f.Name)
		} else {
			fmt.Fprintf(b, "**--%s**", f.Name)
		}
		varname, usage := pflag.UnquoteUsage(f)
		switch t := f.Value.Type(); {
		case t == "bool" || t == "count":
		case f.NoOptDefVal != "":
			fmt.Fprintf(b, "[=*%s*]", varname)
		default:
			fmt.Fprintf(b, "=*%s*", varname)
		}
		usage = breakLists(usage)
		if d := f.DefValue; !zeroDefault(f) {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(b, "\n: %s\n\n", usage)
	})
}

// breakLists puts a space after each comma of a word too long for a page's
// indented option text (a list of names: a,b,c), so that it can wrap.
func breakLists(s string) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		if len(w) > 40 {
			words[i] = strings.ReplaceAll(w, ",", ", ")
		}
	}
	return strings.Join(words, " ")
}

// zeroDefault reports whether f's default says nothing (false, 0, "",
// an empty list), as --help leaves such defaults out.
func zeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "<nil>":
		return true
	}
	return false
}

// exitStatuses are the exit statuses c's page lists, each with what it
// means.
func exitStatuses(c *cobra.Command) [][2]string {
	st := [][2]string{
		{"0", "success; for a command that runs until stopped, also when Ctrl-C, SIGTERM or -d ended it (it prints its totals first)"},
		{"1", "an error: bad input (with the usage line under it), missing privilege, a device or kernel that lacks what the command needs; the one-line message names what and what to do"},
	}
	path := c.CommandPath()
	switch {
	case path == "xdpeng selftest":
		st[1][1] += "; also when a test failed"
	case path == "xdpeng compare" || path == "xdpeng demo" || path == "xdpeng latency":
		st[1][1] += "; also when a path failed (its row says why; the others are measured and printed all the same)"
	}
	switch path {
	case "xdpeng", "xdpeng compare", "xdpeng demo", "xdpeng bench", "xdpeng latency", "xdpeng selftest":
		st = append(st, [2]string{"130", "Ctrl-C or SIGTERM ended a measurement before any of it was measured and printed (what it set up is removed all the same)"})
	}
	if path == "xdpeng" || path == "xdpeng testbed exec" {
		st = append(st, [2]string{"N", "testbed exec: the exit status of the command it ran"})
	}
	return append(st, [2]string{"141", "whoever read the output went away (| head): ended as by SIGPIPE"})
}

// related are, by command, the pages besides its parent and its own
// commands that a reader of its page would look at next: xdpeng's, then
// the C tools it matches.
var related = map[string][]string{
	"xdpeng rxdrop":     {"xdpeng count", "xdpeng l2fwd", "xdpeng kern drop", "xdpeng compare", "xdpeng steer", "xdp-bench(8)"},
	"xdpeng count":      {"xdpeng rxdrop", "xdpeng stats", "xdpeng steer"},
	"xdpeng txonly":     {"xdpeng gen", "xdpeng rxdrop", "xdp-trafficgen(8)"},
	"xdpeng l2fwd":      {"xdpeng fwd", "xdpeng rxdrop", "xdpeng kern tx", "xdp-bench(8)"},
	"xdpeng fwd":        {"xdpeng l2fwd", "xdpeng kern redirect", "xdp-bench(8)"},
	"xdpeng steer":      {"xdpeng rxdrop", "xdpeng count", "xdpeng l2fwd", "xdpeng fwd", "bpftool-map(8)"},
	"xdpeng kern":       {"xdpeng compare", "xdpeng progbench", "xdpeng rxdrop", "xdp-bench(8)"},
	"xdpeng gen":        {"xdpeng txonly", "xdpeng compare", "xdp-trafficgen(8)", "trafgen(8)"},
	"xdpeng compare":    {"xdpeng demo", "xdpeng bench", "xdpeng latency", "xdpeng kern", "xdpeng rxdrop", "xdp-bench(8)"},
	"xdpeng demo":       {"xdpeng compare", "xdpeng testbed"},
	"xdpeng bench":      {"xdpeng compare", "xdpeng progbench"},
	"xdpeng latency":    {"xdpeng compare"},
	"xdpeng progbench":  {"xdpeng kern", "xdpeng compare", "bpftool-prog(8)"},
	"xdpeng probe":      {"xdpeng selftest", "xdpeng stats", "ethtool(8)", "ip-link(8)"},
	"xdpeng selftest":   {"xdpeng probe", "xdpeng testbed"},
	"xdpeng stats":      {"xdpeng probe", "ethtool(8)"},
	"xdpeng testbed":    {"xdpeng demo", "ip-netns(8)"},
	"xdpeng completion": {"bash(1)"},
}

// seeAlso is c's SEE ALSO: its parent, its own commands, then related
// ones (a subcommand also gets its parent's), as page names.
func seeAlso(c *cobra.Command) []string {
	var out []string
	add := func(r string) {
		if !strings.Contains(r, "(") {
			r = strings.ReplaceAll(r, " ", "-") + "(1)"
		}
		if !slices.Contains(out, r) && r != strings.ReplaceAll(c.CommandPath(), " ", "-")+"(1)" {
			out = append(out, r)
		}
	}
	if c.HasParent() {
		add(c.Parent().CommandPath())
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			add(sub.CommandPath())
		}
	}
	for p := c; p != nil; p = p.Parent() {
		for _, r := range related[p.CommandPath()] {
			add(r)
		}
	}
	return out
}

// manSource is what a page's footer says it documents: "xdpeng v1.2.0",
// "xdpeng 0123456789ab" (a pseudo-version or a build from a checkout:
// its commit) or "xdpeng (devel)", short enough that the footer's date
// keeps its place at 80 columns.
func manSource(version string) string {
	parts := strings.Split(version, ", ")
	v := parts[0]
	commit := ""
	if len(parts) > 1 && strings.HasPrefix(parts[1], "commit ") && !strings.HasPrefix(parts[1], "commit unknown") {
		commit, _, _ = strings.Cut(strings.TrimPrefix(parts[1], "commit "), " ")
	}
	m := pseudoVersion.FindStringSubmatch(v)
	switch {
	case (m != nil || v == "(devel)") && commit != "":
		return "xdpeng " + commit
	case m != nil:
		return "xdpeng " + m[1]
	}
	return "xdpeng " + v
}

// pseudoVersion matches a Go pseudo-version (v0.0.0-20261202043741-51e51df906b2,
// v1.2.4-0.20261202043741-51e51df906b2+dirty); its submatch is the commit.
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:[0-9A-Za-z.]+\.)?[0-9]{14}-([0-9a-f]{12})(?:\+.*)?$`)

// buildTime is SOURCE_DATE_EPOCH where it is set, else the time of the
// commit the binary was built from.
func buildTime() (time.Time, bool) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC(), true
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.time" {
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					return t, true
				}
			}
		}
	}
	return time.Time{}, false
}

// writeCompletions writes root's completion scripts for bash, zsh and
// fish into dir, named as completionFiles says.
func writeCompletions(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for shell, name := range completionFiles {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		switch shell {
		case "bash":
			err = root.GenBashCompletionV2(f, true)
		case "zsh":
			err = root.GenZshCompletion(f)
		case "fish":
			err = root.GenFishCompletion(f, true)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write the %s completion file: %w", shell, err)
		}
	}
	return nil
}

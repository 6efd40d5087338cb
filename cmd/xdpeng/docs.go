package main

// The manual pages and shell completion files, generated from the commands
// themselves so that they cannot drift from --help: `make install` runs
// the hidden `xdpeng docs` and installs what it writes.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
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
// xdpeng.1, xdpeng-rxdrop.1, xdpeng-kern-drop.1, ...
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h := &doc.GenManHeader{Title: "XDPENG", Section: "1", Source: manSource(root.Version), Manual: "xdpeng manual"}
	if t, ok := buildTime(); ok {
		h.Date = &t // the commit's time, so that a build gives the same pages
	}
	root.DisableAutoGenTag = true
	root.InitDefaultCompletionCmd() // cobra adds it when it runs a command: here too
	if err := doc.GenManTree(root, h, dir); err != nil {
		return fmt.Errorf("write manual pages into %s: %w", dir, err)
	}
	return nil
}

// manSource is what a page's footer says it documents: "xdpeng (devel),
// commit 0123456789ab", from the version string (versionString).
func manSource(version string) string {
	parts := strings.Split(version, ", ")
	s := "xdpeng " + parts[0]
	if len(parts) > 1 && strings.HasPrefix(parts[1], "commit ") && !strings.HasPrefix(parts[1], "commit unknown") {
		c, _, _ := strings.Cut(parts[1], " (")
		s += ", " + c
	}
	return s
}

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

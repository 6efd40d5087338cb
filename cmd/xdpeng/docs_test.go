package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// documented is every command a page is written for: the available ones,
// cobra's help left out.
func documented(root *cobra.Command) []*cobra.Command {
	root.InitDefaultCompletionCmd()
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// pageName is the file of c's manual page: xdpeng-kern-drop.1.
func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
}

// TestManPages: xdpeng docs --man writes one page per command, and only
// those, each titled by its own name, with its synopsis, flags (a boolean
// without a value), exit statuses and related pages, every one of which
// exists; groff renders each without error where it is installed, and at
// 80 columns its footer keeps source, date and title apart.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := writeManPages(rootCmd, dir); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range documented(rootCmd) {
		name := pageName(c)
		want = append(want, name)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: no page: %v", c.CommandPath(), err)
			continue
		}
		page := string(b)
		title := strings.ToUpper(strings.TrimSuffix(name, ".1"))
		for _, s := range []string{`.TH "` + title + `" "1"`, ".SH NAME\n" + strings.TrimSuffix(name, ".1") + " - ", ".SH SYNOPSIS", c.UseLine(),
			".SH EXIT STATUS", "\\fB0\\fP", "\\fB1\\fP", ".SH SEE ALSO"} {
			if !strings.Contains(page, s) {
				t.Errorf("%s lacks %q", name, s)
			}
		}
		if strings.Contains(page, "[=false]") || strings.Contains(page, "[=true]") {
			t.Errorf("%s shows a boolean flag with a value", name)
		}
		for _, r := range seeAlso(c) {
			if p, ok := strings.CutSuffix(r, "(1)"); ok && strings.HasPrefix(p, "xdpeng") && !slices.ContainsFunc(documented(rootCmd), func(d *cobra.Command) bool { return pageName(d) == p+".1" }) {
				t.Errorf("%s: SEE ALSO %s, which has no page", name, r)
			}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !strings.Contains(page, `\fB--`+f.Name+`\fP`) {
				t.Errorf("%s lacks the flag --%s", name, f.Name)
			}
		})
		if groff, err := exec.LookPath("groff"); err == nil {
			if out, err := exec.Command(groff, "-man", "-Tutf8", "-z", filepath.Join(dir, name)).CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("groff %s: %v\n%s", name, err, out)
			}
			out, err := exec.Command(groff, "-man", "-Tascii", "-rLL=80n", "-P-c", "-P-b", "-P-u", filepath.Join(dir, name)).Output()
			lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			foot := lines[len(lines)-1]
			th := regexp.MustCompile(`(?m)^\.TH "[^"]*" "1" "([^"]*)" "([^"]*)"`).FindStringSubmatch(page)
			if err != nil || th == nil || !strings.HasPrefix(foot, th[2]+" ") || !strings.Contains(foot, " "+th[1]+" ") || !strings.HasSuffix(foot, " "+title+"(1)") {
				t.Errorf("%s at 80 columns: footer %q (%v), want the source, the date (%q) and %s(1) apart", name, foot, err, th, title)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	for _, c := range []string{"xdpeng-rxdrop.1", "xdpeng-kern-drop.1", "xdpeng-testbed-up.1"} {
		if !slices.Contains(got, c) {
			t.Errorf("no %s", c)
		}
	}
	if slices.Contains(got, "xdpeng-docs.1") || slices.Contains(got, "xdpeng-help.1") {
		t.Errorf("pages of the hidden docs command or of help: %v", got)
	}
}

// TestManSource: the footer names a release by its version, and anything
// else by its commit, short enough for 80 columns.
func TestManSource(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.0, commit 0123456789ab (2026-12-02T04:37:41Z), go1.26.8":                              "xdpeng v1.2.0",
		"v0.0.0-20261202043741-51e51df906b2, commit 51e51df906b2 (2026-12-02T04:37:41Z), go1.26.8":  "xdpeng 51e51df906b2",
		"v0.0.0-20261202043741-51e51df906b2":                                                        "xdpeng 51e51df906b2",
		"v1.2.4-0.20261202043741-51e51df906b2+dirty":                                                "xdpeng 51e51df906b2",
		"(devel), commit 51e51df906b2 with uncommitted changes (2026-12-02T04:37:41Z), go1.26.8":    "xdpeng 51e51df906b2",
		"(devel), commit unknown (built outside a git checkout, or with -buildvcs=false), go1.26.8": "xdpeng (devel)",
	} {
		if got := manSource(v); got != want {
			t.Errorf("manSource(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestCompletionFiles: xdpeng docs --completion writes the bash, zsh and
// fish files, each a script its shell parses where installed, and the
// completion they ask the binary for (__complete) offers every command's
// subcommands and flags.
func TestCompletionFiles(t *testing.T) {
	dir := t.TempDir()
	if err := writeCompletions(rootCmd, dir); err != nil {
		t.Fatal(err)
	}
	for shell, name := range completionFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), "__complete") {
			t.Errorf("%s completion %s: %v, or it does not ask xdpeng __complete", shell, name, err)
			continue
		}
		if sh, err := exec.LookPath(shell); err == nil {
			if out, err := exec.Command(sh, "-n", filepath.Join(dir, name)).CombinedOutput(); err != nil {
				t.Errorf("%s -n %s: %v\n%s", shell, name, err, out)
			}
		}
	}
	if testing.Short() {
		return
	}
	bin := buildCLI(t)
	for _, c := range documented(rootCmd) {
		path := strings.Fields(c.CommandPath())[1:]
		if c.HasAvailableSubCommands() {
			out, err := exec.Command(bin, append(append([]string{"__complete"}, path...), "")...).Output()
			if err != nil {
				t.Fatalf("__complete %v: %v", path, err)
			}
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && !strings.Contains(string(out), "\n"+sub.Name()+"\t") && !strings.HasPrefix(string(out), sub.Name()+"\t") {
					t.Errorf("__complete %v offers no %s:\n%s", path, sub.Name(), out)
				}
			}
			continue
		}
		out, err := exec.Command(bin, append(append([]string{"__complete"}, path...), "--")...).Output()
		if err != nil {
			t.Fatalf("__complete %v --: %v", path, err)
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !strings.Contains(string(out), "--"+f.Name) {
				t.Errorf("__complete %v -- offers no --%s", path, f.Name)
			}
		})
	}
}

// TestMakeInstall: make install puts the binary, a page per command and
// the three completion files under DESTDIR and PREFIX, where man and the
// shells look; make uninstall removes every one of them.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds xdpeng")
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dest := filepath.Join(tmp, "root")
	vars := []string{"DESTDIR=" + dest, "PREFIX=/opt/x", "BIN=" + filepath.Join(tmp, "bin", "xdpeng")}
	make := func(target string) {
		cmd := exec.Command(mk, append([]string{"-s", "-C", root, target}, vars...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	make("install")
	want := []string{"opt/x/bin/xdpeng", "opt/x/share/bash-completion/completions/xdpeng", "opt/x/share/zsh/site-functions/_xdpeng",
		"opt/x/share/fish/vendor_completions.d/xdpeng.fish"}
	for _, c := range documented(rootCmd) {
		want = append(want, "opt/x/share/man/man1/"+pageName(c))
	}
	var got []string
	files := func() []string {
		got = got[:0]
		filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dest, p)
				got = append(got, rel)
			}
			return err
		})
		slices.Sort(got)
		return got
	}
	slices.Sort(want)
	if got := files(); !slices.Equal(got, want) {
		t.Errorf("make install wrote\n%v\nwant\n%v", got, want)
	}
	if man, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command(man, "xdpeng-rxdrop")
		cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(dest, "opt/x/share/man"), "MANPAGER=cat", "MANWIDTH=100")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Receive on AF_XDP sockets and drop every frame") {
			t.Errorf("man xdpeng-rxdrop with the installed MANPATH: %v\n%s", err, out)
		}
	}
	make("uninstall")
	if got := files(); len(got) > 0 {
		t.Errorf("make uninstall left %v", got)
	}
}

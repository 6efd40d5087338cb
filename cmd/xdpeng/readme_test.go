package main

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goMainBlocks returns the ```go blocks of package main in the Markdown
// file at path (relative to the top of the checkout).
func goMainBlocks(t *testing.T, root, path string) [][]byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var files [][]byte
	for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(text, -1) {
		if bytes.HasPrefix(b[1], []byte("package main")) || bytes.Contains(b[1], []byte("\npackage main\n")) {
			files = append(files, b[1])
		}
	}
	return files
}

// buildInModule writes files (name to source) into a module of their own
// that requires xdpeng through a replace, as a user would, checks that each
// is gofmt'ed, and runs each go command of cmds there.
func buildInModule(t *testing.T, root, what string, files map[string][]byte, cmds ...[]string) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if f, err := format.Source(src); err != nil || !bytes.Equal(f, src) {
			t.Errorf("%s: %s is not gofmt'ed (%v)", what, name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The go line the library's module asks for, no newer: the
	// program must build at the lowest Go the library says it needs.
	lib, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(lib)
	if goLine == nil {
		t.Fatal("the library's go.mod has no go line")
	}
	mod := "module example.com/prog\n\n" + string(goLine) + "\n\nrequire github.com/xdpeng/xdpeng v0.0.0\n\nreplace github.com/xdpeng/xdpeng => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range append(cmds, []string{"mod", "graph"}) {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Checked against xdpeng's own go.sum. The go command reads the
		// go.mod of every module in this module's graph, some of which
		// building xdpeng never needs (those named by modules before Go
		// 1.17, such as netlink's): it fetches them from the module proxy
		// on a machine that has not.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: go %s in a fresh module: %v\n%s", what, strings.Join(args, " "), err, out)
		}
		if args[0] == "mod" {
			checkLibraryGraph(t, what, string(out))
		}
	}
}

// checkLibraryGraph checks the module graph (go mod graph) of a program
// that imports the library: the library requires only what its data path
// needs, and none of what the CLI, the lab or their tests use appears in
// the graph but where cilium/ebpf's own go.mod names it (cobra, pflag and
// go-cmp, for its bpf2go command and its tests).
func checkLibraryGraph(t *testing.T, what, graph string) {
	t.Helper()
	libNeeds := []string{
		"github.com/cilium/ebpf", "golang.org/x/sys", "github.com/vishvananda/netlink",
		"github.com/vishvananda/netns", "github.com/safchain/ethtool",
		"golang.org/x/net", "golang.org/x/sync", // netlink's and cilium/ebpf's, indirect
		"go", "toolchain",
	}
	notForLib := []string{
		"github.com/spf13/", "github.com/prometheus/", "github.com/asavie/", "github.com/google/gopacket",
		"github.com/cpuguy83/", "github.com/russross/", "google.golang.org/protobuf", "github.com/xdpeng/xdpeng/",
		"github.com/google/go-cmp",
	}
	var requires int
	for _, line := range strings.Split(strings.TrimSpace(graph), "\n") {
		from, to, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: go mod graph: %q", what, line)
		}
		for _, bad := range notForLib {
			if strings.HasPrefix(to, bad) && !strings.HasPrefix(from, "github.com/cilium/ebpf@") {
				t.Errorf("%s: a program that imports the library has %s in its module graph (%s)", what, to, line)
			}
		}
		if strings.HasPrefix(from, "github.com/xdpeng/xdpeng@") || from == "github.com/xdpeng/xdpeng" {
			requires++
			if mod, _, _ := strings.Cut(to, "@"); !slices.Contains(libNeeds, mod) {
				t.Errorf("%s: the library's module requires %s, which its data path does not need", what, to)
			}
		}
	}
	if requires == 0 {
		t.Errorf("%s: go mod graph shows nothing the library requires:\n%s", what, graph)
	}
}

// TestREADMEProgram builds the README's program, and the Go API manual's
// program with its test, each in a module of its own: they must compile
// unchanged, be gofmt'ed, and the manual's test pass (it needs no root).
func TestREADMEProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modules of their own")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("README.md", func(t *testing.T) {
		files := goMainBlocks(t, root, "README.md")
		if len(files) == 0 {
			t.Fatal("the README has no Go block of package main, want a complete program")
		}
		buildInModule(t, root, "README.md", map[string][]byte{"main.go": files[0]}, []string{"vet", "."}, []string{"build", "-o", os.DevNull, "."})
	})
	t.Run("docs/go-api.md", func(t *testing.T) {
		files := goMainBlocks(t, root, "docs/go-api.md")
		byName := map[string][]byte{}
		for _, f := range files {
			name := "test"
			if m := regexp.MustCompile(`(?m)^// Command (\w+)`).FindSubmatch(f); m != nil {
				name = string(m[1])
			} else if !bytes.Contains(f, []byte("func Test")) {
				t.Fatalf("docs/go-api.md: a Go block of package main that is neither a command nor a test:\n%s", f)
			}
			if byName[name] != nil {
				t.Fatalf("docs/go-api.md: two Go blocks of %s", name)
			}
			byName[name] = f
		}
		for _, want := range []string{"router", "test", "ownprog", "pinned"} {
			if byName[want] == nil {
				t.Fatalf("docs/go-api.md has no %s program (Go blocks of package main: %d)", want, len(files))
			}
		}
		// The router with its test, which runs without root; the programs
		// that bring their own XDP program and that run from a pinned map
		// need a device and privilege: they must build.
		buildInModule(t, root, "docs/go-api.md router", map[string][]byte{"main.go": byName["router"], "main_test.go": byName["test"]}, []string{"vet", "."}, []string{"test", "-count=1", "."})
		for _, name := range []string{"ownprog", "pinned"} {
			buildInModule(t, root, "docs/go-api.md "+name, map[string][]byte{"main.go": byName[name]}, []string{"vet", "."}, []string{"build", "-o", os.DevNull, "."})
		}
		if len(byName) != 4 {
			t.Errorf("docs/go-api.md has %d Go programs of package main, this test builds 4: teach it the others", len(byName))
		}
	})
}

// TestREADMECommands: the README's table of commands has a row for every
// command of xdpeng (cobra's help and completion aside) and none other, and
// every "xdpeng WORD" in its shell blocks names a command.
func TestREADMECommands(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range rootCmd.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && c.Name() != "completion" {
			want = append(want, c.Name())
		}
	}
	slices.Sort(want)
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9]+)` \\|").FindAllSubmatch(text, -1) {
		rows = append(rows, string(m[1]))
	}
	slices.Sort(rows)
	if !slices.Equal(rows, want) {
		t.Errorf("the README's table of commands lists %v; xdpeng has %v", rows, want)
	}
	run := regexp.MustCompile(`(?:^|[\s;&/])xdpeng ([a-z][a-z0-9-]*)`)
	for _, b := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllSubmatch(text, -1) {
		for _, line := range strings.Split(string(b[1]), "\n") {
			line, _, _ = strings.Cut(line, "#") // a comment is prose
			for _, m := range run.FindAllStringSubmatch(line, -1) {
				if !slices.Contains(want, m[1]) {
					t.Errorf("the README runs xdpeng %s: no such command", m[1])
				}
			}
		}
	}
}

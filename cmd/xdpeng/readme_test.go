package main

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEProgram builds the Go API section's program and runs its test
// in a module of their own that requires xdpeng through a replace, as a
// user would: they must compile unchanged, be gofmt'ed, and the test pass
// (it needs no root).
func TestREADMEProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	var files [][]byte
	for _, b := range blocks {
		if bytes.HasPrefix(b[1], []byte("package main")) || bytes.Contains(b[1], []byte("\npackage main\n")) {
			files = append(files, b[1])
		}
	}
	if len(files) != 2 || !bytes.Contains(files[1], []byte("func Test")) {
		t.Fatalf("the README has %d Go blocks of package main, want the program and its test", len(files))
	}
	dir := t.TempDir()
	for i, name := range []string{"main.go", "main_test.go"} {
		if f, err := format.Source(files[i]); err != nil || !bytes.Equal(f, files[i]) {
			t.Errorf("the README's %s is not gofmt'ed (%v)", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), files[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mod := "module example.com/router\n\ngo 1.26\n\nrequire github.com/xdpeng/xdpeng v0.0.0\n\nreplace github.com/xdpeng/xdpeng => " + root + "\n"
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
	for _, args := range [][]string{{"vet", "."}, {"test", "-count=1", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Offline: everything comes from xdpeng's own go.sum and the module
		// cache that built xdpeng.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a fresh module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

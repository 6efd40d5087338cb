package vm

import (
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The guest's init, in two stages: init mounts the host's root in the
// initramfs and switches to it; stage2 sets up the guest there.
var (
	//go:embed guest/init
	initScript []byte
	//go:embed guest/stage2
	stage2Script []byte
)

// Busybox is the static busybox the initramfs is made of (Debian's
// busybox-static).
const Busybox = "/bin/busybox"

// unpack extracts the packages debs (of the kernel pkg) into one temporary
// tree and keeps, in out, the kernel image, the guest's modules
// (uncompressed, with their dependencies) and a description written last.
func unpack(ctx context.Context, debs []string, out, pkg string) error {
	tree := out + ".tree"
	defer os.RemoveAll(tree)
	for _, deb := range debs {
		if b, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tree).CombinedOutput(); err != nil {
			return fmt.Errorf("dpkg-deb -x %s: %w: %s", filepath.Base(deb), err, bytes.TrimSpace(b))
		}
	}
	var modRoot string
	for _, d := range []string{"lib/modules", "usr/lib/modules"} {
		if es, err := os.ReadDir(filepath.Join(tree, d)); err == nil && len(es) == 1 {
			modRoot = filepath.Join(tree, d, es[0].Name())
		}
	}
	if modRoot == "" {
		return fmt.Errorf("%s holds no lib/modules/VERSION", pkg)
	}
	version := filepath.Base(modRoot)
	if err := os.MkdirAll(filepath.Join(out, "modules"), 0o755); err != nil {
		return err
	}
	// The image is boot/vmlinuz-VERSION, or beside the modules in
	// Debian's packaging from Linux 7.
	image := filepath.Join(tree, "boot", "vmlinuz-"+version)
	if _, err := os.Stat(image); errors.Is(err, fs.ErrNotExist) {
		image = filepath.Join(modRoot, "vmlinuz")
	}
	if err := copyFile(image, filepath.Join(out, "vmlinuz")); err != nil {
		return err
	}
	order, err := resolveModules(ctx, modRoot, filepath.Join(out, "modules"), guestModules)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "modules", "modules.order"), []byte(strings.Join(order, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "package"), []byte(pkg+" "+version+"\n"), 0o644)
}

// resolveModules copies the modules named in want, and every module they
// depend on, from the kernel's module tree modRoot into dst, uncompressed,
// and returns their file names in an order to load them in. A module built
// into the kernel (modules.builtin) needs nothing.
func resolveModules(ctx context.Context, modRoot, dst string, want []string) ([]string, error) {
	files := map[string]string{} // module name (dashes as underscores) -> path
	err := filepath.WalkDir(filepath.Join(modRoot, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
			if base, ok := strings.CutSuffix(name, ext); ok {
				files[modName(base)] = p
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	builtin := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(modRoot, "modules.builtin")); err == nil {
		for _, l := range strings.Fields(string(b)) {
			builtin[modName(strings.TrimSuffix(filepath.Base(l), ".ko"))] = true
		}
	}
	var order []string
	done := map[string]bool{}
	var add func(name string, chain []string) error
	add = func(name string, chain []string) error {
		name = modName(name)
		if done[name] || builtin[name] {
			return nil
		}
		if slices.Contains(chain, name) {
			return fmt.Errorf("modules depend on one another in a cycle: %s", strings.Join(append(chain, name), " -> "))
		}
		src, ok := files[name]
		if !ok {
			return fmt.Errorf("module %s is neither in %s nor built in", name, modRoot)
		}
		ko := filepath.Join(dst, name+".ko")
		if err := decompress(ctx, src, ko); err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		deps, err := moduleDepends(ko)
		if err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		for _, d := range deps {
			if err := add(d, append(chain, name)); err != nil {
				return err
			}
		}
		done[name] = true
		order = append(order, name+".ko")
		return nil
	}
	for _, m := range want {
		if err := add(m, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// decompress writes the module src, uncompressed, to dst.
func decompress(ctx context.Context, src, dst string) error {
	var tool string
	switch {
	case strings.HasSuffix(src, ".xz"):
		tool = "xz"
	case strings.HasSuffix(src, ".zst"):
		tool = "zstd"
	case strings.HasSuffix(src, ".gz"):
		tool = "gzip"
	default:
		return copyFile(src, dst)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, tool, "-dc", src)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s -dc %s: %w: %s", tool, filepath.Base(src), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// moduleDepends reads the modules a module needs from its .modinfo section.
func moduleDepends(ko string) ([]string, error) {
	f, err := elf.Open(ko)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("no .modinfo section")
	}
	b, err := s.Data()
	if err != nil {
		return nil, err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			if len(v) == 0 {
				return nil, nil
			}
			return strings.Split(string(v), ","), nil
		}
	}
	return nil, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeInitramfs writes the guest's initramfs to path: busybox, the two
// init stages and the kernel's modules, as a newc cpio archive.
func writeInitramfs(path string, k Kernel) error {
	bb, err := os.ReadFile(Busybox)
	if err != nil {
		return fmt.Errorf("busybox for the guest's initramfs: %w (install busybox-static)", err)
	}
	if f, err := elf.NewFile(bytes.NewReader(bb)); err != nil {
		return fmt.Errorf("%s: %w", Busybox, err)
	} else if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		return fmt.Errorf("%s is linked dynamically: the guest's initramfs needs a static one (install busybox-static)", Busybox)
	}
	w := &cpioWriter{}
	w.dir("bin")
	w.dir("lib")
	w.dir("lib/modules")
	w.file("bin/busybox", 0o755, bb)
	w.file("init", 0o755, initScript)
	w.file("stage2", 0o755, stage2Script)
	order, err := os.ReadFile(filepath.Join(k.ModulesDir(), "modules.order"))
	if err != nil {
		return err
	}
	w.file("modules.order", 0o644, order)
	for _, m := range strings.Fields(string(order)) {
		b, err := os.ReadFile(filepath.Join(k.ModulesDir(), m))
		if err != nil {
			return err
		}
		w.file("lib/modules/"+m, 0o644, b)
	}
	return os.WriteFile(path, w.close(), 0o644)
}

// cpioWriter builds a cpio archive in the "newc" format the kernel unpacks
// into its initramfs.
type cpioWriter struct {
	buf bytes.Buffer
	ino int
}

func (w *cpioWriter) header(name string, mode uint32, size int) {
	w.ino++
	fmt.Fprintf(&w.buf, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		w.ino, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	w.buf.WriteString(name)
	w.buf.WriteByte(0)
	w.pad()
}

func (w *cpioWriter) pad() {
	for w.buf.Len()%4 != 0 {
		w.buf.WriteByte(0)
	}
}

func (w *cpioWriter) dir(name string) { w.header(name, 0o040000|0o755, 0) }

func (w *cpioWriter) file(name string, perm uint32, data []byte) {
	w.header(name, 0o100000|perm, len(data))
	w.buf.Write(data)
	w.pad()
}

func (w *cpioWriter) close() []byte {
	w.header("TRAILER!!!", 0, 0)
	return w.buf.Bytes()
}

package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// CacheDir holds the kernels fetched, one directory per release, reused by
// every bed. It must be root's and writable by no one else: a guest boots
// what is there.
const CacheDir = "/var/cache/xdpeng/kernels"

// Release is a kernel a guest can boot: Debian's linux-image-amd64 of a suite.
type Release struct {
	Name  string // what --vm takes: "6.1"
	Suite string // the Debian suite whose kernel it is: "bookworm"
}

// Releases are the kernels a bed can boot, oldest first.
var Releases = []Release{
	{"5.10", "bullseye"},
	{"6.1", "bookworm"},
	{"6.12", "trixie"},
	// trixie-backports' kernel, whatever its release is when first
	// fetched (7.3.4 in December 2026): the matrix's newest.
	{"backports", "trixie-backports"},
}

// LookupRelease returns the release called name.
func LookupRelease(name string) (Release, error) {
	for _, r := range Releases {
		if r.Name == name {
			return r, nil
		}
	}
	var names []string
	for _, r := range Releases {
		names = append(names, r.Name)
	}
	return Release{}, fmt.Errorf("no guest kernel %q: use one of %s", name, strings.Join(names, ", "))
}

// Kernel is a release fetched into the cache.
type Kernel struct {
	Release
	Dir     string // its directory in the cache
	Package string // the Debian package it came from: linux-image-6.1.0-57-amd64
	Version string // its uname -r: 6.1.0-57-amd64
}

// Vmlinuz is the kernel image.
func (k Kernel) Vmlinuz() string { return filepath.Join(k.Dir, "vmlinuz") }

// ModulesDir holds the modules the initramfs loads, uncompressed, and
// modules.order, the order to load them in.
func (k Kernel) ModulesDir() string { return filepath.Join(k.Dir, "modules") }

// guestModules are the modules the guest loads at boot: its NICs and root
// file system, veth for tests that make their own pairs in the guest, the
// clsact qdisc and cls_bpf for tc programs on kernels without TCX.
var guestModules = []string{"virtio_pci", "virtio_net", "9pnet_virtio", "9p", "overlay", "veth", "sch_ingress", "cls_bpf"}

// UnavailableError says why a kernel cannot be had.
type UnavailableError struct {
	Release Release
	Why     string
	Err     error
}

func (e *UnavailableError) Error() string {
	s := fmt.Sprintf("guest kernel %s (Debian %s) cannot be had: %s", e.Release.Name, e.Release.Suite, e.Why)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Fetch returns release r from the cache, downloading and unpacking its
// Debian package first if the cache does not have it.
func Fetch(ctx context.Context, r Release) (Kernel, error) {
	if err := ensureCacheDir(); err != nil {
		return Kernel{}, err
	}
	dir := filepath.Join(CacheDir, r.Name)
	if k, err := readKernel(r, dir); err == nil {
		return k, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return Kernel{}, fmt.Errorf("remove the incomplete %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(CacheDir, ".fetch-"+r.Name+"-")
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	pkg, debs, err := download(ctx, r, tmp)
	if err != nil {
		return Kernel{}, err
	}
	out := filepath.Join(tmp, "kernel")
	if err := unpack(ctx, debs, out, pkg); err != nil {
		return Kernel{}, &UnavailableError{Release: r, Why: "unpack " + pkg, Err: err}
	}
	if err := os.Rename(out, dir); err != nil {
		// Another bed fetched it meanwhile: take that one.
		if k, kerr := readKernel(r, dir); kerr == nil {
			return k, nil
		}
		return Kernel{}, fmt.Errorf("kernel cache: %w", err)
	}
	return readKernel(r, dir)
}

// ensureCacheDir makes CacheDir, and refuses one that someone other than
// root could write to.
func ensureCacheDir() error {
	if err := os.MkdirAll(CacheDir, 0o755); err != nil {
		return fmt.Errorf("kernel cache %s: %w", CacheDir, err)
	}
	for d := CacheDir; d != "/"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("kernel cache: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Errorf("kernel cache %s: %s must be owned by root and writable by no one else (a guest boots what is there): fix its owner or mode", CacheDir, d)
		}
	}
	return nil
}

// readKernel reads a cached kernel's description, written last by unpack.
func readKernel(r Release, dir string) (Kernel, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package"))
	if err != nil {
		return Kernel{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return Kernel{}, fmt.Errorf("%s/package: malformed", dir)
	}
	k := Kernel{Release: r, Dir: dir, Package: f[0], Version: f[1]}
	for _, p := range []string{k.Vmlinuz(), filepath.Join(k.ModulesDir(), "modules.order")} {
		if _, err := os.Stat(p); err != nil {
			return Kernel{}, err
		}
	}
	return k, nil
}

// download fetches r's linux-image package into dir with a throw-away apt
// state of its own (sources list, package lists, cache), using the mirror
// of the system's own sources: nothing of the system's apt changes. Where
// the image package holds neither kernel nor modules but depends on
// packages that do (linux-base-VERSION with modules.builtin,
// linux-binary-VERSION with the image, linux-modules-VERSION: Debian's
// packaging from Linux 7), those are fetched too; debs are all of them.
func download(ctx context.Context, r Release, dir string) (pkg string, debs []string, _ error) {
	mirror, err := systemMirror()
	if err != nil {
		return "", nil, &UnavailableError{Release: r, Why: "no Debian mirror to fetch it from", Err: err}
	}
	state := filepath.Join(dir, "apt")
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
			return "", nil, err
		}
	}
	src := filepath.Join(state, "sources.list")
	if err := os.WriteFile(src, fmt.Appendf(nil, "deb %s %s main\n", mirror, r.Suite), 0o644); err != nil {
		return "", nil, err
	}
	opts := []string{
		"-o", "Dir::Etc::sourcelist=" + src,
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(state, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(state, "cache"),
		"-o", "APT::Sandbox::User=root",
		"-q",
	}
	run := func(name string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, name, append(slices.Clone(opts), args...)...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	if _, err := run("apt-get", "update"); err != nil {
		return "", nil, &UnavailableError{Release: r, Why: fmt.Sprintf("%s %s cannot be read", mirror, r.Suite), Err: err}
	}
	out, err := run("apt-cache", "depends", "linux-image-amd64")
	if err != nil {
		return "", nil, &UnavailableError{Release: r, Why: fmt.Sprintf("%s %s serves no linux-image-amd64", mirror, r.Suite), Err: err}
	}
	m := regexp.MustCompile(`Depends: (linux-image-[0-9][^ \n]*-amd64)\n`).FindSubmatch(out)
	if m == nil {
		return "", nil, &UnavailableError{Release: r, Why: fmt.Sprintf("linux-image-amd64 of %s names no kernel package: %q", r.Suite, out)}
	}
	pkg = string(m[1])
	pkgs := []string{pkg}
	out, err = run("apt-cache", "depends", pkg)
	if err != nil {
		return "", nil, &UnavailableError{Release: r, Why: "read the dependencies of " + pkg, Err: err}
	}
	for _, d := range regexp.MustCompile(`Depends: (linux-(?:base|binary|modules)-[0-9][^ \n]*)\n`).FindAllSubmatch(out, -1) {
		pkgs = append(pkgs, string(d[1]))
	}
	if _, err := run("apt-get", append([]string{"download"}, pkgs...)...); err != nil {
		return "", nil, &UnavailableError{Release: r, Why: "download " + strings.Join(pkgs, " "), Err: err}
	}
	for _, p := range pkgs {
		found, _ := filepath.Glob(filepath.Join(dir, p+"_*.deb"))
		if len(found) != 1 {
			return "", nil, &UnavailableError{Release: r, Why: fmt.Sprintf("apt-get download %s left %d packages", p, len(found))}
		}
		debs = append(debs, found[0])
	}
	return pkg, debs, nil
}

// debianSuites are the suites whose entry in the system's sources names a
// Debian mirror.
var debianSuites = []string{"bullseye", "bookworm", "trixie", "forky", "sid", "unstable", "testing", "stable", "oldstable"}

// systemMirror returns the URI of the first Debian archive (not its
// security archive) in /etc/apt/sources.list and sources.list.d.
func systemMirror() (string, error) {
	files := []string{"/etc/apt/sources.list"}
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	files = append(files, more...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if uri := mirrorIn(string(b), strings.HasSuffix(f, ".sources")); uri != "" {
			return uri, nil
		}
	}
	return "", errors.New("no Debian archive (a suite such as bookworm) in /etc/apt/sources.list or /etc/apt/sources.list.d")
}

// mirrorIn finds the Debian archive in one sources file: one-line format,
// or deb822 if deb822.
func mirrorIn(text string, deb822 bool) string {
	isDebian := func(suite string) bool {
		base, _, _ := strings.Cut(suite, "-")
		return slices.Contains(debianSuites, base) && !strings.Contains(suite, "security")
	}
	if !deb822 {
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 3 || f[0] != "deb" {
				continue
			}
			f = f[1:]
			if strings.HasPrefix(f[0], "[") {
				for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
					f = f[1:]
				}
				if len(f) > 0 {
					f = f[1:]
				}
			}
			if len(f) >= 2 && isDebian(f[1]) {
				return f[0]
			}
		}
		return ""
	}
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string][]string{}
		for _, line := range strings.Split(stanza, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.Fields(v)
			}
		}
		if !slices.Contains(fields["types"], "deb") || len(fields["uris"]) == 0 {
			continue
		}
		if slices.ContainsFunc(fields["suites"], isDebian) {
			return fields["uris"][0]
		}
	}
	return ""
}

// Package env records the environment a measurement was taken in, so that
// every result can say what it depends on and two results can be compared,
// or refused as not comparable: the kernel, the CPU, the Spectre v2
// mitigation in force and the BPF JIT settings (read from the machine), and
// what the measurement itself chose: the layout of CPUs, the driver and its
// XDP mode, queues, frame size and generator (filled in by the caller).
package env

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/cpuset"
)

// JIT holds the BPF JIT sysctls verbatim: /proc/sys/net/core/bpf_jit_*.
type JIT struct {
	Enable   string `json:"enable"`   // 0 off (interpreter), 1 on, 2 on with debug output
	Harden   string `json:"harden"`   // 0 off, 1 for unprivileged programs, 2 for all
	Kallsyms string `json:"kallsyms"` // 1: JITed programs appear in /proc/kallsyms (perf sees them)
}

// Env is the environment of a result; JSON rows carry it as one "env"
// object. The machine's fields are what Collect read; a field it could not
// read is empty and named in Unknown. The rest are the caller's to fill.
type Env struct {
	Kernel      string `json:"kernel"`       // uname -r
	KernelBuild string `json:"kernel_build"` // uname -v
	Arch        string `json:"arch"`         // uname -m
	CPUModel    string `json:"cpu_model"`    // /proc/cpuinfo "model name" of the first CPU
	OnlineCPUs  string `json:"online_cpus"`  // /sys/devices/system/cpu/online, e.g. "0-1"
	OnlineCount int    `json:"online_cpu_count"`
	// SpectreV2 is /sys/devices/system/cpu/vulnerabilities/spectre_v2
	// verbatim: the mitigation (retpolines, IBRS, eIBPB...) in force.
	SpectreV2 string `json:"spectre_v2"`
	BPFJIT    JIT    `json:"bpf_jit"`

	// Layout names the placement of the measurement's threads on CPUs
	// ("A: generator and DUT NAPI on CPU 0, worker on CPU 1").
	Layout string `json:"layout,omitempty"`
	// CPUs lists the CPUs used and by what ("generator 0, worker 1").
	CPUs      string `json:"cpus,omitempty"`
	Driver    string `json:"driver,omitempty"`   // of the device under test: veth, mlx5_core...
	XDPMode   string `json:"xdp_mode,omitempty"` // native, generic, or zero-copy / copy for AF_XDP
	Queues    int    `json:"queues,omitempty"`
	FrameSize int    `json:"frame_size,omitempty"` // bytes, without FCS
	// Generator says what sent the traffic ("xdpeng live frames, 1
	// thread, 100000 pps").
	Generator string `json:"generator,omitempty"`

	// Unknown names each machine field that could not be read (by its
	// JSON name: "spectre_v2", "bpf_jit.harden") and why, as
	// "field: reason".
	Unknown []string `json:"unknown,omitempty"`
}

// Where Collect reads the machine's fields, relative to the root.
const (
	cpuinfoPath   = "proc/cpuinfo"
	onlinePath    = "sys/devices/system/cpu/online"
	spectreV2Path = "sys/devices/system/cpu/vulnerabilities/spectre_v2"
	jitDir        = "proc/sys/net/core/"
)

// Collect reads the running machine's fields: uname(2), /proc and /sys.
// What it cannot read is left empty and named in Unknown; it never fails.
func Collect() Env {
	return collect(os.DirFS("/"), func() (unix.Utsname, error) {
		var u unix.Utsname
		err := unix.Uname(&u)
		return u, err
	}, readJIT)
}

// readJIT reads the BPF JIT sysctl /proc/sys/net/core/name. The JIT
// sysctls exist only in the initial network namespace (net/core's sysctl
// table registers them for init_net alone), so in another one, such as a
// test bed's, they are read on a thread that enters the initial one: PID
// 1's, or else kthreadd's (PID 2), where PID 1's cannot be opened; kernel
// threads always run in the initial namespace.
func readJIT(name string) (string, error) {
	s, err := readLine(os.DirFS("/"), jitDir+name)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	var errs []error
	for _, ns := range []string{"/proc/1/ns/net", "/proc/2/ns/net"} {
		var rerr error
		in, nerr := inNetns(ns, func() { s, rerr = readLine(os.DirFS("/"), jitDir+name) })
		switch {
		case nerr != nil:
			errs = append(errs, nerr)
		case in && rerr == nil:
			return s, nil
		case in:
			errs = append(errs, fmt.Errorf("in %s: %w", ns, rerr))
		}
	}
	if len(errs) == 0 {
		return "", err // this is the namespace of both: the file is missing
	}
	return "", fmt.Errorf("/%s%s is in the initial network namespace only, and this process runs in another: %w", jitDir, name, errors.Join(errs...))
}

// inNetns runs fn on a locked OS thread switched into the network
// namespace at path, unless the caller is in it already (then in is false
// and fn does not run).
func inNetns(path string, fn func()) (in bool, err error) {
	type result struct {
		in  bool
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		target, err := netns.GetFromPath(path)
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: err}
			return
		}
		defer target.Close()
		here, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: err}
			return
		}
		defer here.Close()
		if here.Equal(target) {
			runtime.UnlockOSThread()
			res <- result{}
			return
		}
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("enter %s: %w", path, err)}
			return
		}
		fn()
		if netns.Set(here) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked, and Go ends it with the goroutine
		res <- result{in: true}
	}()
	r := <-res
	return r.in, r.err
}

// collect reads the machine's fields from root (a file system laid out as
// / is), uname and jit (a BPF JIT sysctl by its name under
// /proc/sys/net/core).
func collect(root fs.FS, uname func() (unix.Utsname, error), jit func(name string) (string, error)) Env {
	var e Env
	unknown := func(field string, err error) {
		e.Unknown = append(e.Unknown, fmt.Sprintf("%s: %v", field, err))
	}
	if u, err := uname(); err != nil {
		unknown("kernel", fmt.Errorf("uname: %w", err))
	} else {
		e.Kernel, e.KernelBuild, e.Arch = cString(u.Release[:]), cString(u.Version[:]), cString(u.Machine[:])
	}
	if m, err := cpuModel(root); err != nil {
		unknown("cpu_model", err)
	} else {
		e.CPUModel = m
	}
	if s, err := readLine(root, onlinePath); err != nil {
		unknown("online_cpus", err)
	} else if ids, err := cpuset.Parse(s, "online CPU"); err != nil {
		unknown("online_cpus", fmt.Errorf("/%s: %w", onlinePath, err))
	} else {
		e.OnlineCPUs, e.OnlineCount = s, len(ids)
	}
	if s, err := readLine(root, spectreV2Path); err != nil {
		unknown("spectre_v2", err)
	} else {
		e.SpectreV2 = s
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"enable", &e.BPFJIT.Enable},
		{"harden", &e.BPFJIT.Harden},
		{"kallsyms", &e.BPFJIT.Kallsyms},
	} {
		if s, err := jit("bpf_jit_" + f.name); err != nil {
			unknown("bpf_jit."+f.name, err)
		} else {
			*f.dst = s
		}
	}
	return e
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// readLine returns the content of a one-line file without its newline.
func readLine(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return "", absPath(err)
	}
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return "", fmt.Errorf("/%s is empty", name)
	}
	return s, nil
}

// absPath gives a path error of a root-relative name the absolute path
// ("open /proc/cpuinfo: ..."), as the user knows the file.
func absPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && !strings.HasPrefix(pe.Path, "/") {
		return &fs.PathError{Op: pe.Op, Path: "/" + pe.Path, Err: pe.Err}
	}
	return err
}

// cpuModel returns the "model name" of the first processor in /proc/cpuinfo.
func cpuModel(root fs.FS) (string, error) {
	f, err := root.Open(cpuinfoPath)
	if err != nil {
		return "", absPath(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read /%s: %w", cpuinfoPath, err)
	}
	return "", fmt.Errorf("/%s has no \"model name\" line", cpuinfoPath)
}

// Header is e as text for the head of a report: three or four lines, each
// ending in a newline; fields not set are left out.
func (e Env) Header() string {
	var b strings.Builder
	or := func(s, unknown string) string {
		if s == "" {
			return unknown
		}
		return s
	}
	fmt.Fprintf(&b, "kernel %s %s (%s); CPU %s; online CPUs %s (%d)\n",
		or(e.Kernel, "?"), e.KernelBuild, or(e.Arch, "?"), or(e.CPUModel, "?"), or(e.OnlineCPUs, "?"), e.OnlineCount)
	// The mitigation comes last: its own text has semicolons.
	fmt.Fprintf(&b, "BPF JIT: enable %s, harden %s, kallsyms %s; spectre_v2: %s\n",
		or(e.BPFJIT.Enable, "?"), or(e.BPFJIT.Harden, "?"), or(e.BPFJIT.Kallsyms, "?"), or(e.SpectreV2, "?"))
	var run []string
	add := func(cond bool, format string, a ...any) {
		if cond {
			run = append(run, fmt.Sprintf(format, a...))
		}
	}
	add(e.Layout != "", "layout %s", e.Layout)
	add(e.CPUs != "", "CPUs %s", e.CPUs)
	add(e.Driver != "", "driver %s", e.Driver)
	add(e.XDPMode != "", "XDP mode %s", e.XDPMode)
	add(e.Queues != 0, "%d queue(s)", e.Queues)
	add(e.FrameSize != 0, "%d-byte frames", e.FrameSize)
	add(e.Generator != "", "generator %s", e.Generator)
	if len(run) > 0 {
		b.WriteString(strings.Join(run, "; ") + "\n")
	}
	if len(e.Unknown) > 0 {
		b.WriteString("not read: " + strings.Join(e.Unknown, "; ") + "\n")
	}
	return b.String()
}

// Diff is one field in which two environments differ.
type Diff struct {
	Field string // its JSON name
	A, B  string
}

// MismatchError says why two environments are not comparable.
type MismatchError struct {
	Diffs []Diff
}

func (m *MismatchError) Error() string {
	parts := make([]string, len(m.Diffs))
	for i, d := range m.Diffs {
		parts[i] = fmt.Sprintf("%s %q vs %q", d.Field, d.A, d.B)
	}
	return "environments differ: " + strings.Join(parts, "; ")
}

// Comparable returns nil if results taken in e and o may be compared: every
// field is the same, the caller's included. Otherwise it returns a
// *MismatchError listing each field that differs. A field that one of them
// could not read differs (it is empty there); one that neither could read
// is listed too, as it cannot be shown to be the same.
func (e Env) Comparable(o Env) error {
	var diffs []Diff
	a, b := e.values(), o.values()
	for i := range a {
		field := a[i][0]
		switch {
		case e.unread(field) && o.unread(field):
			diffs = append(diffs, Diff{Field: field, A: "not read", B: "not read"})
		case a[i][1] != b[i][1]:
			diffs = append(diffs, Diff{Field: field, A: a[i][1], B: b[i][1]})
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return &MismatchError{Diffs: diffs}
}

// values lists the fields Comparable compares, by JSON name. OnlineCount
// is left out: it follows from OnlineCPUs.
func (e Env) values() [][2]string {
	return [][2]string{
		{"kernel", e.Kernel},
		{"kernel_build", e.KernelBuild},
		{"arch", e.Arch},
		{"cpu_model", e.CPUModel},
		{"online_cpus", e.OnlineCPUs},
		{"spectre_v2", e.SpectreV2},
		{"bpf_jit.enable", e.BPFJIT.Enable},
		{"bpf_jit.harden", e.BPFJIT.Harden},
		{"bpf_jit.kallsyms", e.BPFJIT.Kallsyms},
		{"layout", e.Layout},
		{"cpus", e.CPUs},
		{"driver", e.Driver},
		{"xdp_mode", e.XDPMode},
		{"queues", strconv.Itoa(e.Queues)},
		{"frame_size", strconv.Itoa(e.FrameSize)},
		{"generator", e.Generator},
	}
}

// unread reports whether Collect could not read field.
func (e Env) unread(field string) bool {
	for _, u := range e.Unknown {
		if f, _, _ := strings.Cut(u, ":"); f == field {
			return true
		}
	}
	return false
}

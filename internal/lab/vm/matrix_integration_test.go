package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// The kernel matrix's settings, from make vmtest.
const (
	// KernelsEnv lists the guest kernels, separated by spaces; one that
	// ends in "?" may be unavailable (its mirror no longer serves it): it
	// is then "not supported here" with the reason, not a failure.
	kernelsEnv   = "XDPENG_VM_KERNELS"
	guestTestEnv = "XDPENG_VM_GUEST_TEST" // cmd/xdpeng's tests, built with -tags vmguest
	xdpengEnv    = "XDPENG_VM_XDPENG"     // the xdpeng binary under test
)

// Time limits: a guest that hangs fails its kernel, and is killed, fast.
const (
	bootLimit  = 4 * time.Minute
	guestLimit = 10 * time.Minute
)

// TestKernelMatrix boots a guest on each kernel of XDPENG_VM_KERNELS and
// runs there the CLI's guest tests against virtio-net (xdpeng selftest among
// them), then takes a link down and up from QEMU's monitor under a running
// rxdrop, runs compare with the guest as the DUT, and pulls a NIC out
// (device_del) under rxdrop. Each kernel's privtest line goes to the report
// of make test (XDPENG_PRIV_REPORT), named vm-KERNEL/xdpeng, with
// selftest's counts in each mode and a line of how long each step took.
func TestKernelMatrix(t *testing.T) {
	kernels := strings.Fields(os.Getenv(kernelsEnv))
	if len(kernels) == 0 {
		t.Skipf("the kernel matrix runs from make vmtest (%s names the kernels)", kernelsEnv)
	}
	guestTest, xdpeng := os.Getenv(guestTestEnv), os.Getenv(xdpengEnv)
	if guestTest == "" || xdpeng == "" {
		t.Fatalf("%s and %s must name the guest test binary and xdpeng (make vmtest sets them)", guestTestEnv, xdpengEnv)
	}
	// The CLI's bed commands, once, on the first kernel that must be had.
	for _, k := range kernels {
		if !strings.HasSuffix(k, "?") {
			t.Run("cli", func(t *testing.T) { testCLI(t, k, xdpeng) })
			break
		}
	}
	for _, k := range kernels {
		name, optional := strings.CutSuffix(k, "?")
		t.Run(name, func(t *testing.T) {
			privtest.Root(t)
			start := time.Now()
			var (
				b              *Bed
				out            []byte
				err            error
				booted, tested time.Duration
			)
			// A guest whose kernel panics under the emulator is booted
			// once more; the panic is reported, never passed over.
			for attempt := 1; ; attempt++ {
				attemptStart := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), bootLimit)
				b, err = Up(ctx, Config{Name: testbed.UniqueName("vm"), Kernel: name, Queues: 2, Links: 3, Loop: true, Hash: true})
				cancel()
				var ue *UnavailableError
				if errors.As(err, &ue) && optional {
					privtest.Unsupported(t, "%v", err)
				}
				if err != nil {
					t.Fatalf("boot a guest on %s: %v", name, err)
				}
				bed := b
				t.Cleanup(func() {
					if err := bed.Down(); err != nil {
						t.Errorf("remove the VM test bed: %v", err)
					}
				})
				booted = time.Since(attemptStart)

				ctx, cancel = context.WithTimeout(context.Background(), guestLimit)
				cmd := b.Command(ctx, "env", privtest.RequireEnv+"=1", "XDPENG_GUEST_BIN="+xdpeng, "XDPENG_GUEST_PORTS=eth0,eth1", "XDPENG_GUEST_THIRD=eth2",
					guestTest, "-test.v", "-test.count=1", "-test.run", "^TestGuest", "-test.timeout", (guestLimit - time.Minute).String())
				out, err = runToFile(t, cmd)
				cancel()
				tested = time.Since(attemptStart) - booted
				panicked := guestPanic(b.ConsoleTail(200))
				if err == nil || panicked == "" || attempt > 1 {
					break
				}
				report(t, fmt.Sprintf("vmtest %s: the guest's kernel panicked during the guest tests (%s), booted once more; console:\n%s\n", name, panicked, b.ConsoleTail(40)))
				if derr := b.Down(); derr != nil {
					t.Fatalf("remove the VM test bed after its kernel panicked: %v", derr)
				}
			}
			line := regexp.MustCompile(`(?m)^privtest (\S+): (.*)$`).FindSubmatch(out)
			if line == nil {
				t.Fatalf("the guest tests on Linux %s printed no privtest line (%v):\n%s\nconsole:\n%s", b.Kernel.Version, err, out, b.ConsoleTail(20))
			}
			report(t, fmt.Sprintf("privtest vm-%s/%s: %s\n", name, line[1], line[2]))
			// xdpeng selftest's counts in each mode (TestGuestSelftest).
			for _, m := range regexp.MustCompile(`(?m)^vmselftest (\S+): (.*)$`).FindAllSubmatch(out, -1) {
				report(t, fmt.Sprintf("vmselftest %s %s: %s\n", name, m[1], m[2]))
			}
			// --busy-poll's NAPI settings and softirqs (TestGuestBusyPollNAPI).
			for _, m := range regexp.MustCompile(`(?m)^vmbusypoll: (.*)$`).FindAllSubmatch(out, -1) {
				report(t, fmt.Sprintf("vmbusypoll %s: %s\n", name, m[1]))
			}
			if err != nil {
				t.Errorf("guest tests on Linux %s: %v:\n%s%s", b.Kernel.Version, err, failures(out), tapDrops(b))
			} else {
				t.Logf("guest tests on Linux %s:\n%s", b.Kernel.Version, output(out))
			}

			linkStart := time.Now()
			t.Run("set_link", func(t *testing.T) { testSetLink(t, b, xdpeng) })
			compareStart := time.Now()
			t.Run("compare_dut", func(t *testing.T) { testCompareDUT(t, b, xdpeng) })
			delStart := time.Now()
			t.Run("device_del", func(t *testing.T) { testDeviceDel(t, b, xdpeng) })
			report(t, fmt.Sprintf("vmtest %s: Linux %s (%s), booted in %.0f s, guest tests %.0f s, link test %.0f s, compare --dut %.0f s, device_del %.0f s, total %.0f s\n",
				name, b.Kernel.Version, b.Kernel.Package, booted.Seconds(), tested.Seconds(), compareStart.Sub(linkStart).Seconds(),
				delStart.Sub(compareStart).Seconds(), time.Since(delStart).Seconds(), time.Since(start).Seconds()))
		})
	}
}

// guestPanic returns the line of console that says the guest's kernel
// panicked, or "".
func guestPanic(console string) string {
	for _, l := range strings.Split(console, "\n") {
		if i := strings.Index(l, "Kernel panic"); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return ""
}

// runToFile runs cmd with its output in a file, not a pipe (see
// testSetLink), and returns the output.
func runToFile(t *testing.T, cmd *exec.Cmd) ([]byte, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	out, rerr := os.ReadFile(f.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	return out, err
}

// testCLI drives a bed through the CLI: up, killed with SIGKILL while it
// boots, which leaves the bed for status to list and down to remove whole;
// then up again, exec (its exit status passed on), status and down.
func testCLI(t *testing.T, kernel, xdpeng string) {
	privtest.Root(t)
	name := testbed.UniqueName("vc")
	t.Cleanup(func() { Down(name) })
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), bootLimit)
		defer cancel()
		out, err := runToFile(t, exec.CommandContext(ctx, xdpeng, args...))
		return string(out), err
	}
	up := exec.Command(xdpeng, "testbed", "up", "--vm", kernel, "--name", name)
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until QEMU runs, then kill the starter.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if b, err := Open(name); err == nil && b.Running {
			break
		}
		if time.Now().After(deadline) {
			up.Process.Kill()
			up.Wait()
			t.Fatal("testbed up did not start QEMU within a minute")
		}
	}
	up.Process.Kill()
	up.Wait()
	if out, err := run("testbed", "status", "--name", name); err != nil || !strings.Contains(out, "VM test bed "+name) {
		t.Errorf("testbed status after a killed up: %v:\n%s", err, out)
	}
	if out, err := run("testbed", "down", "--name", name); err != nil {
		t.Fatalf("testbed down after a killed up: %v:\n%s", err, out)
	}
	leftovers(t, name)

	if out, err := run("testbed", "up", "--vm", kernel, "--name", name, "--links", "2"); err != nil {
		t.Fatalf("testbed up: %v:\n%s", err, out)
	}
	out, err := run("testbed", "exec", name, "--", "sh", "-c", "uname -r; ip -br link show eth1; exit 7")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 || !strings.Contains(out, "eth1") {
		t.Errorf("testbed exec: want eth1 listed and exit status 7, got %v:\n%s", err, out)
	}
	if out, err := run("testbed", "status"); err != nil || !strings.Contains(out, "VM test bed "+name+": running") {
		t.Errorf("testbed status: %v:\n%s", err, out)
	}
	if out, err := run("testbed", "down", "--name", name); err != nil {
		t.Fatalf("testbed down: %v:\n%s", err, out)
	}
	leftovers(t, name)
}

// leftovers fails the test if anything of bed name is left: its state,
// its namespace, its QEMU.
func leftovers(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat(bedDir(name)); err == nil {
		t.Errorf("%s is left", bedDir(name))
	}
	if _, err := os.Stat(filepath.Join(testbed.NetnsDir, testbed.GenNS(name))); err == nil {
		t.Errorf("namespace %s is left", testbed.GenNS(name))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("\x00xdpeng-vm-"+name+"\x00")) {
			t.Errorf("QEMU of %s is left: %s", name, filepath.Dir(p))
		}
	}
}

// report appends line to make test's report, or logs it.
func report(t *testing.T, line string) {
	t.Helper()
	fmt.Print(line)
	path := os.Getenv(privtest.ReportEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Errorf("write %s: %v", path, err)
	}
}

// failures is go test -v's output without the lines of the top-level
// tests that passed: what each failed or skipped test logged, and the
// lines after the last test (FAIL, the exit status).
// tapDrops says which of the bed's taps dropped frames for the guest (a
// test that missed frames then knows where they went), or why it cannot.
func tapDrops(b *Bed) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	drops, err := b.TapDrops(ctx)
	if err != nil {
		return "taps' drops: " + err.Error() + "\n"
	}
	var s []string
	for _, p := range b.Ports {
		if n := drops[p.Guest]; n > 0 {
			s = append(s, fmt.Sprintf("%s %d", p.Tap, n))
		}
	}
	if len(s) == 0 {
		return "the bed's taps dropped no frame for the guest\n"
	}
	return "frames the bed's taps dropped for the guest (TX dropped, queue of " + strconv.Itoa(TapQueueLen) + "): " + strings.Join(s, ", ") + "\n"
}

func failures(out []byte) string {
	var b, block strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "=== ") {
			continue
		}
		block.WriteString(l + "\n")
		if strings.HasPrefix(l, "--- ") {
			if !strings.HasPrefix(l, "--- PASS") {
				b.WriteString(block.String())
			}
			block.Reset()
		}
	}
	b.WriteString(block.String())
	return b.String()
}

// output is go test -v's output without its "=== RUN" lines.
func output(out []byte) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if !strings.HasPrefix(l, "=== ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// waitFor waits until the file at path matches re, at most timeout.
func waitFor(path string, timeout time.Duration, re *regexp.Regexp) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(path); re.Match(b) {
			return true
		}
	}
	return false
}

// guestRxdrop is an rxdrop started in the guest by startRxdrop. Its output
// goes to a file, not a pipe: ssh hands its output descriptors to the bed's
// master connection, and a pipe's reader would wait for that to let go of
// it.
type guestRxdrop struct {
	cmd     *exec.Cmd
	outPath string
	out     *os.File
	done    chan struct{}
	err     error // what Wait returned, once done is closed
}

// startRxdrop starts cmd, an rxdrop with --json, and waits for its first
// interval line. The caller defers stop.
func startRxdrop(t *testing.T, cmd *exec.Cmd) *guestRxdrop {
	t.Helper()
	r := &guestRxdrop{cmd: cmd, outPath: filepath.Join(t.TempDir(), "rxdrop.out"), done: make(chan struct{})}
	var err error
	if r.out, err = os.Create(r.outPath); err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		r.out.Close()
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	if !waitFor(r.outPath, time.Minute, regexp.MustCompile(`"type":"interval"`)) {
		r.stop()
		t.Fatalf("rxdrop did not start:\n%s", r.output())
	}
	return r
}

// output is what rxdrop printed so far.
func (r *guestRxdrop) output() string { b, _ := os.ReadFile(r.outPath); return string(b) }

// stop kills rxdrop if it still runs, waits for it and closes its output.
func (r *guestRxdrop) stop() {
	select {
	case <-r.done:
	default:
		r.cmd.Process.Kill()
		<-r.done
	}
	r.out.Close()
}

// testSetLink pulls eth0's cable (QEMU's set_link off) under a running
// rxdrop, which must say the link went down and came back, and then count
// every frame sent to it after it is back.
func testSetLink(t *testing.T, b *Bed, xdpeng string) {
	privtest.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const pidFile = "/tmp/xdpeng-set-link.pid"
	// -d bounds the run should the SIGINT below not reach it.
	rx := startRxdrop(t, b.Command(ctx, "sh", "-c", `echo $$ > `+pidFile+`; exec "$0" "$@"`, xdpeng, "rxdrop", "-i", "eth0", "--json", "-n", "200ms", "-d", "150s"))
	defer rx.stop()
	outPath, output := rx.outPath, rx.output
	if err := b.SetLink(0, false); err != nil {
		t.Fatal(err)
	}
	if !waitFor(outPath, 30*time.Second, regexp.MustCompile(`"type":"link","mode":"rxdrop","interface":"eth0","state":"down","admin_up":true,"carrier":false`)) {
		t.Fatalf("rxdrop did not say eth0 lost its carrier:\n%s", output())
	}
	if err := b.SetLink(0, true); err != nil {
		t.Fatal(err)
	}
	if !waitFor(outPath, 30*time.Second, regexp.MustCompile(`"type":"link","mode":"rxdrop","interface":"eth0","state":"up"`)) {
		t.Fatalf("rxdrop did not say eth0 is back:\n%s", output())
	}
	const frames = 200
	send, err := runToFile(t, b.Command(ctx, xdpeng, "txonly", "-i", "eth1", "-G", b.Ports[0].MAC, "-c", "--xdp-pass", "never",
		"--count", fmt.Sprint(frames), "--rate", "1000", "-Q"))
	if err != nil {
		t.Fatalf("txonly: %v:\n%s", err, send)
	}
	time.Sleep(500 * time.Millisecond)
	if kill, err := runToFile(t, b.Command(ctx, "sh", "-c", "kill -INT $(cat "+pidFile+")")); err != nil {
		t.Fatalf("stop rxdrop: %v: %s", err, kill)
	}
	select {
	case <-rx.done:
		if rx.err != nil {
			t.Fatalf("rxdrop: %v:\n%s", rx.err, output())
		}
	case <-time.After(time.Minute):
		t.Fatalf("rxdrop did not end on SIGINT:\n%s", output())
	}
	m := regexp.MustCompile(`"type":"summary".*?"rx_packets":(\d+)`).FindStringSubmatch(output())
	if m == nil {
		t.Fatalf("no rxdrop summary:\n%s", output())
	}
	if m[1] != fmt.Sprint(frames) {
		t.Errorf("rxdrop counted %s frames after the link came back, want the %d sent", m[1], frames)
	}
}

package selftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A guard is a process of its own that puts back the device settings a
// test changes and the kernel does not undo when the process that changed
// them dies: ring sizes. Before a test changes a device's rings it tells
// the guard the sizes to put back; once it has put them back itself it
// says so. When the run ends the guard's input ends with nothing left to
// put back, and it exits; when the run is killed (kill -9) its input ends
// with changes still outstanding, and the guard puts those back first.
//
// The guard is the running program itself, started again with guardEnv
// set; such a program calls GuardMain first thing in main.
type guard struct {
	once sync.Once
	err  error
	cmd  *exec.Cmd
	w    io.WriteCloser
	mu   sync.Mutex
}

// guardEnv, set in a process's environment, makes GuardMain run the guard.
const guardEnv = "XDPENG_SELFTEST_GUARD"

// GuardMain runs the guard and exits if this process was started as one,
// and returns at once otherwise. A program whose commands call Run calls
// GuardMain first in main: Run starts the guard as the program itself.
func GuardMain() {
	if os.Getenv(guardEnv) != "1" {
		return
	}
	// The guard outlives whoever ends the run: Ctrl-C reaches selftest's
	// process group, not the guard's, and a hang-up or a SIGTERM must not
	// end it before it has done its work.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	errs := runGuard(os.Stdin, setRingsByIndex)
	for _, err := range errs {
		fmt.Fprintf(os.Stderr, "xdpeng selftest: putting back what a killed run changed: %v\n", err)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}

// ringRestore is what the guard puts back on one device.
type ringRestore struct {
	ns, name string
	index    int
	rx, tx   uint32
}

// Lines of the guard's input: "rings NS INDEX NAME RX TX" before a change
// (NS "-" for the caller's namespace), "restored NS INDEX" after the test
// put the rings back itself.

// runGuard reads the guard's input until it ends, then puts back what is
// still outstanding with set, returning set's errors.
func runGuard(r io.Reader, set func(ringRestore) error) []error {
	pending := map[string]ringRestore{}
	var order []string
	sc := bufio.NewScanner(r)
	var errs []error
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 6 && f[0] == "rings":
			index, err1 := strconv.Atoi(f[2])
			rx, err2 := strconv.ParseUint(f[4], 10, 32)
			tx, err3 := strconv.ParseUint(f[5], 10, 32)
			if err := errors.Join(err1, err2, err3); err != nil {
				errs = append(errs, fmt.Errorf("guard input %q: %w", sc.Text(), err))
				continue
			}
			key := f[1] + " " + f[2]
			if _, ok := pending[key]; !ok {
				order = append(order, key)
				// The first sizes told are the device's own: a
				// later change of the same device keeps them.
				pending[key] = ringRestore{ns: f[1], index: index, name: f[3], rx: uint32(rx), tx: uint32(tx)}
			}
		case len(f) == 3 && f[0] == "restored":
			delete(pending, f[1]+" "+f[2])
		default:
			errs = append(errs, fmt.Errorf("guard input %q: not a guard line", sc.Text()))
		}
	}
	for _, key := range order {
		if rr, ok := pending[key]; ok {
			if err := set(rr); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// setRingsByIndex sets the rings of the device with rr's index in rr's
// namespace (its name may have changed since).
func setRingsByIndex(rr ringRestore) error {
	e := End{Name: rr.name, Index: rr.index}
	if rr.ns != "-" {
		e.NS = rr.ns
	}
	if err := e.do(func() error {
		ifi, err := net.InterfaceByIndex(rr.index)
		if err != nil {
			return fmt.Errorf("device %s (index %d) to put its rings back to rx %d tx %d: %w", rr.name, rr.index, rr.rx, rr.tx, err)
		}
		e.Name = ifi.Name
		return nil
	}); err != nil {
		return err
	}
	return setRings(e, rr.rx, rr.tx)
}

// start starts the guard process, once; its error stays.
func (g *guard) start() error {
	g.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			g.err = fmt.Errorf("start the guard that puts ring sizes back: %w", err)
			return
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), guardEnv+"=1")
		cmd.Stderr = os.Stderr // what it could not put back
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		w, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			g.err = fmt.Errorf("start the guard that puts ring sizes back: %w", err)
			return
		}
		g.cmd, g.w = cmd, w
	})
	return g.err
}

func (g *guard) send(line string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := io.WriteString(g.w, line+"\n"); err != nil {
		return fmt.Errorf("tell the guard that puts ring sizes back: %w", err)
	}
	return nil
}

// rings tells the guard e's own ring sizes, before a test changes them.
func (g *guard) rings(e End, rx, tx uint32) error {
	if err := g.start(); err != nil {
		return err
	}
	return g.send(fmt.Sprintf("rings %s %d %s %d %d", nsField(e), e.Index, e.Name, rx, tx))
}

// restored tells the guard the test put e's rings back.
func (g *guard) restored(e End) error {
	return g.send(fmt.Sprintf("restored %s %d", nsField(e), e.Index))
}

// close ends the guard's input and waits for it to exit.
func (g *guard) close() error {
	if g.cmd == nil {
		return nil
	}
	werr := g.w.Close()
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the guard that puts ring sizes back: %w", err)
		}
		return werr
	case <-time.After(10 * time.Second):
		return errors.New("the guard that puts ring sizes back did not exit within 10 s of the run's end")
	}
}

func nsField(e End) string {
	if e.NS == "" {
		return "-"
	}
	return e.NS
}

// Package guardproc puts back, from a process of its own, what a run
// changed and the kernel does not undo when the run's process dies: ring
// sizes, NAPI settings. Before the run changes something it tells the
// guard what to put back, under a key; once it has put it back itself it
// says so. When the run ends, the guard's input ends with nothing left to
// put back; when the run is killed (kill -9), its input ends with changes
// still outstanding, and the guard puts those back.
//
// The guard is the running program itself, started again with an
// environment variable set; such a program calls Main first thing in main.
package guardproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Main runs the guard and exits if this process was started as the guard
// named by env, putting back with restore what its input leaves
// outstanding; it returns at once otherwise. what names the guard in its
// errors ("the NAPI settings of a killed run").
func Main(env, what string, restore func(key, value string) error) {
	if os.Getenv(env) != "1" {
		return
	}
	// Ctrl-C reaches the run's process group, not the guard's; a hang-up
	// or a SIGTERM must not end it before it has done its work.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	errs := Run(os.Stdin, restore)
	for _, err := range errs {
		fmt.Fprintf(os.Stderr, "xdpeng: putting back %s: %v\n", what, err)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}

// Lines of the guard's input: "change KEY VALUE", what to put back under
// KEY, told before the change; "restored KEY", once the run put it back
// itself. Keys hold no blanks; a value may.

// Run reads a guard's input until it ends, then puts back with restore
// what is still outstanding, in the order told, and returns restore's
// errors and those of the lines it could not read. Of a key changed twice
// before it was put back, the first value told is kept: the original.
func Run(r io.Reader, restore func(key, value string) error) []error {
	pending := map[string]string{}
	var order []string
	var errs []error
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		verb, rest, _ := strings.Cut(sc.Text(), " ")
		key, value, _ := strings.Cut(rest, " ")
		switch {
		case verb == "change" && key != "" && value != "":
			if _, ok := pending[key]; !ok {
				order = append(order, key)
				pending[key] = value
			}
		case verb == "restored" && key != "" && value == "":
			delete(pending, key)
		default:
			errs = append(errs, fmt.Errorf("guard input %q: not a guard line", sc.Text()))
		}
	}
	for _, key := range order {
		if value, ok := pending[key]; ok {
			if err := restore(key, value); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// Guard is the run's side: it starts the guard process on the first
// change and tells it each change and each restore.
type Guard struct {
	// Env is the environment variable that makes the program the guard
	// (what Main is given), What what it guards, for errors.
	Env, What string

	mu  sync.Mutex
	cmd *exec.Cmd
	w   io.WriteCloser
	err error
}

// Change starts the guard, the first time, and tells it what to put back
// under key should the run die before it says Restored.
func (g *Guard) Change(key, value string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.start(); err != nil {
		return err
	}
	return g.send("change " + key + " " + value)
}

// Restored tells the guard the run put key's value back itself.
func (g *Guard) Restored(key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return nil
	}
	return g.send("restored " + key)
}

func (g *Guard) start() error {
	if g.cmd != nil || g.err != nil {
		return g.err
	}
	if g.Env == "" {
		// The program started again without it would run as itself.
		g.err = errors.New("guardproc: a Guard without Env")
		return g.err
	}
	self, err := os.Executable()
	if err == nil {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), g.Env+"=1")
		cmd.Stderr = os.Stderr // what it could not put back
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var w io.WriteCloser
		if w, err = cmd.StdinPipe(); err == nil {
			if err = cmd.Start(); err == nil {
				g.cmd, g.w = cmd, w
				return nil
			}
		}
	}
	g.err = fmt.Errorf("start the process that puts %s back: %w", g.What, err)
	return g.err
}

func (g *Guard) send(line string) error {
	if _, err := io.WriteString(g.w, line+"\n"); err != nil {
		return fmt.Errorf("tell the process that puts %s back: %w", g.What, err)
	}
	return nil
}

// Close ends the guard's input and waits for it to exit: with nothing left
// to put back, at once. It is safe to call more than once, and without a
// guard started.
func (g *Guard) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return nil
	}
	cmd, werr := g.cmd, g.w.Close()
	g.cmd, g.w = nil, nil
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the process that puts %s back: %w", g.What, err)
		}
		return werr
	case <-time.After(10 * time.Second):
		return errors.New("the process that puts " + g.What + " back did not exit within 10 s of the run's end")
	}
}

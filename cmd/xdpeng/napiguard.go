package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// napiGuard is an engine.NAPIGuard: a process of its own, xdpeng started
// again with napiGuardEnv set, that puts back the NAPI settings busy
// polling changed if xdpeng is killed before it can (SIGKILL). It is told
// each NAPI's settings before they change, and when they are put back;
// when its input ends with settings still to put back, xdpeng did not end
// as it should, and it puts them back itself. It runs in xdpeng's network
// namespace, where the NAPIs are.
type napiGuard struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	w   io.WriteCloser
}

// napiGuardEnv, set in a process's environment, makes napiGuardMain run
// the guard.
const napiGuardEnv = "XDPENG_NAPI_GUARD"

// napiGuardMain runs the guard and exits if this process was started as
// one; it returns at once otherwise. main calls it first.
func napiGuardMain() {
	if os.Getenv(napiGuardEnv) != "1" {
		return
	}
	// Ctrl-C reaches xdpeng's process group, not the guard's; a hang-up
	// or a SIGTERM must not end it before it has done its work.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	errs := runNAPIGuard(os.Stdin, func(id uint32, c netdev.NAPIConfig) error { return netdev.SetNAPI(id, c) })
	for _, err := range errs {
		fmt.Fprintf(os.Stderr, "xdpeng: putting back the NAPI settings of a killed run: %v\n", err)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}

// Lines of the guard's input: "napi ID DEFER GRO_NS SUSPEND_NS", the
// settings to put back on NAPI ID, before they change; "restored ID" once
// xdpeng put them back itself.

// runNAPIGuard reads the guard's input until it ends, then puts back with
// set what is still outstanding, returning set's errors.
func runNAPIGuard(r io.Reader, set func(uint32, netdev.NAPIConfig) error) []error {
	pending := map[uint32]netdev.NAPIConfig{}
	var order []uint32
	var errs []error
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "napi":
			var v [4]uint64
			var perr error
			for i := range v {
				var err error
				v[i], err = strconv.ParseUint(f[i+1], 10, 64)
				perr = errors.Join(perr, err)
			}
			if perr != nil || v[0] > 1<<32-1 || v[1] > 1<<32-1 {
				errs = append(errs, fmt.Errorf("guard input %q: not a NAPI and its settings", sc.Text()))
				continue
			}
			id := uint32(v[0])
			if _, ok := pending[id]; !ok {
				// The first settings told are the NAPI's own.
				order = append(order, id)
				pending[id] = netdev.NAPIConfig{DeferHardIRQs: uint32(v[1]), GROFlushTimeout: time.Duration(v[2]), IRQSuspendTimeout: time.Duration(v[3])}
			}
		case len(f) == 2 && f[0] == "restored":
			id, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				errs = append(errs, fmt.Errorf("guard input %q: %w", sc.Text(), err))
				continue
			}
			delete(pending, uint32(id))
		default:
			errs = append(errs, fmt.Errorf("guard input %q: not a guard line", sc.Text()))
		}
	}
	for _, id := range order {
		if c, ok := pending[id]; ok {
			if err := set(id, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// Changing starts the guard, the first time, and tells it c's old settings.
func (g *napiGuard) Changing(c engine.NAPIChange) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("start the process that puts NAPI settings back: %w", err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), napiGuardEnv+"=1")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		w, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			return fmt.Errorf("start the process that puts NAPI settings back: %w", err)
		}
		g.cmd, g.w = cmd, w
	}
	b := c.Before
	_, err := fmt.Fprintf(g.w, "napi %d %d %d %d\n", c.NAPIID, b.DeferHardIRQs, b.GROFlushTimeout.Nanoseconds(), b.IRQSuspendTimeout.Nanoseconds())
	return err
}

// Restored tells the guard that c's old settings are back.
func (g *napiGuard) Restored(c engine.NAPIChange) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		fmt.Fprintf(g.w, "restored %d\n", c.NAPIID)
	}
}

// close ends the guard's input and waits for it: after the engine's
// Close, it has nothing left to put back.
func (g *napiGuard) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return nil
	}
	werr := g.w.Close()
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		g.cmd = nil
		if err != nil {
			return fmt.Errorf("the process that puts NAPI settings back: %w", err)
		}
		return werr
	case <-time.After(10 * time.Second):
		return errors.New("the process that puts NAPI settings back did not exit within 10 s")
	}
}

package engine

import (
	"fmt"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// NAPIConfig are the settings of a NAPI instance of its own (Linux 6.13)
// that decide how much of a queue's receive work preferred busy polling
// takes from the device's interrupt (Documentation/networking/napi.rst).
type NAPIConfig struct {
	// DeferHardIRQs is how many polls in a row that find nothing it takes
	// before the device's interrupt is unmasked again.
	DeferHardIRQs uint32
	// GROFlushTimeout is the timer that polls while the interrupt is
	// deferred.
	GROFlushTimeout time.Duration
	// IRQSuspendTimeout is how long an application's busy polling keeps
	// the interrupt suspended; the kernel applies it to busy polling
	// through epoll only, which the workers do not use.
	IRQSuspendTimeout time.Duration
}

// String writes c as the kernel's attributes name the settings.
func (c NAPIConfig) String() string {
	return fmt.Sprintf("defer-hard-irqs %d, gro-flush-timeout %v, irq-suspend-timeout %v", c.DeferHardIRQs, c.GROFlushTimeout, c.IRQSuspendTimeout)
}

// NAPIChange is what New did to the NAPI instance of a queue for busy
// polling: Close puts Before back.
//
// Where the kernel has no settings of a NAPI's own (before Linux 6.13), or
// the driver does not link a queue served to its NAPI, the change is to
// the device's (sysfs napi_defer_hard_irqs and
// gro_flush_timeout, the first two settings), which all its NAPIs share:
// Device is set, Queue is -1 and NAPIID 0. Engines on other queues of the
// device, in this process or another, hold the same values: the first
// sets them, and the last to close puts back what the device had.
//
// With WaitThreadedBusyPoll, the change is to the NAPI's threaded mode
// instead: Threaded is set, ThreadedBefore is the mode Close puts back,
// ThreadPID the NAPI's kernel thread, and Before and After are zero.
type NAPIChange struct {
	Queue  int
	NAPIID uint32
	Device bool
	Before NAPIConfig
	After  NAPIConfig

	Threaded       bool
	ThreadedBefore NAPIThreaded
	ThreadPID      int
}

// NAPIThreaded is a NAPI's threaded mode (netdev napi-set "threaded").
type NAPIThreaded uint32

// The modes, numbered as the kernel numbers them.
const (
	// NAPIThreadedDisabled: the NAPI runs in softirq context.
	NAPIThreadedDisabled NAPIThreaded = 0
	// NAPIThreadedEnabled: the NAPI runs in a kernel thread of its own,
	// woken by the device's interrupt.
	NAPIThreadedEnabled NAPIThreaded = 1
	// NAPIThreadedBusyPoll: the NAPI's kernel thread polls it without
	// stopping (WaitThreadedBusyPoll).
	NAPIThreadedBusyPoll NAPIThreaded = 2
)

// String gives the kernel's name of the mode: disabled, enabled or
// busy-poll.
func (m NAPIThreaded) String() string {
	switch m {
	case NAPIThreadedDisabled:
		return "disabled"
	case NAPIThreadedEnabled:
		return "enabled"
	case NAPIThreadedBusyPoll:
		return "busy-poll"
	}
	return fmt.Sprintf("NAPIThreaded(%d)", uint32(m))
}

// napiState is what an Engine or a Generator did to its queues' NAPIs for
// busy polling (Config.BusyPollNAPI, WaitThreadedBusyPoll): restore puts
// it back.
type napiState struct {
	dev     *netdev.Info
	guard   NAPIGuard
	changes []NAPIChange
	note    string // why nothing was changed on a queue, or at all
	holder  string // this engine, as a holder of a device-wide deferral
}

// NAPIGuard hears of each change to a NAPI before New makes it, and after
// Close has put it back: a process of the caller's that outlives this one
// can then put back what a process killed before Close (SIGKILL) left.
// If Changing returns an error, New changes nothing more, puts back what it
// changed and fails with it.
type NAPIGuard interface {
	Changing(NAPIChange) error
	Restored(NAPIChange)
}

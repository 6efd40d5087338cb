package engine

import (
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/platform"
	"github.com/xdpeng/xdpeng/xsk"
)

// Errors New and NewGenerator return where the caller can do something
// about it, and those Run returns. Check the kind with errors.Is; those
// whose comment names a type come as that type, with the details (read them
// with errors.As). ErrQueueBusy, ErrNoZeroCopy, ErrNoNativeXDP and
// ErrFrameSize have no detail type: the message says what was refused, and
// the kernel's error, where there is one, is wrapped too. The values are
// those of the layers below (AF_XDP sockets, XDP attachment), so that an
// error wraps one value of each kind, whichever layer found it.
var (
	// ErrNoDevice: the device does not exist in this network namespace
	// (*DeviceError).
	ErrNoDevice = errors.New("no such device")
	// ErrNoQueue: a queue the device does not have (*QueueError).
	ErrNoQueue = errors.New("no such queue")
	// ErrMTU: the device's MTU is too large for the UMEM frames
	// (*MTUError).
	ErrMTU = errors.New("MTU too large for the frame size")
	// ErrAttached: another XDP program is attached to the device
	// (*AttachedError).
	ErrAttached = errors.New("an XDP program is attached")
	// ErrQueueBusy: another AF_XDP socket is bound to the queue.
	ErrQueueBusy = xsk.ErrBusy
	// ErrNoZeroCopy: BindZeroCopy on a device or queue without zero-copy;
	// refused before anything is set up where the kernel reports the
	// device's XDP features.
	ErrNoZeroCopy = xsk.ErrNoZeroCopy
	// ErrNoNativeXDP: XDPNative on a driver without XDP support; refused
	// before anything is set up where the kernel reports the device's XDP
	// features.
	ErrNoNativeXDP = netdev.ErrNoNativeXDP
	// ErrNoThreadedBusyPoll: WaitThreadedBusyPoll where the kernel has no
	// threaded busy polling. (A driver that links no NAPI to a queue
	// served is refused with an error that wraps errors.ErrUnsupported.)
	ErrNoThreadedBusyPoll = netdev.ErrNoThreadedBusyPoll
	// ErrFrameSize: a UMEM frame size the kernel does not take (not a
	// power of two from 2048 to the page size).
	ErrFrameSize = errors.New("invalid frame size")
	// ErrNoHugePages: huge pages were required and the pool has too few
	// free (*HugePagesError).
	ErrNoHugePages = xsk.ErrNoHugePages
	// ErrMultiBuffer: MultiBuffer on a device that cannot do it, or whose
	// MTU needs more UMEM frames per frame than a packet may span
	// (*MultiBufferError).
	ErrMultiBuffer = errors.New("multi-buffer not possible")
	// ErrFrameTooLong: a generator frame longer than the device's MTU
	// allows (*FrameTooLongError).
	ErrFrameTooLong = errors.New("frame longer than the MTU allows")
	// ErrNotSupported: New, NewGenerator and LookupDevice on an operating
	// system other than Linux, where AF_XDP does not exist. Simulate and
	// Sim work everywhere.
	ErrNotSupported = platform.ErrNotSupported
	// ErrHandlerPanic: a handler panicked, which stopped the engine or
	// the simulation (*HandlerPanicError; Engine.Run, Sim.Run, Simulate).
	ErrHandlerPanic = errors.New("handler panicked")
)

// DeviceError is a device that does not exist.
type DeviceError struct {
	Name string
}

func (e *DeviceError) Error() string {
	return fmt.Sprintf("interface %q not found in this network namespace", e.Name)
}

// Is makes errors.Is(err, ErrNoDevice) true.
func (e *DeviceError) Is(target error) bool { return target == ErrNoDevice }

// QueueError is a queue the device does not have.
type QueueError struct {
	Device   string
	Driver   string
	Queue    int
	RxQueues int
}

func (e *QueueError) Error() string {
	have := fmt.Sprintf("it has %d receive queues (0-%d)", e.RxQueues, e.RxQueues-1)
	if e.RxQueues == 1 {
		have = "it has 1 receive queue (0)"
	}
	return fmt.Sprintf("queue %d does not exist on %s: %s", e.Queue, e.Device, have)
}

// Is makes errors.Is(err, ErrNoQueue) true.
func (e *QueueError) Is(target error) bool { return target == ErrNoQueue }

// MTUError is a device whose largest frame does not fit in a UMEM frame
// after the kernel's headroom and the UMEM's (without MultiBuffer).
type MTUError struct {
	Device    string
	MTU       int
	FrameSize uint32
	// Headroom is the UMEM headroom (Config.FrameHeadroom).
	Headroom uint32
	// MaxMTU is the largest MTU that fits FrameSize.
	MaxMTU int
}

func (e *MTUError) Error() string {
	head := fmt.Sprintf("the kernel's %d bytes of headroom", KernelHeadroom)
	if e.Headroom > 0 {
		head = fmt.Sprintf("%d bytes of headroom (the kernel's %d and the UMEM's %d)", KernelHeadroom+e.Headroom, KernelHeadroom, e.Headroom)
	}
	return fmt.Sprintf("%s has MTU %d: its frames (up to %d bytes) do not fit in %d-byte UMEM frames after %s",
		e.Device, e.MTU, e.MTU+frameOverhead, e.FrameSize, head)
}

// Is makes errors.Is(err, ErrMTU) true.
func (e *MTUError) Is(target error) bool { return target == ErrMTU }

// AttachedError is an XDP program someone else attached to the device.
type AttachedError struct {
	Device string
	// ProgramID is the attached program, ProgramName its name ("" where
	// it cannot be read); Mode the mode it runs in, as the kernel reports
	// it (native, generic, offload, multi).
	ProgramID   uint32
	ProgramName string
	Mode        string
	// LinkID is the bpf_link that holds the program, 0 if it was attached
	// through netlink. A link is held by a live process, and is never
	// replaced, even with Config.Force. OwnerPID and OwnerComm name the
	// process that holds the link or, for a program attached through
	// netlink, another process that holds the program open (which
	// Config.Force replaces only with ForceInUse), where one was found.
	LinkID    uint32
	OwnerPID  int
	OwnerComm string
	// Forced is set when Config.Force was given and the program was
	// refused all the same.
	Forced bool
}

func (e *AttachedError) Error() string {
	fe := netdev.ForeignXDPError{Interface: e.Device, Forced: e.Forced, XDPAttachment: netdev.XDPAttachment{
		XDPState: netdev.XDPState{ProgID: e.ProgramID, Mode: e.Mode}, ProgName: e.ProgramName,
		LinkID: e.LinkID, OwnerPID: e.OwnerPID, OwnerComm: e.OwnerComm}}
	return fe.Error()
}

// Is makes errors.Is(err, ErrAttached) true.
func (e *AttachedError) Is(target error) bool { return target == ErrAttached }

// OutputQueueError is a queue of the engine that an output device does not
// have: queue q is forwarded out of queue q of every output.
type OutputQueueError struct {
	Output    string
	Queue     int
	OutQueues int
}

func (e *OutputQueueError) Error() string {
	return fmt.Sprintf("input queue %d has no counterpart on %s, which has %d queues: queue q is forwarded out of queue q", e.Queue, e.Output, e.OutQueues)
}

// Is makes errors.Is(err, ErrNoQueue) true.
func (e *OutputQueueError) Is(target error) bool { return target == ErrNoQueue }

// HugePagesError says that the UMEMs should be in huge pages and the pool
// has too few free.
type HugePagesError struct {
	// Need is the huge pages the UMEMs take, Free those the pool has free
	// (and not promised to another mapping), Total its size, and PageSize
	// the size of one huge page in bytes (0: the kernel has none).
	Need, Free, Total, PageSize int
	cause                       error // the failed mmap, if it came to one
}

func (e *HugePagesError) Error() string {
	if e.PageSize == 0 {
		return "the UMEMs should be in huge pages, and this kernel has none (no Hugepagesize in /proc/meminfo)"
	}
	s := fmt.Sprintf("the UMEMs need %d huge pages of %d kB and the pool has %d free of %d (HugePages_Free, HugePages_Total in /proc/meminfo)",
		e.Need, e.PageSize>>10, e.Free, e.Total)
	if e.cause != nil {
		s += fmt.Sprintf(" (%v)", e.cause)
	}
	return s + fmt.Sprintf("; reserve more with: echo %d > /proc/sys/vm/nr_hugepages", e.Total+e.Need-e.Free)
}

// hugePagesError is the error of UMEMs that need need huge pages from
// pool; cause is the failed mmap, if it came to one.
func hugePagesError(need int, pool xsk.HugePages, cause error) *HugePagesError {
	return &HugePagesError{Need: need, Free: pool.Available(), Total: pool.Total, PageSize: pool.Size, cause: cause}
}

// Unwrap returns the failure underneath, if any.
func (e *HugePagesError) Unwrap() error { return e.cause }

// Is makes errors.Is(err, ErrNoHugePages) true.
func (e *HugePagesError) Is(target error) bool { return target == ErrNoHugePages }

// MultiBufferError is a device on which Config.MultiBuffer cannot work.
type MultiBufferError struct {
	Device string
	// NoRxSG: the driver cannot hand native XDP frames in fragments: its
	// XDP features (Features) lack rx-sg.
	NoRxSG   bool
	Features string
	// Otherwise the device's MTU needs Buffers UMEM frames of FrameSize
	// bytes (with Headroom) per frame, more than MaxBuffers; MaxMTU is the
	// largest MTU that fits.
	MTU                 int
	FrameSize, Headroom uint32
	Buffers, MaxBuffers int
	MaxMTU              int
}

func (e *MultiBufferError) Error() string {
	if e.NoRxSG {
		return fmt.Sprintf("%s cannot receive multi-buffer frames in native XDP: its XDP features (%s) lack rx-sg", e.Device, e.Features)
	}
	return fmt.Sprintf("%s has MTU %d: its frames need %d UMEM frames of %d bytes (%d bytes of data each), more than the %d one frame may span in copy mode; the largest MTU that fits is %d",
		e.Device, e.MTU, e.Buffers, e.FrameSize, e.FrameSize-KernelHeadroom-e.Headroom, e.MaxBuffers, e.MaxMTU)
}

// Is makes errors.Is(err, ErrMultiBuffer) true.
func (e *MultiBufferError) Is(target error) bool { return target == ErrMultiBuffer }

// FrameTooLongError is a generator frame longer than the device takes:
// its MTU and an Ethernet header (and a VLAN tag, when the frame has one).
type FrameTooLongError struct {
	Device string
	MTU    int
	// Length is the frame's length, Max the most the device takes.
	Length, Max int
}

func (e *FrameTooLongError) Error() string {
	return fmt.Sprintf("%d-byte frames do not fit %s's MTU of %d: it takes frames of at most %d bytes", e.Length, e.Device, e.MTU, e.Max)
}

// Is makes errors.Is(err, ErrFrameTooLong) true.
func (e *FrameTooLongError) Is(target error) bool { return target == ErrFrameTooLong }

// HandlerPanicError is a panic in a handler. Engine.Run returns it once
// every worker has stopped (the counters stay readable, and Close cleans
// up as after any run); Sim.Run and Simulate return it wrapped.
type HandlerPanicError struct {
	// Queue is the queue whose worker ran the handler (0 in a simulation).
	Queue int
	// Value is what the handler passed to panic.
	Value any
	// Stack is the stack of the worker's goroutine at the panic, as
	// runtime/debug.Stack formats it.
	Stack []byte
}

func (e *HandlerPanicError) Error() string {
	return fmt.Sprintf("queue %d: handler panicked: %v", e.Queue, e.Value)
}

// Is makes errors.Is(err, ErrHandlerPanic) true.
func (e *HandlerPanicError) Is(target error) bool { return target == ErrHandlerPanic }

// Unwrap returns Value if it is an error (panic(err)), nil otherwise.
func (e *HandlerPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

package gen

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progRunAttr is the BPF_PROG_TEST_RUN member of union bpf_attr.
type progRunAttr struct {
	progFD      uint32
	retval      uint32
	dataSizeIn  uint32
	dataSizeOut uint32
	dataIn      uint64
	dataOut     uint64
	repeat      uint32
	duration    uint32
	ctxSizeIn   uint32
	ctxSizeOut  uint32
	ctxIn       uint64
	ctxOut      uint64
	flags       uint32
	cpu         uint32
	batchSize   uint32
	_           uint32
}

// runLive runs the program repeat times on frame in live-frames mode, on the
// calling thread's CPU.
//
// It calls bpf(2) itself rather than through ebpf.Program.Run because of
// EINTR: a signal ends the run early without saying how many repetitions
// were done, and ebpf.Program.Run then starts the whole run again. Here
// EINTR is returned to the caller, which reads the program's own count and
// decides whether to go on; interrupting a run with a signal is also how
// the generator stops before its count is reached.
func runLive(progFD int, frame []byte, repeat, batch uint32) error {
	attr := progRunAttr{
		progFD:     uint32(progFD),
		dataSizeIn: uint32(len(frame)),
		dataIn:     uint64(uintptr(unsafe.Pointer(&frame[0]))),
		repeat:     repeat,
		flags:      unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		batchSize:  batch,
	}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	// The kernel reads frame through a pointer the garbage collector
	// cannot see in attr.
	runtime.KeepAlive(frame)
	if errno != 0 {
		return errno
	}
	return nil
}

// Package xsk implements AF_XDP sockets: the UMEM, its four rings, a free-frame
// stack, and the bind, wakeup and statistics system calls.
//
// An AF_XDP socket shares memory with the kernel. The UMEM is a region split
// into equal frames; frames move between userspace and the kernel through four
// single-producer, single-consumer rings of descriptors:
//
//   - the fill ring: userspace gives the kernel empty frames to receive into;
//   - the rx ring: the kernel hands back frames it has filled (address, length);
//   - the tx ring: userspace gives the kernel frames to transmit;
//   - the completion ring: the kernel hands back frames it has transmitted.
//
// Each ring has a producer and a consumer index in shared memory. The side that
// owns an index writes it with release semantics after writing the
// descriptors, and the other side reads it with acquire semantics before
// reading them (sync/atomic gives at least that). Each side also keeps cached
// copies of both indices, so that a batch touches the shared cache lines once:
// Reserve/Submit on the rings we produce (fill, tx), Peek/Release on the rings
// we consume (rx, completion).
//
// With need_wakeup the kernel sets a flag on the fill or tx ring when it needs
// a system call to make progress; the socket only makes one then.
//
// # Whose is what
//
// The application produces the fill and tx rings and consumes the rx and
// completion rings; the kernel does the opposite. A frame is at any time
// in exactly one place: the socket's FrameStack (free), one of the four
// rings, or the application's hands between a Peek and the Release or
// Submit that passes it on. Socket.Audit checks that every frame of the
// UMEM is in one of those places once.
//
// # Concurrency
//
// Each ring has one producer and one consumer, and nothing in the package
// locks: on the application's side one goroutine at a time calls a ring's
// methods, and a FrameStack's. The four rings are independent, so the rx
// side (Fill, Rx) and the tx side (Tx, Completion) of one socket may each
// have a goroutine of its own, as long as they do not share a FrameStack
// (Refill takes from the socket's Frames). FD, Config, ZeroCopy and Umem
// read what bind left and may be called from any goroutine. On a socket
// bound to a device, Statistics and NAPIID ask the kernel and may be
// called from another goroutine while a worker runs, not concurrently
// with Close. Close comes after the workers are done with the socket, and
// before the Umem's Close. A MemKernel is a simulation, not a concurrent
// kernel: its methods and an in-memory socket's are called from one
// goroutine, between the application's batches.
//
// # Without a kernel
//
// All unsafe code of the package is in mmap.go. Rings can also live in
// ordinary memory (NewMemUmem, NewMemSocket), with the kernel's side
// simulated by the socket's MemKernel: it receives frames into the fill
// ring's buffers, transmits from the tx ring and completes, and checks
// descriptors as the kernel does, so that a loop written against this
// package can be tested and benchmarked without privilege.
package xsk

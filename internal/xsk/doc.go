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
// All unsafe code of the package is in mmap.go. Rings can also live in
// ordinary memory (NewMemSocket), with a simulated kernel side, so the ring
// logic and the engine can be tested and benchmarked without privilege.
package xsk

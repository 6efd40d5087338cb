// Package vm is a test bed whose device under test is a QEMU guest: its
// ports are virtio-net NICs (a driver with a real NAPI, interrupts and RSS
// queues) and its kernel is one of the kernels users run (Debian's 6.1,
// 6.12, 5.10), not the host's.
//
// The guest boots the kernel of a Debian linux-image package, fetched once
// with apt into a cache directory, from an initramfs of busybox and that
// kernel's own modules. Its root is the host's / read-only over 9p with a
// tmpfs overlay for writes, so the xdpeng binary and the test binaries under
// test are simply the host's files. Its NICs are taps in the bed's generator
// namespace NAME-gen (the tester ends); one more NIC, the management link,
// carries ssh, over which commands run in the guest (Exec). QEMU's monitor
// takes links down and up (SetLink).
//
// A bed's state (QEMU's pid, the console log, the monitor socket, the ssh
// keys) lives in StateDir/NAME, written before QEMU starts, so that Down
// removes a bed whatever happened to the process that made it.
//
// QEMU runs the guest under TCG, which needs no /dev/kvm: rates in a guest
// are emulator speed, good for functional checks, never for a figure.
package vm

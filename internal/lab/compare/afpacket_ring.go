//go:build linux

package compare

// This file holds the package's only unsafe code: viewing words of the
// AF_PACKET ring, which the kernel writes concurrently, as atomics (the
// block status is the hand-over between kernel and reader and needs
// acquire/release ordering).

import (
	"sync/atomic"
	"unsafe"
)

// blockWord is the 32-bit word at off in the mapped ring.
func blockWord(ring []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&ring[off]))
}

package xsk

import (
	"errors"
	"testing"
)

// TestSharedBindCheck: a socket that shares a UMEM may ask for what its
// first socket has (or Auto), and nothing else.
func TestSharedBindCheck(t *testing.T) {
	copyWakeup := boundAs{needWakeup: true}
	zcSG := boundAs{zeroCopy: true, multiBuffer: true}
	for _, tc := range []struct {
		name  string
		first boundAs
		cfg   SocketConfig
		ok    bool
	}{
		{"auto, as the first", copyWakeup, SocketConfig{NeedWakeup: true}, true},
		{"copy, as the first", copyWakeup, SocketConfig{Mode: Copy, NeedWakeup: true}, true},
		{"zero-copy on a copy UMEM", copyWakeup, SocketConfig{Mode: ZeroCopy, NeedWakeup: true}, false},
		{"without need_wakeup", copyWakeup, SocketConfig{}, false},
		{"multi-buffer on a UMEM without", copyWakeup, SocketConfig{NeedWakeup: true, MultiBuffer: true}, false},
		{"zero-copy and multi-buffer, as the first", zcSG, SocketConfig{Mode: ZeroCopy, MultiBuffer: true}, true},
		{"copy on a zero-copy UMEM", zcSG, SocketConfig{Mode: Copy, MultiBuffer: true}, false},
		{"the pool's socket: only the mode counts", copyWakeup, SocketConfig{Mode: Copy, SharePool: true}, true},
		{"the pool's socket, zero-copy on a copy pool", copyWakeup, SocketConfig{Mode: ZeroCopy, SharePool: true}, false},
	} {
		err := sharedBindCheck(tc.first, tc.cfg)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrSharedBind) {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

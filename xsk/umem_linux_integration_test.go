//go:build linux

package xsk_test

import (
	"errors"
	"os"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/hugetest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
	. "github.com/xdpeng/xdpeng/xsk"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// TestRegisterFrameSizes registers UMEMs with the kernel in every frame size
// and mode xdpeng offers: the kernel takes what Validate takes.
func TestRegisterFrameSizes(t *testing.T) {
	privtest.Root(t)
	for _, c := range []UmemConfig{
		{FrameSize: 2048, NumFrames: 64},
		{FrameSize: 4096, NumFrames: 64},
		{FrameSize: 2048, NumFrames: 64, Unaligned: true},
		{FrameSize: 4096, NumFrames: 64, Unaligned: true, Headroom: 512},
		{FrameSize: 2048, NumFrames: 64, Headroom: MaxHeadroom(2048)},
		{FrameSize: 4096, NumFrames: 64, Headroom: MaxHeadroom(4096), Unaligned: true},
	} {
		u, err := NewUmem(c)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if u.Unaligned() != c.Unaligned || u.Headroom() != c.Headroom || u.HugePages() {
			t.Errorf("%+v: UMEM says unaligned %v, headroom %d, huge pages %v", c, u.Unaligned(), u.Headroom(), u.HugePages())
		}
		u.Close()
	}
}

// TestRegisterInHugePages registers UMEMs in huge pages and sees a pool
// without enough free pages refused with ErrNoHugePages.
func TestRegisterInHugePages(t *testing.T) {
	hp := hugetest.Reserve(t, 4)
	for _, c := range []UmemConfig{
		{FrameSize: 2048, NumFrames: 512, HugePages: true, Unaligned: true},
		{FrameSize: 4096, NumFrames: 512, HugePages: true, Headroom: 1000},
	} {
		u, err := NewUmem(c)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if !u.HugePages() {
			t.Errorf("%+v: the UMEM says it is not in huge pages", c)
		}
		u.Close()
	}
	// More than the pool has: the kernel gives the pages of a closed UMEM
	// back a little later, so more than it has at all.
	c := UmemConfig{FrameSize: 4096, NumFrames: uint32((hp.Total + 1) * hp.Size / 4096), HugePages: true}
	if u, err := NewUmem(c); !errors.Is(err, ErrNoHugePages) {
		if u != nil {
			u.Close()
		}
		t.Errorf("a UMEM of %d huge pages from a pool of %d: %v, want ErrNoHugePages", hp.Total+1, hp.Total, err)
	}
}

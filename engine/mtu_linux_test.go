package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

func TestCheckMTU(t *testing.T) {
	for _, tc := range []struct {
		mtu      int
		frame    uint32
		headroom uint32
		maxMTU   int // 0 for no error
	}{
		{1500, 2048, 0, 0},
		{1774, 2048, 0, 0},
		{1775, 2048, 0, 1774},
		{3000, 4096, 0, 0},
		{3822, 4096, 0, 0},
		{9000, 4096, 0, 3822},
		{9000, 2048, 0, 1774},
		{1500, 2048, 256, 0},
		{1519, 2048, 256, 1518},
		{1500, 2048, 275, 1499},
		{0, 2048, 0, 0}, // unknown MTU: nothing to check
	} {
		cfg := Config{FrameSize: tc.frame, FrameHeadroom: tc.headroom}
		err := checkMTU(&netdev.Info{Name: "eth9", MTU: tc.mtu}, &cfg)
		var me *MTUError
		switch {
		case tc.maxMTU == 0 && err != nil:
			t.Errorf("MTU %d, %d-byte frames, headroom %d: %v", tc.mtu, tc.frame, tc.headroom, err)
		case tc.maxMTU != 0 && !errors.As(err, &me):
			t.Errorf("MTU %d, %d-byte frames, headroom %d: error %v, want an *MTUError", tc.mtu, tc.frame, tc.headroom, err)
		case tc.maxMTU != 0:
			if me.MaxMTU != tc.maxMTU || me.Device != "eth9" || !errors.Is(err, ErrMTU) || !strings.Contains(err.Error(), "eth9 has MTU") {
				t.Errorf("MTU %d, %d-byte frames: %+v (%v), want MaxMTU %d on eth9", tc.mtu, tc.frame, me, err, tc.maxMTU)
			}
			if tc.headroom > 0 && !strings.Contains(err.Error(), "the UMEM's") {
				t.Errorf("MTU %d with a UMEM headroom: %q does not name the headroom", tc.mtu, err)
			}
		}
	}
}

// TestCheckMTUMultiBuffer: with multi-buffer a frame may take up to 18 UMEM
// frames; a larger MTU is an ErrMultiBuffer that says what fits.
func TestCheckMTUMultiBuffer(t *testing.T) {
	for _, tc := range []struct {
		mtu     int
		frame   uint32
		buffers int // 0 for no error
		maxMTU  int
	}{
		{9000, 2048, 0, 0},
		{9000, 4096, 0, 0},
		{65535, 4096, 0, 0},  // 18 x 3840 = 69120
		{65535, 2048, 37, 0}, // 18 x 1792 = 32256
		{32238, 2048, 0, 0},
		{32239, 2048, 19, 32238},
	} {
		cfg := Config{FrameSize: tc.frame, MultiBuffer: true}
		err := checkMTU(&netdev.Info{Name: "eth9", MTU: tc.mtu}, &cfg)
		var me *MultiBufferError
		switch {
		case tc.buffers == 0 && err != nil:
			t.Errorf("MTU %d, %d-byte frames: %v", tc.mtu, tc.frame, err)
		case tc.buffers != 0 && (!errors.As(err, &me) || !errors.Is(err, ErrMultiBuffer)):
			t.Errorf("MTU %d, %d-byte frames: error %v, want a *MultiBufferError", tc.mtu, tc.frame, err)
		case tc.buffers != 0:
			if me.Buffers != tc.buffers || me.MaxBuffers != 18 || tc.maxMTU != 0 && me.MaxMTU != tc.maxMTU {
				t.Errorf("MTU %d, %d-byte frames: %+v, want %d buffers", tc.mtu, tc.frame, me, tc.buffers)
			}
			if !strings.Contains(err.Error(), "more than the 18 one frame may span") {
				t.Errorf("error %q", err)
			}
		}
	}
}

// TestCheckMTUAgreesWithMTULimit: where both ask the same question (a
// native copy-mode device with rx-sg, its MTU within its MaxMTU), checkMTU
// accepts exactly the MTUs netdev.Facts.MTULimit reports as fitting.
func TestCheckMTUAgreesWithMTULimit(t *testing.T) {
	f := &netdev.Facts{Info: netdev.Info{Name: "eth9"}, MaxMTU: 65535,
		Features: &netdev.DevFeatures{XDP: netdev.XDPBasic | netdev.XDPRxSG}}
	for _, frame := range FrameSizes() {
		for _, headroom := range []uint32{0, 256} {
			l := f.MTULimit(int(frame), int(headroom), false)
			for _, mb := range []bool{false, true} {
				limit := l.Single
				if mb {
					limit = l.MultiBuffer
				}
				for _, mtu := range []int{68, 1500, limit - 1, limit, limit + 1, 9000, 65535} {
					if mtu <= 0 || mtu > f.MaxMTU {
						continue
					}
					cfg := Config{FrameSize: frame, FrameHeadroom: headroom, MultiBuffer: mb}
					info := f.Info
					info.MTU = mtu
					if err := checkMTU(&info, &cfg); (err == nil) != (mtu <= limit) {
						t.Errorf("%d-byte frames, headroom %d, multi-buffer %v, MTU %d: checkMTU says %v, MTULimit %d", frame, headroom, mb, mtu, err, limit)
					}
				}
			}
		}
	}
}

package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

func TestCheckMTU(t *testing.T) {
	for _, tc := range []struct {
		mtu    int
		frame  uint32
		maxMTU int // 0 for no error
	}{
		{1500, 2048, 0},
		{1774, 2048, 0},
		{1775, 2048, 1774},
		{3000, 4096, 0},
		{3822, 4096, 0},
		{9000, 4096, 3822},
		{9000, 2048, 1774},
		{0, 2048, 0}, // unknown MTU: nothing to check
	} {
		err := checkMTU(&netdev.Info{Name: "eth9", MTU: tc.mtu}, tc.frame)
		var me *MTUError
		switch {
		case tc.maxMTU == 0 && err != nil:
			t.Errorf("MTU %d, %d-byte frames: %v", tc.mtu, tc.frame, err)
		case tc.maxMTU != 0 && !errors.As(err, &me):
			t.Errorf("MTU %d, %d-byte frames: error %v, want an *MTUError", tc.mtu, tc.frame, err)
		case tc.maxMTU != 0:
			if me.MaxMTU != tc.maxMTU || me.Device != "eth9" || !errors.Is(err, ErrMTU) || !strings.Contains(err.Error(), "eth9 has MTU") {
				t.Errorf("MTU %d, %d-byte frames: %+v (%v), want MaxMTU %d on eth9", tc.mtu, tc.frame, me, err, tc.maxMTU)
			}
		}
	}
}

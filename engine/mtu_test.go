package engine

import (
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

func TestCheckMTU(t *testing.T) {
	for _, tc := range []struct {
		mtu   int
		frame uint32
		want  string // "" for no error
	}{
		{1500, 2048, ""},
		{1774, 2048, ""},
		{1775, 2048, "use --frame-size 4096"},
		{3000, 4096, ""},
		{3822, 4096, ""},
		{9000, 4096, "lower it to at most 3822"},
		{9000, 2048, "lower it to at most 3822 (ip link set eth9 mtu 3822) and use --frame-size 4096"},
		{0, 2048, ""}, // unknown MTU: nothing to check
	} {
		err := checkMTU(&netdev.Info{Name: "eth9", MTU: tc.mtu}, tc.frame)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("MTU %d, %d-byte frames: %v", tc.mtu, tc.frame, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "eth9")):
			t.Errorf("MTU %d, %d-byte frames: error %v, want one naming eth9 and saying %q", tc.mtu, tc.frame, err, tc.want)
		}
	}
}

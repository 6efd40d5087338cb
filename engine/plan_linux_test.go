package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestCheckMultiBuffer: multi-buffer in native mode needs rx-sg among the
// device's XDP features; generic mode, a device that has it, and a kernel
// that reports no features are let through.
func TestCheckMultiBuffer(t *testing.T) {
	facts := func(x netdev.XDPFeatures) *netdev.Facts {
		f := &netdev.Facts{Info: netdev.Info{Name: "eth1", Driver: "ice"}}
		if x != 0 {
			f.Features = &netdev.DevFeatures{XDP: x}
		}
		return f
	}
	for _, tc := range []struct {
		name   string
		f      *netdev.Facts
		mode   XDPMode
		refuse bool
	}{
		{"native without rx-sg", facts(netdev.XDPBasic | netdev.XDPRedirect), XDPNative, true},
		{"native with rx-sg", facts(netdev.XDPBasic | netdev.XDPRedirect | netdev.XDPRxSG), XDPNative, false},
		{"generic without rx-sg", facts(netdev.XDPBasic | netdev.XDPRedirect), XDPGeneric, false},
		{"features unknown", facts(0), XDPNative, false},
	} {
		c := Config{MultiBuffer: true, XDPMode: tc.mode}
		err := c.checkMultiBuffer(tc.f, tc.f.Plan())
		var me *MultiBufferError
		if got := errors.As(err, &me); got != tc.refuse || (got && (!me.NoRxSG || me.Device != "eth1" || !errors.Is(err, ErrMultiBuffer) || !strings.Contains(err.Error(), "lack rx-sg"))) {
			t.Errorf("%s: %v, want refused %v", tc.name, err, tc.refuse)
		}
		c.MultiBuffer = false
		if err := c.checkMultiBuffer(tc.f, tc.f.Plan()); err != nil {
			t.Errorf("%s without multi-buffer: %v", tc.name, err)
		}
	}
}

//go:build linux

package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestXDPModeFromFeatures: the loopback device of a test namespace has no
// native XDP. XDPAuto becomes generic there and native on veth; XDPNative
// on lo and zero-copy on veth are refused with the reason before anything
// is attached.
func TestXDPModeFromFeatures(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	ipCmd(t, "-n", bed.DUTNS, "link", "set", "lo", "mtu", "1500") // lo's 65536 fits no UMEM frame
	err := bed.InDUT(func() error {
		if _, err := netdev.Features(1); errors.Is(err, netdev.ErrNoXDPFeatures) {
			return err
		}
		for _, tc := range []struct {
			dev  string
			mode engine.XDPMode
			bind engine.BindMode
			want engine.XDPMode // or the error
			err  error
			msg  string
		}{
			{dev: "lo", mode: engine.XDPAuto, want: engine.XDPGeneric},
			{dev: bed.Links[0].DUT, mode: engine.XDPAuto, want: engine.XDPNative},
			{dev: "lo", mode: engine.XDPNative, err: engine.ErrNoNativeXDP, msg: "lo has no native XDP"},
			{dev: bed.Links[0].DUT, mode: engine.XDPAuto, bind: engine.BindZeroCopy, err: engine.ErrNoZeroCopy,
				msg: "dut0 (veth) has no AF_XDP zero-copy: the kernel does not report xsk-zerocopy"},
		} {
			cfg := engine.DefaultConfig()
			cfg.Interface, cfg.XDPMode, cfg.BindMode = tc.dev, tc.mode, tc.bind
			eng, err := engine.New(cfg)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("%s %v %v: %v, want %v (%q)", tc.dev, tc.mode, tc.bind, err, tc.err, tc.msg)
				}
				if err == nil {
					eng.Close()
				}
				if st, err := netdev.XDPAttached(bed.Links[0].DUTIndex); err != nil || st.ProgID != 0 {
					t.Errorf("after a refusal: %+v, %v", st, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %v: %v", tc.dev, tc.mode, err)
				continue
			}
			got := eng.Config().XDPMode
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := eng.Run(ctx); err != nil {
				t.Errorf("%s: Run: %v", tc.dev, err)
			}
			eng.Close()
			if got != tc.want {
				t.Errorf("%s %v: became %v, want %v", tc.dev, tc.mode, got, tc.want)
			}
		}
		return nil
	})
	if errors.Is(err, netdev.ErrNoXDPFeatures) {
		privtest.Unsupported(t, "%v", err) // a kernel before 6.3: nothing to decide from
	}
	if err != nil {
		t.Fatal(err)
	}
}

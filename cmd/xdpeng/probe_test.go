package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestProbeSaysMultiBufferIsF: on a device with rx-sg whose MTU does not
// fit in one UMEM frame, probe says that multi-buffer is what -F gives,
// not what xdpeng does by default (rxdrop without -F refuses that MTU).
func TestProbeSaysMultiBufferIsF(t *testing.T) {
	f := &netdev.Facts{
		Info:     netdev.Info{Name: "dut0", Driver: "veth", Index: 2, MTU: 3000, RxQueues: 1, TxQueues: 1},
		MinMTU:   68,
		Features: &netdev.DevFeatures{XDP: netdev.XDPBasic | netdev.XDPRedirect | netdev.XDPNdoXmit | netdev.XDPRxSG | netdev.XDPNdoXmitSG},
	}
	var out bytes.Buffer
	probeReport(f).text(&out)
	for _, want := range []string{
		"xdpeng here: XDP in native mode, AF_XDP copy; multi-buffer receive (rx-sg) with -F, not by default",
		"2048-byte frames, copy:      1774 in one frame, 32238 with -F (multi-buffer) (MTU 3000 does not fit in one: only with -F)",
		"4096-byte frames, copy:      3822 in one frame",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("probe does not say %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "4096-byte frames, copy:      3822 in one frame, 65535 with -F (multi-buffer) (MTU") {
		t.Errorf("probe says MTU 3000 does not fit 4096-byte frames:\n%s", out.String())
	}
}

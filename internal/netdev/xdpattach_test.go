package netdev

import (
	"errors"
	"strings"
	"testing"
)

// TestRefusal: which attachment each Replace lets go, and what the refusal
// says of it.
func TestRefusal(t *testing.T) {
	prog := XDPState{ProgID: 9, Mode: ModeNative}
	unused := XDPAttachment{XDPState: prog, ProgName: "xdp_pass"}
	inUse := XDPAttachment{XDPState: prog, OwnerPID: 40, OwnerComm: "xdp-bench"}
	linked := XDPAttachment{XDPState: prog, LinkID: 3, OwnerPID: 41, OwnerComm: "xdpeng"}
	for _, tc := range []struct {
		a       XDPAttachment
		r       Replace
		refused bool
		says    string
	}{
		{XDPAttachment{}, ReplaceNone, false, ""},
		{unused, ReplaceNone, true, "id 9 xdp_pass (native mode) attached by someone else through netlink, held by no running process"},
		{unused, ReplaceUnused, false, ""},
		{inUse, ReplaceNone, true, "through netlink, held open by a running process (pid 40, xdp-bench)"},
		{inUse, ReplaceUnused, true, "held open by a running process (pid 40, xdp-bench): a program in use is replaced only when that is asked for too"},
		{inUse, ReplaceInUse, false, ""},
		{linked, ReplaceInUse, true, "through bpf_link id 3, held by a running process (pid 41, xdpeng)"},
	} {
		err := tc.a.Refusal("dut0", tc.r)
		if (err != nil) != tc.refused {
			t.Errorf("%+v under %v: refusal %v, want refused %v", tc.a, tc.r, err, tc.refused)
			continue
		}
		if err == nil {
			continue
		}
		var fe *ForeignXDPError
		if !errors.As(err, &fe) || fe.Interface != "dut0" || fe.ProgID != 9 {
			t.Errorf("%+v under %v: %v, want a *ForeignXDPError for program 9 on dut0", tc.a, tc.r, err)
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v under %v: %q lacks %q", tc.a, tc.r, err, tc.says)
		}
	}
	if ReplaceOf(false, true) != ReplaceNone || ReplaceOf(true, false) != ReplaceUnused || ReplaceOf(true, true) != ReplaceInUse {
		t.Error("ReplaceOf does not map force, in use to none, unused, in use")
	}
}

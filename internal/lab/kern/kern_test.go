package kern

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	many := make([]string, MaxOuts+1)
	for i := range many {
		many[i] = fmt.Sprintf("out%d", i)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid; else a part of the error
	}{
		{"drop", Config{Action: Drop, Interface: "dut0"}, ""},
		{"drop generic, forced", Config{Action: Drop, Interface: "dut0", Hook: XDPGeneric, Force: true}, ""},
		{"drop at tc", Config{Action: Drop, Interface: "dut0", Hook: TC}, ""},
		{"drop counting per protocol", Config{Action: Drop, Interface: "dut0", CountProto: true}, ""},
		{"sink", Config{Action: Drop, Interface: "gen1", Hook: TC, CountUDPDstPort: 9}, ""},
		{"pass", Config{Action: Pass, Interface: "dut0"}, ""},
		{"tx", Config{Action: TX, Interface: "dut0", Hook: XDPGeneric}, ""},
		{"redirect", Config{Action: Redirect, Interface: "dut0", Outs: []string{"dut1"}}, ""},
		{"redirect to the most", Config{Action: Redirect, Interface: "dut0", Outs: many[:MaxOuts]}, ""},
		{"redirect-cpu", Config{Action: RedirectCPU, Interface: "dut0", CPUs: []int{1}, QSize: 64, RemotePass: true}, ""},
		{"redirect-cpu without CPUs", Config{Action: RedirectCPU, Interface: "dut0"}, "needs the CPUs"},
		{"redirect-cpu at tc", Config{Action: RedirectCPU, Interface: "dut0", Hook: TC, CPUs: []int{1}}, "does not run at tc"},
		{"drop with CPUs", Config{Action: Drop, Interface: "dut0", CPUs: []int{1}}, "are redirect-cpu's, not drop's"},
		{"drop parsing", Config{Action: Drop, Interface: "dut0", PacketOp: "parse-ip", LoadBytes: true}, ""},
		{"tx with load-bytes", Config{Action: TX, Interface: "dut0", LoadBytes: true}, ""},
		{"unknown packet operation", Config{Action: Drop, Interface: "dut0", PacketOp: "parse"}, `unknown packet operation "parse"`},
		{"packet operation at tc", Config{Action: Drop, Interface: "dut0", Hook: TC, PacketOp: "read-data"}, "tc drop takes none"},
		{"packet operation counting protocols", Config{Action: Drop, Interface: "dut0", CountProto: true, PacketOp: "read-data"}, "parses the headers itself"},
		{"load-bytes reading nothing", Config{Action: Drop, Interface: "dut0", LoadBytes: true}, "no-touch reads nothing"},

		{"no action", Config{Interface: "dut0"}, `unknown action ""`},
		{"unknown action", Config{Action: "bounce", Interface: "dut0"}, `unknown action "bounce"`},
		{"no interface", Config{Action: Drop}, "no interface"},
		{"unknown hook", Config{Action: Drop, Interface: "dut0", Hook: 7}, "unknown hook Point(7)"},
		{"pass at tc", Config{Action: Pass, Interface: "dut0", Hook: TC}, "pass does not run at tc"},
		{"count protocols at tc", Config{Action: Drop, Interface: "dut0", Hook: TC, CountProto: true}, "for drop at XDP, not drop at tc"},
		{"count protocols in tx", Config{Action: TX, Interface: "dut0", CountProto: true}, "for drop at XDP"},
		{"redirect without outs", Config{Action: Redirect, Interface: "dut0"}, "redirect needs an egress interface"},
		{"drop with outs", Config{Action: Drop, Interface: "dut0", Outs: []string{"dut1"}}, "egress interfaces are for redirect"},
		{"redirect to itself", Config{Action: Redirect, Interface: "dut0", Outs: []string{"dut1", "dut0"}}, "dut0 is the interface the path runs on"},
		{"out twice", Config{Action: Redirect, Interface: "dut0", Outs: []string{"dut1", "dut2", "dut1"}}, "dut1 listed twice"},
		{"out without a name", Config{Action: Redirect, Interface: "dut0", Outs: []string{""}}, "without a name"},
		{"too many outs", Config{Action: Redirect, Interface: "dut0", Outs: many}, fmt.Sprintf("at most %d egress interfaces, not %d", MaxOuts, MaxOuts+1)},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "--"):
			t.Errorf("%s: %q gives CLI flag advice, which is the CLI's to give", tc.name, err)
		}
	}
}

// TestProgram: each path runs the program of bpf/kern.c that kern and
// compare name in their output.
func TestProgram(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Action: Drop, Interface: "dut0"}, "drop"},
		{Config{Action: Drop, Interface: "dut0", Hook: XDPGeneric}, "drop"},
		{Config{Action: Drop, Interface: "dut0", CountProto: true}, "drop-count-proto"},
		{Config{Action: Drop, Interface: "dut0", Hook: TC}, "tc-drop"},
		{Config{Action: Drop, Interface: "dut0", Hook: TC, CountUDPDstPort: 9}, "tc-drop"},
		{Config{Action: Pass, Interface: "dut0"}, "pass"},
		{Config{Action: TX, Interface: "dut0"}, "tx"},
		{Config{Action: Redirect, Interface: "dut0", Outs: []string{"dut1"}}, "redirect"},
		{Config{Action: Redirect, Interface: "dut0", Outs: []string{"dut1", "dut2"}}, "redirect-multi"},
		{Config{Action: Redirect, Interface: "dut0"}, ""}, // invalid
		{Config{Action: Pass, Interface: "dut0", Hook: TC}, ""},
	} {
		if got := tc.cfg.Program(); got != tc.want {
			t.Errorf("%+v: Program() = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

func TestHookNames(t *testing.T) {
	for _, tc := range []struct {
		h             Hook
		name, xdpMode string
	}{
		{XDP, "xdp", "native"},
		{XDPGeneric, "xdp-generic", "generic"},
		{TC, "tc", ""},
		{Hook(9), "Point(9)", ""},
	} {
		if tc.h.String() != tc.name || tc.h.XDPMode() != tc.xdpMode {
			t.Errorf("Hook %d: %q, %q; want %q, %q", int(tc.h), tc.h.String(), tc.h.XDPMode(), tc.name, tc.xdpMode)
		}
	}
}

func TestParseXDPMode(t *testing.T) {
	for in, want := range map[string]Hook{"native": XDP, "drv": XDP, "driver": XDP, "generic": XDPGeneric, "skb": XDPGeneric} {
		if got, err := ParseXDPMode(in); err != nil || got != want {
			t.Errorf("ParseXDPMode(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"offload", "tc", ""} {
		if _, err := ParseXDPMode(in); err == nil || !strings.Contains(err.Error(), "want native or generic") {
			t.Errorf("ParseXDPMode(%q): error %v", in, err)
		}
	}
}

func TestStats(t *testing.T) {
	s := Stats{
		{Queue: 0, CPU: 0, Packets: 10, Bytes: 100},
		{Queue: 0, CPU: 1, Packets: 1, Bytes: 10},
		{Queue: 1, CPU: 1, Packets: 5, Bytes: 50},
	}
	if n, b := s.Total(); n != 16 || b != 160 {
		t.Errorf("Total = %d, %d", n, b)
	}
	if got := fmt.Sprint(s.ByQueue()); got != "[{0 -1 11 110} {1 -1 5 50}]" {
		t.Errorf("ByQueue = %s", got)
	}
	if got := fmt.Sprint(s.ByCPU()); got != "[{-1 0 10 100} {-1 1 6 60}]" {
		t.Errorf("ByCPU = %s", got)
	}
	prev := Stats{{Queue: 0, CPU: 0, Packets: 4, Bytes: 40}, {Queue: 1, CPU: 1, Packets: 5, Bytes: 50}}
	if got := fmt.Sprint(s.Sub(prev)); got != "[{0 0 6 60} {0 1 1 10}]" {
		t.Errorf("Sub = %s", got)
	}
	if got := Stats(nil).ByQueue(); len(got) != 0 {
		t.Errorf("ByQueue of nothing = %v", got)
	}
}

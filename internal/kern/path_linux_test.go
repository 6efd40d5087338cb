package kern

import (
	"errors"
	"slices"
	"testing"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestProgramsExist: every program a valid Config names is one bpf loads.
func TestProgramsExist(t *testing.T) {
	for _, a := range actions {
		for _, h := range []Hook{XDP, XDPGeneric, TC} {
			for _, outs := range [][]string{nil, {"o1"}, {"o1", "o2"}} {
				for _, countProto := range []bool{false, true} {
					cfg := Config{Action: a, Interface: "in", Hook: h, Outs: outs, CountProto: countProto}
					if cfg.Validate() != nil {
						continue
					}
					if p := cfg.Program(); !slices.Contains(bpf.KernPrograms, bpf.KernProgram(p)) {
						t.Errorf("%+v runs %q, which bpf does not know (%v)", cfg, p, bpf.KernPrograms)
					}
				}
			}
		}
	}
}

// TestAttachErrorWithoutAdvice: hook's errors carry the CLI's advice; what
// Open returns does not, and still says what happened.
func TestAttachErrorWithoutAdvice(t *testing.T) {
	fe := &netdev.ForeignXDPError{Interface: "dut0", XDPAttachment: netdev.XDPAttachment{XDPState: netdev.XDPState{ProgID: 7, Mode: "native"}}}
	for _, tc := range []struct {
		in   error
		want string
		is   error
	}{
		{errors.Join(errors.New("wrapped"), fe), fe.Error(), fe},
		{errors.Join(ErrNoNativeXDP, errors.New("-S")), "attach XDP to dut0: the driver has no native XDP support", ErrNoNativeXDP},
		{errors.Join(ErrMTUTooLarge, errors.New("-S")), "attach XDP to dut0 in native mode: the MTU is too large for XDP on this driver", ErrMTUTooLarge},
	} {
		err := attachError(tc.in, "dut0", XDP)
		if err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("attachError(%q) = %q, want %q wrapping %v", tc.in, err, tc.want, tc.is)
		}
	}
}

package kern

import (
	"slices"
	"testing"

	"github.com/xdpeng/xdpeng/bpf"
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

package bpf

import (
	"errors"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestCheckAdjustMetaAgreesWithLoad: where CheckAdjustMeta says the kernel
// grants bpf_xdp_adjust_meta, the selftest program with metadata loads;
// where it refuses, loading says so with ErrNoAdjustMeta.
func TestCheckAdjustMetaAgreesWithLoad(t *testing.T) {
	privtest.Root(t)
	probe := CheckAdjustMeta()
	st, err := NewSelftest(SelftestOptions{Metadata: true})
	if err == nil {
		st.Close()
	}
	switch {
	case probe == nil && err != nil:
		t.Fatalf("CheckAdjustMeta grants bpf_xdp_adjust_meta, but the program does not load: %v", err)
	case probe != nil && !errors.Is(err, ErrNoAdjustMeta):
		t.Fatalf("CheckAdjustMeta refuses (%v), but loading says %v", probe, err)
	case probe != nil:
		// The probe is right to refuse: the program itself, loaded
		// without asking it, fails too.
		spec, err := LoadXskSelftest()
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.Variables[XskSelftestVarMetadata].Set(uint8(1)); err != nil {
			t.Fatal(err)
		}
		var objs XskSelftestObjects
		if err := spec.LoadAndAssign(&objs, nil); err == nil {
			objs.Close()
			t.Fatalf("CheckAdjustMeta refuses (%v), but the program with metadata loads", probe)
		}
	}
	t.Logf("bpf_xdp_adjust_meta: %v", probe)
}

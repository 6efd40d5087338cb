package engine

import (
	"strings"
	"testing"
)

// The check Sim makes after every batch refuses counts that do not close
// and fates that do not match their verdicts.
func TestCheckBatchRefusesLostFrames(t *testing.T) {
	sw, err := Sim{Outputs: 1}.setup(HandlerFunc(func(*Batch) {}), simRings{segs: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := sw.w
	frames := []SimFrame{{Verdict: VerdictTransmit, Sent: true}, {Verdict: VerdictDrop}, {Verdict: VerdictForward, Dest: ToOutput(0), Sent: true}}
	w.c = local{rxPackets: 3, txPackets: 2, dropped: 1}
	w.out[0].c.txPackets, w.out[1].c.txPackets = 1, 1
	if err := w.checkBatch(local{}, frames, 1); err != nil {
		t.Fatalf("a batch whose counts close: %v", err)
	}
	cases := []struct {
		name   string
		c      local
		frames []SimFrame
	}{
		{"a frame neither sent nor counted", local{rxPackets: 3, txPackets: 2}, frames},
		{"a dropped frame sent", local{rxPackets: 3, txPackets: 2, dropped: 1},
			[]SimFrame{{Verdict: VerdictTransmit, Sent: true}, {Verdict: VerdictDrop, Sent: true}, {Verdict: VerdictForward, Dest: ToOutput(0), Sent: true}}},
		{"a frame out of the wrong port", local{rxPackets: 3, txPackets: 2, dropped: 1},
			[]SimFrame{{Verdict: VerdictTransmit, Dest: ToOutput(0), Sent: true}, {Verdict: VerdictDrop}, {Verdict: VerdictForward, Dest: ToOutput(0), Sent: true}}},
	}
	for _, tc := range cases {
		w.c = tc.c
		if err := w.checkBatch(local{}, tc.frames, 1); err == nil || !strings.Contains(err.Error(), "engine bug") {
			t.Errorf("%s: %v, want an engine bug reported", tc.name, err)
		}
	}
}

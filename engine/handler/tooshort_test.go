package handler_test

import (
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

// TestTooShortDropped: L2Fwd and Fwd send what has an Ethernet header and
// drop the rest for ReasonTooShort, counted in DroppedFor.
func TestTooShortDropped(t *testing.T) {
	frames := [][]byte{udpFrame(9), make([]byte, 13), udpFrame(10)}
	for name, h := range map[string]engine.Handler{
		"L2Fwd":             handler.L2Fwd{},
		"Fwd":               &handler.Fwd{Dest: engine.ToOutput(0)},
		"Fwd with a DstMAC": &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: []byte{2, 0, 0, 0, 0, 9}},
	} {
		res, err := engine.Sim{Outputs: 1}.Run(h, frames)
		if err != nil {
			t.Fatal(err)
		}
		f := res.Frames[1]
		if f.Verdict != engine.VerdictDrop || f.Reason != handler.ReasonTooShort || res.Frames[0].Reason != 0 {
			t.Errorf("%s: the 13-byte frame %+v, the first %+v: want the first sent, the second dropped for ReasonTooShort", name, f, res.Frames[0])
		}
		if st := res.Stats; st.Dropped != 1 || st.DroppedFor[handler.ReasonTooShort] != 1 || st.TxPackets != 2 {
			t.Errorf("%s: stats %+v: want 2 sent, 1 dropped for ReasonTooShort", name, st)
		}
	}
}

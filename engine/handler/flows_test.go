package handler_test

import (
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

// TestFlowCountUnhashed checks that frames without an RX hash (Simulate
// has none) are each counted, as unhashed.
func TestFlowCountUnhashed(t *testing.T) {
	var g handler.FlowGroup
	frames := make([][]byte, 100)
	for i := range frames {
		frames[i] = make([]byte, 60)
	}
	if _, err := engine.Simulate(g.Handler(0), frames); err != nil {
		t.Fatal(err)
	}
	s := g.Stats()
	if s.Frames != 100 || s.Unhashed != 100 || len(s.ByHash) != 0 || s.Overflow != 0 {
		t.Errorf("stats %+v: want 100 frames, all unhashed", s)
	}
}

package pcap

import (
	"bytes"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

// The tap captures each frame as the worker received it, before the inner
// handler rewrites it, and leaves the inner handler's verdicts alone.
func TestTapBeforeTheHandler(t *testing.T) {
	var frames [][]byte
	for i := range 5 {
		frames = append(frames, frame(0, i))
	}
	var buf syncBuffer
	c, err := Start(&buf, Config{Snaplen: 64})
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Simulate(Tap(c.Ring(0), handler.L2Fwd{}), frames)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{Written: 5}) {
		t.Errorf("stats %+v, want 5 written", st)
	}
	sent := res.Sent()
	if len(sent) != 5 {
		t.Fatalf("L2Fwd behind the tap sent %d frames, want 5", len(sent))
	}
	recs := readAll(t, buf.reader(), 64)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	for i, r := range recs {
		want := frames[i]
		if !bytes.Equal(r.data, want[:min(64, len(want))]) || r.origLen != len(want) {
			t.Errorf("record %d: %x (length %d), want the frame as received %x (%d)", i, r.data, r.origLen, want, len(want))
		}
		if bytes.Equal(sent[i][:12], want[:12]) {
			t.Errorf("frame %d went out with its MACs unswapped", i)
		}
	}
}

// With no inner handler the tap drops every frame after copying it, and
// says it only receives; it never claims DropAll, which would keep the
// worker from calling it.
func TestTapDropsAndHints(t *testing.T) {
	c, err := Start(&syncBuffer{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name  string
		inner engine.Handler
		want  engine.Hints
	}{
		{"nil", nil, engine.Hints{ReceiveOnly: true}},
		{"Drop", handler.RxDrop{}, engine.Hints{ReceiveOnly: true}},
		{"L2Fwd", handler.L2Fwd{}, engine.Hints{}},
	} {
		h := Tap(c.Ring(0), tc.inner).(engine.Hinter)
		if got := h.Hints(); got != tc.want {
			t.Errorf("%s: hints %+v, want %+v", tc.name, got, tc.want)
		}
	}
	res, err := engine.Simulate(Tap(c.Ring(0), nil), [][]byte{frame(0, 0), frame(0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Dropped != 2 || len(res.Sent()) != 0 {
		t.Errorf("stats %+v, sent %d: want both frames dropped", res.Stats, len(res.Sent()))
	}
}

type idleCounter struct {
	handler.L2Fwd
	idles int
}

func (h *idleCounter) Idle() { h.idles++ }

func TestTapPassesIdle(t *testing.T) {
	c, err := Start(&syncBuffer{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inner := &idleCounter{}
	if _, err := engine.Simulate(Tap(c.Ring(0), inner), [][]byte{frame(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if inner.idles == 0 {
		t.Error("the inner handler's Idle was not called through the tap")
	}
}

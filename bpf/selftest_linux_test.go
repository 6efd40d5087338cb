package bpf

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// xdpMd is struct xdp_md, the context of an XDP program.
type xdpMd struct {
	Data, DataEnd, DataMeta      uint32
	IngressIfindex, RxQueueIndex uint32
	EgressIfindex                uint32
}

// XDP actions (enum xdp_action).
const (
	xdpActDrop = 1
	xdpActPass = 2
)

// selftestFrame is a 128-byte frame of EtherType et, its selector byte sel.
func selftestFrame(et uint16, sel byte) []byte {
	b := make([]byte, 128)
	binary.BigEndian.PutUint16(b[12:], et)
	b[14] = sel
	for i := 16; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

// TestSelftestProgram runs xsk_selftest.c on frames (BPF_PROG_TEST_RUN, on
// queue 0, no socket in its map): only EtherType 0x9000 is counted, the
// rest passes untouched; drop_half drops every second test frame; the
// adjust_tail option resizes each. The count of frames on other queues is
// not exercised here: a test run on another queue needs a device with it.
func TestSelftestProgram(t *testing.T) {
	privtest.Root(t)
	run := func(t *testing.T, p *Selftest, frame []byte, queue uint32) (uint32, []byte) {
		t.Helper()
		ctx := xdpMd{DataEnd: uint32(len(frame)), RxQueueIndex: queue}
		out := make([]byte, len(frame)+64)
		ret, err := p.Program.Run(&ebpf.RunOptions{Data: frame, DataOut: out, Context: ctx})
		if err != nil {
			t.Fatal(err)
		}
		return ret, out
	}
	counts := func(t *testing.T, p *Selftest) SelftestCounts {
		t.Helper()
		c, err := p.Counts()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("steering", func(t *testing.T) {
		p, err := NewSelftest(SelftestOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for _, f := range []struct {
			frame []byte
			queue uint32
		}{{selftestFrame(0x0800, 0), 0}, {selftestFrame(0x86dd, 0), 0}, {selftestFrame(0x9000, 0), 0}, {selftestFrame(0x9000, 1), 0}} {
			if ret, _ := run(t, p, f.frame, f.queue); ret != xdpActPass {
				t.Errorf("EtherType %#x on queue %d: action %d, want XDP_PASS (no socket)", binary.BigEndian.Uint16(f.frame[12:]), f.queue, ret)
			}
		}
		if c, want := counts(t, p), (SelftestCounts{NoSocket: 2, Seen: 2}); c != want {
			t.Errorf("counts %+v, want %+v", c, want)
		}
	})
	t.Run("drop half", func(t *testing.T) {
		p, err := NewSelftest(SelftestOptions{DropHalf: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := 0; i < 6; i++ {
			want := uint32(xdpActPass)
			if i%2 == 1 {
				want = xdpActDrop
			}
			if ret, _ := run(t, p, selftestFrame(0x9000, 0), 0); ret != want {
				t.Errorf("frame %d: action %d, want %d", i, ret, want)
			}
		}
		if c, want := counts(t, p), (SelftestCounts{Dropped: 3, NoSocket: 3, Seen: 6}); c != want {
			t.Errorf("counts %+v, want %+v", c, want)
		}
	})
	t.Run("adjust tail", func(t *testing.T) {
		for _, delta := range []int32{-4, 4} {
			p, err := NewSelftest(SelftestOptions{AdjustTail: delta})
			if err != nil {
				t.Fatal(err)
			}
			in := selftestFrame(0x9000, 0)
			ctx := xdpMd{DataEnd: uint32(len(in))}
			out := make([]byte, len(in)+64)
			opts := &ebpf.RunOptions{Data: in, DataOut: out, Context: ctx}
			if _, err := p.Program.Run(opts); err != nil {
				t.Fatal(err)
			}
			got := opts.DataOut
			n := min(len(in), len(got))
			if len(got) != len(in)+int(delta) || !bytes.Equal(got[:n], in[:n]) {
				t.Errorf("by %d: %d bytes out of %d, want %d with the frame's bytes kept", delta, len(got), len(in), len(in)+int(delta))
			}
			if c := counts(t, p); c.AdjustFailed != 0 {
				t.Errorf("by %d: the helper failed (%+v)", delta, c)
			}
			p.Close()
		}
	})
}

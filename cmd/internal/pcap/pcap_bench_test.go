package pcap

import (
	"bufio"
	"io"
	"testing"
)

// BenchmarkPut is the data path's cost of a capture: one 64-byte frame put
// into a ring.
//   - copy: every Put takes the frame (the test frees the slots itself);
//   - full: the writer is stuck, so every Put finds the ring full and skips;
//   - writer: with the writer draining to io.Discard; skipped/op says how
//     much of a producer this fast the writer cannot keep up with.
func BenchmarkPut(b *testing.B) {
	f := frame(0, 0)
	b.Run("copy", func(b *testing.B) {
		const slots = 1024
		r := newRing(slots, 128)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if !r.Put(base+int64(i), f) {
				b.Fatal("ring full")
			}
			if i%slots == slots-1 {
				r.tail.Store(r.head.Load()) // what the writer does, at once
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		gw := newGateWriter(1)
		c, err := Start(gw, Config{Snaplen: 128, Slots: 64})
		if err != nil {
			b.Fatal(err)
		}
		r := c.Ring(0)
		r.Put(base, f)
		<-gw.entered
		for r.Put(base, f) {
		}
		b.ReportAllocs()
		for b.Loop() {
			r.Put(base, f)
		}
		b.StopTimer()
		close(gw.gate)
		c.Close()
	})
	b.Run("writer", func(b *testing.B) {
		c, err := Start(io.Discard, Config{Snaplen: 128})
		if err != nil {
			b.Fatal(err)
		}
		r := c.Ring(0)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r.Put(base+int64(i), f)
		}
		b.StopTimer()
		st, err := c.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Skipped)/float64(b.N), "skipped/op")
	})
}

// BenchmarkWriter is the writer goroutine's cost per frame: one 64-byte
// frame written through pcapgo into a buffer in front of io.Discard, in
// each format.
func BenchmarkWriter(b *testing.B) {
	f := frame(0, 0)
	for _, format := range []Format{Pcap, PcapNG} {
		b.Run(format.String(), func(b *testing.B) {
			bw := bufio.NewWriterSize(io.Discard, 1<<16)
			var w *Writer
			var err error
			if format == PcapNG {
				w, err = NewNgWriter(bw, 128, LinkTypeEthernet, []Interface{{Name: "dut0", Description: "dut0 rx queue 0"}})
			} else {
				w, err = NewWriter(bw, 128, LinkTypeEthernet)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := w.WritePacket(0, base+int64(i), f, len(f)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

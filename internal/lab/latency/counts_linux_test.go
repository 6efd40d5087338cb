package latency

import (
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/bpf"
)

func TestMergeCPUs(t *testing.T) {
	per := make([]bpf.LatencyCpuStats, 3)
	// CPU 0 measured nothing: its zero min must not count.
	per[0].Other = 5
	per[1] = bpf.LatencyCpuStats{Received: 3, Duplicated: 1, Reordered: 1, Count: 3, SumNs: 6000, MinNs: 1000, MaxNs: 3000}
	per[1].Hist[BucketOf(1000)], per[1].Hist[BucketOf(2000)], per[1].Hist[BucketOf(3000)] = 1, 1, 1
	per[2] = bpf.LatencyCpuStats{Received: 1, Count: 1, SumNs: 500, MinNs: 500, MaxNs: 500, Beyond: 2}
	per[2].Hist[BucketOf(500)] = 1
	c := MergeCPUs(per)
	h := histogramOf([]uint64{1000, 2000, 3000, 500})
	if c.Received != 4 || c.Duplicated != 1 || c.Reordered != 1 || c.Other != 5 || c.Beyond != 2 || c.Unique() != 3 {
		t.Errorf("counts %+v", c)
	}
	if c.Histogram != *h {
		t.Errorf("merged histogram %+v, want %+v", c.Histogram.Summary(), h.Summary())
	}
}

func TestCountsResult(t *testing.T) {
	good := Counts{Received: 10, Duplicated: 2, Reordered: 1, Other: 3}
	good.Histogram = *histogramOf([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	r, err := good.Result(12)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 12 || r.Received != 10 || r.Lost != 4 || r.Duplicated != 2 || r.Reordered != 1 || r.Other != 3 || r.Latency.Max != 10 {
		t.Errorf("result %+v", r)
	}
	for _, tc := range []struct {
		modify func(*Counts)
		sent   uint64
		msg    string
	}{
		{func(c *Counts) { c.Beyond = 1 }, 12, "beyond the receiver's capacity"},
		{func(c *Counts) { c.OrderUnknown = 1 }, 12, "not decided"},
		{func(c *Counts) { c.Ahead = 1 }, 12, "later than their arrival"},
		{func(*Counts) {}, 7, "8 distinct frames of the run arrived but 7 were sent"},
	} {
		c := good
		tc.modify(&c)
		if _, err := c.Result(tc.sent); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Result = %v, want an error saying %q", err, tc.msg)
		}
	}
}

func TestParseHook(t *testing.T) {
	for _, h := range []Hook{XDP, XDPGeneric, TC} {
		if got, err := ParseHook(h.String()); err != nil || got != h {
			t.Errorf("ParseHook(%q) = %v, %v", h, got, err)
		}
	}
	if _, err := ParseHook("skb"); err == nil {
		t.Error("ParseHook(skb): no error")
	}
}

func TestNewRunIDNonZero(t *testing.T) {
	seen := map[uint32]bool{}
	for range 100 {
		id := NewRunID()
		if id == 0 {
			t.Fatal("run id 0")
		}
		seen[id] = true
	}
	if len(seen) < 99 {
		t.Errorf("%d distinct ids of 100", len(seen))
	}
}

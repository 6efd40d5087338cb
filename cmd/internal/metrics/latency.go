package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdpeng/xdpeng/internal/lab/latency"
)

// latencySeconds is the delay histogram of a latency measurement.
var latencySeconds = prometheus.NewDesc("xdpeng_latency_seconds",
	"Delay of the generator's stamped frames from the generator's clock to the receiver's, as measured by the latency receiver.",
	[]string{"interface", "mode"}, nil)

// Latency exports a delay histogram (internal/lab/latency), read at every
// scrape, as a Prometheus histogram in seconds.
//
// Its bucket bounds are the powers of two of the latency histogram, 2^5 ns
// to 2^27 ns, each as its inclusive upper bound, (2^e - 1) ns: every one
// of them ends a bucket of the latency histogram, so the cumulative counts
// are exact, not interpolated. The finer percentiles stay in the command's
// own output; 23 buckets keep the series few.
type Latency struct {
	Mode, Interface string
	// Read returns the histogram so far.
	Read func() (*latency.Histogram, error)
}

// Describe sends the histogram's description.
func (l *Latency) Describe(ch chan<- *prometheus.Desc) { ch <- latencySeconds }

// Collect reads the histogram.
func (l *Latency) Collect(ch chan<- prometheus.Metric) {
	h, err := l.Read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(latencySeconds, err)
		return
	}
	ch <- prometheus.MustNewConstHistogram(latencySeconds, h.Count, float64(h.Sum)/1e9, cumulative(h), l.Interface, l.Mode)
}

// cumulative returns the counts of delays up to (2^e - 1) ns for e from
// latency.MinExp to latency.MaxExp, keyed by that bound in seconds.
func cumulative(h *latency.Histogram) map[float64]uint64 {
	out := make(map[float64]uint64, latency.MaxExp-latency.MinExp+1)
	var cum uint64
	i := 0
	for e := latency.MinExp; e <= latency.MaxExp; e++ {
		bound := uint64(1)<<e - 1
		for ; i < latency.Buckets; i++ {
			if _, hi := latency.BucketBounds(i); hi > bound {
				break
			}
			cum += h.Counts[i]
		}
		out[float64(bound)/1e9] = cum
	}
	return out
}

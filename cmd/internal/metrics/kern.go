package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
)

// An in-kernel path's counters: kern.Counters.
var (
	kernLabels    = []string{"interface", "mode", "hook"}
	kernQueue     = append(append([]string{}, kernLabels...), "queue", "cpu")
	kernRxPackets = newCounter("xdpeng_kern_rx_packets_total", "Frames the in-kernel path's program handled, by rx queue and CPU.", kernQueue...)
	kernRxBytes   = newCounter("xdpeng_kern_rx_bytes_total", "Bytes of the frames the in-kernel path's program handled, by rx queue and CPU.", kernQueue...)
	kernOutTx     = newCounter("xdpeng_kern_out_tx_packets_total", "Frames each egress device of a redirect sent since the path started (its generic tx_packets counter: whatever else it sent included).",
		append(append([]string{}, kernLabels...), "out")...)
	kernXDPTx       = newCounter("xdpeng_kern_xdp_tx_total", "Frames XDP_TX sent back out since the path started, as the driver counts them (veth).", kernLabels...)
	kernXDPTxErrors = newCounter("xdpeng_kern_xdp_tx_errors_total", "Frames XDP_TX could not send since the path started, as the driver counts them (veth).", kernLabels...)
	kernProto       = newCounter("xdpeng_kern_proto_packets_total", `Frames a drop with --count-proto counted, by IP protocol number ("not-ip" for the rest).`,
		append(append([]string{}, kernLabels...), "proto")...)
)

// Kern exports the counters of an in-kernel path, read at every scrape.
type Kern struct {
	// Mode ("kern-drop", ...), Interface and Hook ("xdp" or "tc") are
	// the labels every metric carries.
	Mode, Interface, Hook string
	// Read reads the counters: kern.Path.Read.
	Read func() (kern.Counters, error)
	// Base is the first read, taken when the path started: the egress and
	// XDP_TX counters, which the devices keep from their creation, count
	// from there. The program's own counters start at zero.
	Base kern.Counters
	// Outs name the egress devices, in the order of Counters.OutTx.
	Outs []string
}

// Describe sends the descriptions of the path's metrics.
func (k *Kern) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, kernRxPackets, kernRxBytes, kernOutTx, kernXDPTx, kernXDPTxErrors, kernProto)
}

// Collect reads the path's counters.
func (k *Kern) Collect(ch chan<- prometheus.Metric) {
	c, err := k.Read()
	if err != nil {
		invalid(ch, kernRxPackets, err)
		return
	}
	l := []string{k.Interface, k.Mode, k.Hook}
	for _, e := range c.Stats {
		q := strconv.Itoa(e.Queue)
		if e.Queue == kern.QueueUnrecorded {
			q = "unrecorded" // the driver recorded no rx queue (tc)
		}
		ql := append(append([]string{}, l...), q, strconv.Itoa(e.CPU))
		kernRxPackets.emit(ch, e.Packets, ql...)
		kernRxBytes.emit(ch, e.Bytes, ql...)
	}
	for i, n := range c.OutTx {
		if i < len(k.Outs) && i < len(k.Base.OutTx) {
			kernOutTx.emit(ch, counter.Sub(n, k.Base.OutTx[i]), append(append([]string{}, l...), k.Outs[i])...)
		}
	}
	if c.XDPTx != nil && k.Base.XDPTx != nil {
		kernXDPTx.emit(ch, counter.Sub(c.XDPTx.Sent, k.Base.XDPTx.Sent), l...)
		kernXDPTxErrors.emit(ch, counter.Sub(c.XDPTx.Failed, k.Base.XDPTx.Failed), l...)
	}
	for _, p := range c.Proto {
		name := strconv.Itoa(p.Proto)
		if p.Proto == kern.ProtoNotIP {
			name = "not-ip"
		}
		kernProto.emit(ch, p.Packets, append(append([]string{}, l...), name)...)
	}
}

// The live-frames generator's counters: gen.Stats.
var (
	genSent       = newCounter("xdpeng_gen_sent_packets_total", "Frames the generator's program redirected to the device, by sending thread's CPU.", "interface", "cpu")
	genSentBytes  = newCounter("xdpeng_gen_sent_bytes_total", "Bytes of the frames the generator redirected to the device.", "interface")
	genXmit       = newCounter("xdpeng_gen_device_xmit_total", "Frames the device's ndo_xdp_xmit accepted during the run (veth: tx_queue_N_xdp_xmit).", "interface")
	genXmitErrors = newCounter("xdpeng_gen_xmit_errors_total", "Frames the device's ndo_xdp_xmit refused during the run (veth: tx_queue_N_xdp_xmit_errors).", "interface")
)

// Gen exports the live-frames generator's counters. gen.Run reads them on
// its own thread (the device counters in its network namespace) every
// interval and at the end; Stats returns the last of those reads, so a
// scrape shows the counts as of the generator's last interval, and after
// the run the counts of its summary.
type Gen struct {
	Interface string
	// Stats returns the generator's last counts.
	Stats func() gen.Stats
}

// Describe sends the descriptions of the generator's metrics.
func (g *Gen) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, genSent, genSentBytes, genXmit, genXmitErrors)
}

// Collect sends the generator's last counts.
func (g *Gen) Collect(ch chan<- prometheus.Metric) {
	s := g.Stats()
	for _, t := range s.PerThread {
		genSent.emit(ch, t.Sent, g.Interface, strconv.Itoa(t.CPU))
	}
	genSentBytes.emit(ch, s.Bytes, g.Interface)
	if s.DeviceCounters {
		genXmit.emit(ch, s.Xmit, g.Interface)
		genXmitErrors.emit(ch, s.Errors, g.Interface)
	}
}

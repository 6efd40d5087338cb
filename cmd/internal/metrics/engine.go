package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdpeng/xdpeng/engine"
)

// The labels of a queue's counters.
var queueLabels = []string{"interface", "mode", "queue", "cpu"}

// The per-queue counters of an AF_XDP engine or generator: engine.QueueStats.
var (
	rxPackets  = newCounter("xdpeng_rx_packets_total", "Frames received on the queue's AF_XDP socket.", queueLabels...)
	rxBytes    = newCounter("xdpeng_rx_bytes_total", "Bytes of the frames received on the queue's AF_XDP socket.", queueLabels...)
	txPackets  = newCounter("xdpeng_tx_packets_total", "Frames transmitted from the queue's sockets and completed by the kernel (fwd: out of its output device).", queueLabels...)
	txBytes    = newCounter("xdpeng_tx_bytes_total", "Bytes of the frames submitted for transmission.", queueLabels...)
	handlerDr  = newCounter("xdpeng_handler_dropped_total", "Frames the handler gave the Drop verdict (every frame in rxdrop); not the kernel's drops.", queueLabels...)
	txRingFull = newCounter("xdpeng_tx_ring_full_total", "Frames to be sent that found the tx ring (or the output's UMEM) full and were dropped.", queueLabels...)
	rxWakeups  = newCounter("xdpeng_rx_wakeups_total", "System calls that woke the kernel to fill the rx ring (need_wakeup, busy poll).", queueLabels...)
	txWakeups  = newCounter("xdpeng_tx_wakeups_total", "System calls that kicked the kernel to transmit.", queueLabels...)
	polls      = newCounter("xdpeng_polls_total", "poll() calls of the worker.", queueLabels...)
	batches    = newCounter("xdpeng_batches_total", "Batches the worker took from its rings.", queueLabels...)
	naps       = newCounter("xdpeng_naps_total", "Short sleeps of a worker that shares its CPU with other busy threads.", queueLabels...)

	// The six XDP_STATISTICS counters of the queue's socket.
	xskRxDropped   = newCounter("xdpeng_xsk_rx_dropped_total", "XDP_STATISTICS rx_dropped: frames the socket dropped for any reason but a full rx ring.", queueLabels...)
	xskRxInvalid   = newCounter("xdpeng_xsk_rx_invalid_descs_total", "XDP_STATISTICS rx_invalid_descs: fill-ring descriptors the kernel refused.", queueLabels...)
	xskTxInvalid   = newCounter("xdpeng_xsk_tx_invalid_descs_total", "XDP_STATISTICS tx_invalid_descs: tx descriptors the kernel refused.", queueLabels...)
	xskRxRingFull  = newCounter("xdpeng_xsk_rx_ring_full_total", "XDP_STATISTICS rx_ring_full: frames dropped because the rx ring was full.", queueLabels...)
	xskFillEmpty   = newCounter("xdpeng_xsk_rx_fill_ring_empty_descs_total", "XDP_STATISTICS rx_fill_ring_empty_descs: times the kernel found the fill ring empty.", queueLabels...)
	xskTxRingEmpty = newCounter("xdpeng_xsk_tx_ring_empty_descs_total", "XDP_STATISTICS tx_ring_empty_descs: times the kernel found the tx ring empty when asked to transmit.", queueLabels...)

	// fwd's output sockets, summed over queues.
	outLabels         = []string{"interface", "mode"}
	xskOutTxInvalid   = newCounter("xdpeng_xsk_output_tx_invalid_descs_total", "XDP_STATISTICS tx_invalid_descs of the output device's sockets, summed over queues.", outLabels...)
	xskOutTxRingEmpty = newCounter("xdpeng_xsk_output_tx_ring_empty_descs_total", "XDP_STATISTICS tx_ring_empty_descs of the output device's sockets, summed over queues.", outLabels...)

	engineFamilies = []family{rxPackets, rxBytes, txPackets, txBytes, handlerDr, txRingFull, rxWakeups, txWakeups, polls,
		batches, naps, xskRxDropped, xskRxInvalid, xskTxInvalid, xskRxRingFull, xskFillEmpty, xskTxRingEmpty}
)

// Engine exports the per-queue counters of an AF_XDP engine (rxdrop, count,
// l2fwd, fwd) or generator (txonly), read with Stats at every scrape.
type Engine struct {
	// Mode is the command ("rxdrop", "txonly", ...) and Interface the
	// device the queues belong to: the mode and interface labels.
	Mode, Interface string
	// Stats reads the counters: engine.Engine.Stats or
	// engine.Generator.Stats.
	Stats func() (engine.Snapshot, error)
	// Output and OutputStats, for fwd: the device frames are sent out of,
	// and the XDP_STATISTICS of its sockets summed over the queues
	// (engine.Engine.OutputStats).
	Output      string
	OutputStats func() (engine.SocketStats, error)
}

// Describe sends the descriptions of every metric e exports.
func (e *Engine) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, engineFamilies...)
	if e.OutputStats != nil {
		describe(ch, xskOutTxInvalid, xskOutTxRingEmpty)
	}
}

// Collect reads the counters and sends one metric per queue and counter.
func (e *Engine) Collect(ch chan<- prometheus.Metric) {
	snap, err := e.Stats()
	if err != nil {
		invalid(ch, rxPackets, err)
		return
	}
	for _, q := range snap.Queues {
		l := []string{e.Interface, e.Mode, strconv.Itoa(q.Queue), strconv.Itoa(q.CPU)}
		for _, m := range []struct {
			f family
			v uint64
		}{
			{rxPackets, q.RxPackets}, {rxBytes, q.RxBytes}, {txPackets, q.TxPackets}, {txBytes, q.TxBytes},
			{handlerDr, q.Dropped}, {txRingFull, q.TxRingFull}, {rxWakeups, q.RxWakeups}, {txWakeups, q.TxWakeups},
			{polls, q.Polls}, {batches, q.Batches}, {naps, q.Naps},
			{xskRxDropped, q.XDP.RxDropped}, {xskRxInvalid, q.XDP.RxInvalidDescs}, {xskTxInvalid, q.XDP.TxInvalidDescs},
			{xskRxRingFull, q.XDP.RxRingFull}, {xskFillEmpty, q.XDP.RxFillRingEmptyDescs}, {xskTxRingEmpty, q.XDP.TxRingEmptyDescs},
		} {
			m.f.emit(ch, m.v, l...)
		}
	}
	if e.OutputStats == nil {
		return
	}
	out, err := e.OutputStats()
	if err != nil {
		invalid(ch, xskOutTxInvalid, err)
		return
	}
	xskOutTxInvalid.emit(ch, out.TxInvalidDescs, e.Output, e.Mode)
	xskOutTxRingEmpty.emit(ch, out.TxRingEmptyDescs, e.Output, e.Mode)
}

// count's counters. Ports are left out: a port scan would make a series
// of each of 131072 UDP and TCP ports; the JSON summary has them.
var (
	countLabels    = []string{"interface", "mode"}
	countFrames    = newCounter("xdpeng_count_frames_total", `Frames count parsed, by IP protocol ("udp", "tcp", "ip/N") or "other" (not IP).`, "interface", "mode", "protocol")
	countMalformed = newCounter("xdpeng_count_malformed_frames_total", "Frames that ended inside a header they announced.", countLabels...)
)

// Count exports count's counters by protocol, read with Stats at every
// scrape.
type Count struct {
	Interface string
	// Stats reads the counters: the frames by protocol name ("udp",
	// "ip/N", "other" for frames that are not IP) and the malformed ones,
	// as count prints them.
	Stats func() (byProtocol map[string]uint64, malformed uint64)
}

// Describe sends the descriptions of count's metrics.
func (c *Count) Describe(ch chan<- *prometheus.Desc) { describe(ch, countFrames, countMalformed) }

// Collect reads the counts.
func (c *Count) Collect(ch chan<- prometheus.Metric) {
	byProtocol, malformed := c.Stats()
	for p, n := range byProtocol {
		countFrames.emit(ch, n, c.Interface, "count", p)
	}
	countMalformed.emit(ch, malformed, c.Interface, "count")
}

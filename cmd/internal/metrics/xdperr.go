package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
)

// Why XDP frames of a device were lost: the xdp tracepoints, counted by
// internal/lab/xdperr.
var (
	xdpExceptions     = newCounter("xdpeng_xdp_exceptions_total", "xdp_exception: frames whose XDP program returned XDP_ABORTED or an unknown action, or whose XDP_TX the driver could not carry out, by action.", "interface", "action")
	xdpRedirectErrors = newCounter("xdpeng_xdp_redirect_errors_total", `xdp_redirect_err: frames whose redirect failed, by errno and target device ("" when the target is not a device).`, "interface", "errno", "to")
	xdpDevmapSent     = newCounter("xdpeng_xdp_devmap_xmit_frames_total", "xdp_devmap_xmit: frames redirected through a devmap that the target device's driver took, by target device.", "interface", "to")
	xdpDevmapDrops    = newCounter("xdpeng_xdp_devmap_xmit_drops_total", "xdp_devmap_xmit: frames redirected through a devmap that the target device's driver did not send, by target and errno.", "interface", "to", "errno")
	xdpBulkTxDrops    = newCounter("xdpeng_xdp_bulk_tx_drops_total", "xdp_bulk_tx: XDP_TX frames the driver's flush did not send, by errno.", "interface", "errno")
	xdpUnrecorded     = newCounter("xdpeng_xdp_errors_unrecorded_total", "Frames lost in xdp tracepoint events that found their table full, on any device of the host.")
)

// XDPErrors exports why frames of one device were lost, from the xdp
// tracepoints, read at every scrape.
type XDPErrors struct {
	// Interface is the device's name, Netns the cookie of its network
	// namespace and Ifindex its index there (xdperr.Snapshot.ForDevice).
	Interface string
	Netns     uint64
	Ifindex   int
	// Read reads the counts since the watcher started: xdperr.Watcher.Read.
	Read func() (xdperr.Snapshot, error)
	// Name names a target device by its index, in the device's network
	// namespace; nil, or "" for an index it does not know, gives the index.
	Name func(ifindex int) string
}

// Describe sends the descriptions of the tracepoints' metrics.
func (x *XDPErrors) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, xdpExceptions, xdpRedirectErrors, xdpDevmapSent, xdpDevmapDrops, xdpBulkTxDrops, xdpUnrecorded)
}

// Collect reads the tracepoints' counts. Entries that differ only in what
// no label shows (the program, the map) are added up.
func (x *XDPErrors) Collect(ch chan<- prometheus.Metric) {
	all, err := x.Read()
	if err != nil {
		invalid(ch, xdpExceptions, err)
		return
	}
	s := all.ForDevice(x.Netns, x.Ifindex)
	sums := map[family]map[[3]string]uint64{}
	add := func(f family, n uint64, labels ...string) {
		var k [3]string
		copy(k[:], labels)
		if sums[f] == nil {
			sums[f] = map[[3]string]uint64{}
		}
		sums[f][k] += n
	}
	for _, e := range s.Exceptions {
		add(xdpExceptions, e.Frames, e.Action.String())
	}
	for _, e := range s.RedirectErrors {
		add(xdpRedirectErrors, e.Frames, xdperr.ErrnoName(e.Errno), x.name(e.ToIfindex))
	}
	for _, d := range s.DevmapXmit {
		add(xdpDevmapSent, d.Sent, x.name(d.ToIfindex))
		if d.Drops > 0 {
			add(xdpDevmapDrops, d.Drops, x.name(d.ToIfindex), xdperr.ErrnoName(d.Errno))
		}
	}
	for _, b := range s.BulkTx {
		if b.Drops > 0 {
			add(xdpBulkTxDrops, b.Drops, xdperr.ErrnoName(b.Errno))
		}
	}
	for f, m := range sums {
		for k, v := range m {
			// The interface, then the rest of the family's labels.
			f.emit(ch, v, append([]string{x.Interface}, k[:f.labels-1]...)...)
		}
	}
	xdpUnrecorded.emit(ch, s.Unrecorded)
}

// name is the label of a target device.
func (x *XDPErrors) name(ifindex int) string {
	if ifindex == 0 {
		return ""
	}
	if x.Name != nil {
		if n := x.Name(ifindex); n != "" {
			return n
		}
	}
	return strconv.Itoa(ifindex)
}

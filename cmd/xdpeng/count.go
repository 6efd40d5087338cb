package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

func init() { addCommand(newCountCmd()) }

func newCountCmd() *cobra.Command {
	var f xskFlags
	var top int
	var by string
	c := &cobra.Command{
		Use:   "count -i DEV [flags]",
		Short: "Receive on AF_XDP sockets, count frames by protocol and port, drop them",
		Long: `count works like rxdrop, but each worker parses every frame (Ethernet, VLAN,
IPv4/IPv6, UDP/TCP/ICMP) and counts it by IP protocol and by UDP or TCP
destination port before dropping it: the kernel's xdp1 sample, in userspace.
Frames that are not IP are counted as "other", by EtherType.

Every interval it prints the queue table of rxdrop and then the busiest
protocols and ports, as xdp1 does ("proto 17 (udp)  19596362 pkt/s"), the
busiest first and equal rates in the order of their keys; the final
summary (and its --json object, in by_protocol and by_port) has the exact
totals.

With --by rxhash it counts flows instead, by the RX hash the driver gives
each frame (the XDP metadata kfuncs, native XDP only): no header is
parsed, and frames the driver has no hash for (on veth: frames redirected
into it, like gen's) are counted as "no rxhash".`,
		Example: `  # all queues of dut0, until Ctrl-C
  xdpeng count -i dut0
  # the ten busiest protocols and ports every 2 s, for 10 s
  xdpeng count -i dut0 --top 10 -n 2 -d 10
  # on a real NIC: only UDP to port 9 leaves the kernel, SSH keeps working
  xdpeng count -i eth1 --udp-port 9 --json
  # flows by the RX hash the driver computed, without parsing a header
  xdpeng count -i eth1 --by rxhash
  # on the test bed
  ip netns exec xdpeng-dut xdpeng count -i dut0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if top < 0 {
				return fmt.Errorf("--top %d: must not be negative (0 shows every entry)", top)
			}
			if by != "port" && by != "rxhash" {
				return fmt.Errorf("--by %q: want port (by protocol and port) or rxhash (by the RX hash the driver gives)", by)
			}
			cfg, err := f.config()
			if err != nil {
				return err
			}
			if by == "rxhash" {
				var g handler.FlowGroup
				cfg.RxMetadata = engine.RxHash
				cfg.Handler = g.Handler
				return runXskWith(cmd, "count", &f, cfg, flowHooks(&g, top))
			}
			var g handler.CountGroup
			cfg.Handler = g.Handler
			hooks := countHooks(&g, top)
			hooks.collectors = []prometheus.Collector{&metrics.Count{Interface: cfg.Interface, Stats: func() (map[string]uint64, uint64) {
				s := g.Stats()
				return protocolCounts(s), s.Malformed
			}}}
			return runXskWith(cmd, "count", &f, cfg, hooks)
		},
	}
	c.Long += "\n\n" + fcsNote
	f.register(c.Flags())
	c.Flags().IntVar(&top, "top", 5, "protocols and ports (or flows) shown per interval (0: all)")
	c.Flags().StringVar(&by, "by", "port", "count by protocol and port, or by rxhash: the RX hash the driver gives each frame (native XDP; see probe's XDP receive metadata)")
	return c
}

// countSummary is count's JSON summary: rxdrop's, plus the counts.
type countSummary struct {
	xskSummary
	ByProtocol  map[string]uint64 `json:"by_protocol"`
	ByPort      map[string]uint64 `json:"by_port"`
	ByEtherType map[string]uint64 `json:"by_ethertype,omitempty"`
	Malformed   uint64            `json:"malformed"`
}

// countHooks print the busiest protocols and ports of each interval and the
// exact counts at the end.
func countHooks(g *handler.CountGroup, top int) xskHooks {
	var prev handler.CountStats
	// rates reads the counters and returns the busiest entries of the
	// interval, in frames per second. The rates are rounded before they
	// are ranked, so that entries that print the same rate keep the order
	// of their keys from one interval to the next.
	rates := func(dt float64) (protos, ports []countEntry) {
		cur := g.Stats()
		perSecond := func(m map[string]uint64) map[string]uint64 {
			for k, v := range m {
				m[k] = uint64(float64(v)/dt + 0.5)
			}
			return m
		}
		protos = topN(perSecond(delta(protocolCounts(cur), protocolCounts(prev))), top)
		ports = topN(perSecond(delta(portCounts(cur), portCounts(prev))), top)
		prev = cur
		return protos, ports
	}
	return xskHooks{
		intervalText: func(w io.Writer, dt float64) {
			protos, ports := rates(dt)
			for _, e := range protos {
				fmt.Fprintf(w, "%10s %-24s %12d pkt/s\n", "", protocolLabel(e.Key), e.Count)
			}
			for _, e := range ports {
				fmt.Fprintf(w, "%10s %-24s %12d pkt/s\n", "", "port "+e.Key, e.Count)
			}
		},
		intervalJSON: func(obj map[string]any, dt float64) {
			protos, ports := rates(dt)
			obj["by_protocol_pps"] = entryMap(protos)
			obj["by_port_pps"] = entryMap(ports)
		},
		summaryText: func(w io.Writer) {
			s := g.Stats()
			fmt.Fprintf(w, "  counted %d frames (%d malformed)\n", s.Frames, s.Malformed)
			for _, e := range topN(protocolCounts(s), 0) {
				fmt.Fprintf(w, "    %-24s %14d\n", protocolLabel(e.Key), e.Count)
			}
			for _, e := range topN(portCounts(s), top) {
				fmt.Fprintf(w, "    %-24s %14d\n", "port "+e.Key, e.Count)
			}
			if n := len(s.ByPort); top > 0 && n > top {
				fmt.Fprintf(w, "    (%d more ports: --top 0 or --json shows them all)\n", n-top)
			}
			if ets := etherTypeCounts(s); len(ets) > 0 {
				var list []string
				for _, e := range topN(ets, 0) {
					list = append(list, fmt.Sprintf("%s %d", e.Key, e.Count))
				}
				fmt.Fprintf(w, "    non-IP by EtherType: %s\n", strings.Join(list, ", "))
			}
		},
		summary: countSummary{},
		summaryJSON: func(sum xskSummary) any {
			s := g.Stats()
			return countSummary{xskSummary: sum, ByProtocol: protocolCounts(s), ByPort: portCounts(s), ByEtherType: etherTypeCounts(s), Malformed: s.Malformed}
		},
	}
}

// protocolLabel is how a by_protocol key reads in text output: "proto 17
// (udp)", as xdp1 numbers them, or "other (not IP)".
func protocolLabel(key string) string {
	p, ok := protocolNumber(key)
	switch {
	case !ok:
		return key + " (not IP)"
	case key == fmt.Sprintf("ip/%d", p):
		return fmt.Sprintf("proto %d", p)
	}
	return fmt.Sprintf("proto %d (%s)", p, key)
}

func entryMap(l []countEntry) map[string]uint64 {
	m := make(map[string]uint64, len(l))
	for _, e := range l {
		m[e.Key] = e.Count
	}
	return m
}

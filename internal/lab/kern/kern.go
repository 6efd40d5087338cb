// Package kern runs the in-kernel paths that xdpeng's AF_XDP engine is
// compared with, the xdp-bench set of bpf/kern.c: XDP drop, pass, tx (swap
// the MAC addresses, send back) and redirect (out of one port through a
// DEVMAP, or a copy out of each of several through a DEVMAP_HASH broadcast),
// in native or generic mode, and drop at tc ingress.
//
// It is the one place that loads these programs and attaches them. Open
// loads a path's program, sets its egress ports and attaches it through
// internal/hook: a bpf_link, which the kernel detaches when the process ends
// however it ends, and TCX at tc. It never replaces an XDP program someone
// else attached unless Config.Force, and never one held by a bpf_link. Close
// detaches the program and frees it.
//
// Every path counts packets and bytes per rx queue and per CPU, like
// xdp_rxq_info; a drop can also count per IP protocol, and any path can count
// only the UDP frames to one destination port, which makes a drop a counting
// sink for a generator's frames.
//
// Interfaces are named, and looked up, in the network namespace of the
// calling thread.
package kern

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/hook"
)

// Action is what a path does with every frame.
type Action string

// The actions of the in-kernel paths.
const (
	Drop     Action = "drop"     // XDP_DROP, or TC_ACT_SHOT at tc
	Pass     Action = "pass"     // XDP_PASS: on to the stack
	TX       Action = "tx"       // swap the MAC addresses, XDP_TX back out
	Redirect Action = "redirect" // XDP_REDIRECT out of Config.Outs
	// RedirectCPU sends each frame to another CPU through a CPUMAP,
	// round robin over Config.CPUs, where it is dropped, or with
	// RemotePass passed to the stack (xdp-bench redirect-cpu).
	RedirectCPU Action = "redirect-cpu"
)

var actions = []Action{Drop, Pass, TX, Redirect, RedirectCPU}

// Hook is where a path's program runs: XDP (native mode), XDPGeneric, or
// TC (tc ingress, TCX; only Drop runs there).
type Hook = hook.Point

// The hooks, as package hook names them.
const (
	XDP        = hook.XDP
	XDPGeneric = hook.XDPGeneric
	TC         = hook.TC
)

// ParseXDPMode returns the hook of an XDP attach mode named as the kernel's
// tools name it: "native" (or "drv", "driver") or "generic" (or "skb").
func ParseXDPMode(s string) (Hook, error) {
	switch s {
	case "native", "drv", "driver":
		return XDP, nil
	case "generic", "skb":
		return XDPGeneric, nil
	}
	return 0, fmt.Errorf("unknown XDP mode %q (want native or generic)", s)
}

// MaxOuts is the most egress interfaces a redirect takes.
const MaxOuts = 64

// Config describes an in-kernel path.
type Config struct {
	Action Action
	// Interface is where the program runs.
	Interface string
	// Hook is where on Interface: XDP (native, the zero value), XDPGeneric
	// or TC.
	Hook Hook
	// Force replaces an XDP program someone else attached through netlink
	// (ip link, libxdp) that no running process holds open, and with
	// ForceInUse also one a running process holds open; one held by a
	// bpf_link is never replaced. TCX replaces nothing, so at TC they do
	// nothing.
	Force, ForceInUse bool
	// Outs are Redirect's egress interfaces: one, or up to MaxOuts for a
	// copy of every frame out of each (never back out of Interface).
	Outs []string
	// CountProto makes a Drop at XDP count per IP protocol too, which
	// costs it reading the headers.
	CountProto bool
	// CountUDPDstPort, if not zero, makes the per-queue counters count
	// only UDP frames (IPv4 or IPv6, up to two VLAN tags) to this
	// destination port; the path still handles every frame alike.
	CountUDPDstPort uint16
	// PacketOp is what an XDP path does to each frame before its
	// verdict, xdp-bench's packet operations: no-touch, read-data,
	// parse-ip or swap-macs (see PacketOps). "" is the path's default:
	// swap-macs for TX, no-touch for the others. Not with TC or
	// CountProto, which parses the headers itself.
	PacketOp string
	// LoadBytes makes the packet operation read and write the frame
	// through bpf_xdp_load_bytes and bpf_xdp_store_bytes (Linux 5.18)
	// instead of direct packet access: xdp-bench's load mode.
	LoadBytes bool
	// CPUs are RedirectCPU's CPUs, QSize each one's queue in frames (0:
	// 2048, xdp-bench's), RemotePass what happens to a frame there: the
	// stack takes it, rather than a drop.
	CPUs       []int
	QSize      int
	RemotePass bool
}

// PacketOps are the packet operations Config.PacketOp takes, cheapest
// first.
var PacketOps = []string{"no-touch", "read-data", "parse-ip", "swap-macs"}

// Validate checks c without touching the kernel.
func (c Config) Validate() error {
	if !slices.Contains(actions, c.Action) {
		return fmt.Errorf("kern: unknown action %q (want drop, pass, tx or redirect)", c.Action)
	}
	if c.Interface == "" {
		return errors.New("kern: no interface given")
	}
	switch c.Hook {
	case XDP, XDPGeneric:
	case TC:
		if c.Action != Drop {
			return fmt.Errorf("kern: %s does not run at tc ingress: only drop does", c.Action)
		}
	default:
		return fmt.Errorf("kern: unknown hook %v", c.Hook)
	}
	if c.CountProto && (c.Action != Drop || c.Hook == TC) {
		return fmt.Errorf("kern: counting per IP protocol is for drop at XDP, not %s at %v", c.Action, c.Hook)
	}
	switch {
	case c.PacketOp != "" && !slices.Contains(PacketOps, c.PacketOp):
		return fmt.Errorf("kern: unknown packet operation %q (want %s)", c.PacketOp, strings.Join(PacketOps, ", "))
	case (c.PacketOp != "" || c.LoadBytes) && c.Hook == TC:
		return errors.New("kern: packet operations and the load mode are the XDP paths': tc drop takes none")
	case (c.PacketOp != "" || c.LoadBytes) && c.CountProto:
		return errors.New("kern: counting per IP protocol parses the headers itself: it takes no packet operation or load mode")
	case c.LoadBytes && (c.PacketOp == "no-touch" || c.PacketOp == "" && c.Action != TX):
		return errors.New("kern: the load mode is how a packet operation reads the frame, and no-touch reads nothing: give read-data, parse-ip or swap-macs too")
	}
	if c.Action == RedirectCPU {
		if c.Hook == TC {
			return errors.New("kern: redirect-cpu is an XDP path: it does not run at tc")
		}
		if len(c.CPUs) == 0 {
			return errors.New("kern: redirect-cpu needs the CPUs to send frames to")
		}
		if c.QSize < 0 {
			return fmt.Errorf("kern: queue size %d: must be positive", c.QSize)
		}
	} else if len(c.CPUs) > 0 || c.QSize != 0 || c.RemotePass {
		return fmt.Errorf("kern: CPUs, a queue size and the remote action are redirect-cpu's, not %s's", c.Action)
	}
	if c.Action != Redirect {
		if len(c.Outs) > 0 {
			return fmt.Errorf("kern: %s sends nothing out of another interface: egress interfaces are for redirect", c.Action)
		}
		return nil
	}
	switch {
	case len(c.Outs) == 0:
		return errors.New("kern: redirect needs an egress interface")
	case len(c.Outs) > MaxOuts:
		return fmt.Errorf("kern: redirect takes at most %d egress interfaces, not %d", MaxOuts, len(c.Outs))
	}
	for i, o := range c.Outs {
		switch {
		case o == "":
			return errors.New("kern: an egress interface without a name")
		case o == c.Interface:
			return fmt.Errorf("kern: egress interface %s is the interface the path runs on", o)
		case slices.Contains(c.Outs[:i], o):
			return fmt.Errorf("kern: egress interface %s listed twice", o)
		}
	}
	return nil
}

// Program names the program of bpf/kern.c that runs the path: "drop",
// "drop-count-proto", "tc-drop", "pass", "tx", "redirect" or
// "redirect-multi"; "" if c is not valid.
func (c Config) Program() string {
	if c.Validate() != nil {
		return ""
	}
	switch {
	case c.Hook == TC:
		return "tc-drop"
	case c.CountProto:
		return "drop-count-proto"
	case c.Action == Redirect && len(c.Outs) > 1:
		return "redirect-multi"
	}
	return string(c.Action)
}

// QueueCPU is what one CPU counted for one rx queue. In a sum over CPUs
// (Stats.ByQueue) CPU is -1, in a sum over queues (Stats.ByCPU) Queue is -1.
// Queue is QueueUnrecorded for frames whose rx queue the driver did not
// record (the tc hook sees only what the driver put in the skb).
type QueueCPU struct {
	Queue   int    `json:"queue"`
	CPU     int    `json:"cpu"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// QueueUnrecorded is QueueCPU.Queue of frames without a recorded rx queue.
const QueueUnrecorded = -2

// Stats is a snapshot of a path's per rx queue, per CPU counters: one entry
// per (queue, CPU) that counted anything, ordered by queue then CPU. The
// counters start at zero when the path is opened.
type Stats []QueueCPU

// Total sums all entries.
func (s Stats) Total() (packets, bytes uint64) {
	for _, e := range s {
		packets += e.Packets
		bytes += e.Bytes
	}
	return packets, bytes
}

// ByQueue sums over CPUs: one entry per queue (CPU is -1), ordered by queue.
func (s Stats) ByQueue() Stats {
	return s.sumBy(func(e QueueCPU) QueueCPU { e.CPU = -1; return e })
}

// ByCPU sums over queues: one entry per CPU (Queue is -1), ordered by CPU.
func (s Stats) ByCPU() Stats {
	return s.sumBy(func(e QueueCPU) QueueCPU { e.Queue = -1; return e })
}

func (s Stats) sumBy(key func(QueueCPU) QueueCPU) Stats {
	var out Stats
	index := map[[2]int]int{}
	for _, e := range s {
		e = key(e)
		k := [2]int{e.Queue, e.CPU}
		if i, ok := index[k]; ok {
			out[i].Packets += e.Packets
			out[i].Bytes += e.Bytes
			continue
		}
		index[k] = len(out)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b QueueCPU) int {
		if a.Queue != b.Queue {
			return a.Queue - b.Queue
		}
		return a.CPU - b.CPU
	})
	return out
}

// Sub returns s minus an earlier snapshot prev: what was counted in between.
// Entries with nothing new are left out.
func (s Stats) Sub(prev Stats) Stats {
	before := map[[2]int]QueueCPU{}
	for _, e := range prev {
		before[[2]int{e.Queue, e.CPU}] = e
	}
	var out Stats
	for _, e := range s {
		p := before[[2]int{e.Queue, e.CPU}]
		e.Packets = counter.Sub(e.Packets, p.Packets)
		e.Bytes = counter.Sub(e.Bytes, p.Bytes)
		if e.Packets != 0 || e.Bytes != 0 {
			out = append(out, e)
		}
	}
	return out
}

// ProtoNotIP is the ProtoCount.Proto of frames that are neither IPv4 nor
// IPv6 (or too short to tell).
const ProtoNotIP = 256

// ProtoCount is how many frames of one IP protocol a path counted since it
// was opened (Config.CountProto).
type ProtoCount struct {
	// Proto is the IPv4 protocol or IPv6 next header, or ProtoNotIP.
	Proto   int    `json:"proto"`
	Packets uint64 `json:"packets"`
}

// Counters are all the counters of a path, read at one time (Path.Read).
type Counters struct {
	// Stats are the per rx queue, per CPU counters.
	Stats Stats
	// Proto are the per-protocol counts, ordered by protocol, of a path
	// opened with CountProto; nil otherwise.
	Proto []ProtoCount
	// OutTx are the packets each egress interface (Path.Outs) has sent, as
	// its generic counters count them: since the interface was created,
	// not since the path was opened, and what it sent besides the path's
	// frames included.
	OutTx []uint64
	// XDPTx are, for TX on an interface that counts XDP_TX per queue
	// (veth), the frames it sent back and those it could not; nil for
	// other paths and interfaces. veth counts them in native mode only:
	// in generic mode the frames go back out as skbs, and these stay.
	XDPTx *XDPTx
	// Remote are, for RedirectCPU, the frames each CPU they were sent to
	// took, ordered by CPU: where the path's work ends.
	Remote []RemoteCount
}

// RemoteCount is what one CPU took of the frames RedirectCPU sent it.
type RemoteCount struct {
	CPU            int
	Packets, Bytes uint64
}

// XDPTx counts the frames a TX path sent back, as the driver counts them
// (veth's rx_queue_N_xdp_tx and rx_queue_N_xdp_tx_errors, summed over
// queues), since the interface was created.
type XDPTx struct {
	// Sent counts the XDP_TX frames the driver sent on.
	Sent uint64
	// Failed counts those it could not send on: a veth delivers them only
	// to a peer that runs an XDP program or has GRO on.
	Failed uint64
}

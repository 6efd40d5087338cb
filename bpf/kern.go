//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// KernProgram names one of the in-kernel paths of kern.c, the xdp-bench set.
type KernProgram string

// The in-kernel paths. All but TCDrop are XDP programs; TCDrop is a tc
// (SCHED_CLS) program for the ingress hook.
const (
	Drop           KernProgram = "drop"             // XDP_DROP
	Pass           KernProgram = "pass"             // XDP_PASS, to the stack
	TX             KernProgram = "tx"               // swap MACs, XDP_TX back out
	Redirect       KernProgram = "redirect"         // to the one port in a DEVMAP
	RedirectMulti  KernProgram = "redirect-multi"   // a copy to every port in a DEVMAP_HASH
	DropCountProto KernProgram = "drop-count-proto" // count per IP protocol, then XDP_DROP
	RedirectCPU    KernProgram = "redirect-cpu"     // to other CPUs through a CPUMAP, dropped or passed there
	TCDrop         KernProgram = "tc-drop"          // tc ingress, TC_ACT_SHOT
)

// KernPrograms lists every KernProgram, in the order tools show them.
var KernPrograms = []KernProgram{Drop, Pass, TX, Redirect, RedirectMulti, RedirectCPU, DropCountProto, TCDrop}

// kernSections maps a KernProgram to its function name in kern.c.
var kernSections = map[KernProgram]string{
	Drop:           kernProgXdpDrop,
	Pass:           kernProgXdpPass,
	TX:             kernProgXdpTx,
	Redirect:       kernProgXdpRedirect,
	RedirectMulti:  kernProgXdpRedirectMulti,
	RedirectCPU:    kernProgXdpRedirectCpu,
	DropCountProto: kernProgXdpDropCountProto,
	TCDrop:         kernProgTcDrop,
}

// IsXDP reports whether p is an XDP program (as opposed to tc).
func (p KernProgram) IsXDP() bool { return p != TCDrop }

// MaxQueues is the number of rx queues the counters have room for; frames
// from higher queues are handled but not counted.
const MaxQueues = 256

// QueueUnrecorded is QueueCPUStat.Queue of the frames whose rx queue the
// driver did not record in the skb (tc only: veth records none).
const QueueUnrecorded = -2

// MaxPorts is the most egress interfaces RedirectMulti takes (the size of its
// DEVMAP_HASH).
const MaxPorts = 64

// ProtoNotIP is the ProtoStat.Proto of frames that are neither IPv4 nor IPv6.
const ProtoNotIP = 256

// PacketOp is what an XDP path does to each frame before its verdict,
// xdp-bench's packet operations. A frame the operation finds malformed
// (shorter than its headers, no EtherType, an IP header of the wrong
// version or length) gets XDP_ABORTED, which the xdp:xdp_exception
// tracepoint counts.
type PacketOp string

// The packet operations, cheapest first.
const (
	// NoTouch leaves the frame's data unread.
	NoTouch PacketOp = "no-touch"
	// ReadData reads the Ethernet header's EtherType.
	ReadData PacketOp = "read-data"
	// ParseIP parses the Ethernet header, up to two VLAN tags (not with
	// LoadBytes) and the IPv4 or IPv6 header: version and length.
	ParseIP PacketOp = "parse-ip"
	// SwapMACs swaps the destination and source MAC addresses (writes
	// the frame).
	SwapMACs PacketOp = "swap-macs"
)

// PacketOps lists every PacketOp, cheapest first.
var PacketOps = []PacketOp{NoTouch, ReadData, ParseIP, SwapMACs}

// packetOpCodes are the PacketOps' values of kern.c's packet_op.
var packetOpCodes = map[PacketOp]uint8{NoTouch: 0, ReadData: 1, ParseIP: 2, SwapMACs: 3}

// ParsePacketOp returns the PacketOp called s.
func ParsePacketOp(s string) (PacketOp, error) {
	if _, ok := packetOpCodes[PacketOp(s)]; ok {
		return PacketOp(s), nil
	}
	return "", fmt.Errorf("unknown packet operation %q (want no-touch, read-data, parse-ip or swap-macs)", s)
}

// ErrNoLoadBytes is returned by LoadKern for KernOptions.LoadBytes on a
// kernel without bpf_xdp_load_bytes.
var ErrNoLoadBytes = errors.New("reading the frame with load-bytes needs the helper bpf_xdp_load_bytes (Linux 5.18), which this kernel does not have")

// HaveLoadBytes probes, by loading a program that calls it, whether the
// kernel has bpf_xdp_load_bytes: an error wrapping ErrNoLoadBytes where it
// has not, another where the probe could not be made (no privilege).
func HaveLoadBytes() error {
	err := features.HaveProgramHelper(ebpf.XDP, asm.FnXdpLoadBytes)
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("%w (%w)", ErrNoLoadBytes, err)
	}
	return err
}

// DefaultPacketOp is the operation p applies when KernOptions names
// none: TX swaps the MAC addresses (it sends the frame back to its
// sender), the others leave the frame untouched.
func (p KernProgram) DefaultPacketOp() PacketOp {
	if p == TX {
		return SwapMACs
	}
	return NoTouch
}

// TakesPacketOp reports whether p applies a PacketOp: every XDP path but
// DropCountProto, which parses the headers itself.
func (p KernProgram) TakesPacketOp() bool { return p.IsXDP() && p != DropCountProto }

// KernOptions are the load-time choices of LoadKern.
type KernOptions struct {
	// Counters turns on the per rx queue, per CPU packet and byte counters.
	// Off, the verifier removes the counting code, which is how progbench
	// measures the bare program.
	Counters bool
	// CountUDPDstPort, if not zero, makes the counters count only UDP
	// frames (IPv4 or IPv6, up to two VLAN tags) to this destination
	// port: a sink counts the generator's frames and not what the kernel
	// sends on the link besides. The program still handles every frame.
	CountUDPDstPort uint16
	// PacketOp is what the program does to each frame before its
	// verdict; "" is the program's DefaultPacketOp. Only programs that
	// TakesPacketOp take another.
	PacketOp PacketOp
	// LoadBytes makes the packet operation read and write the frame
	// through bpf_xdp_load_bytes and bpf_xdp_store_bytes (Linux 5.18)
	// instead of direct packet access.
	LoadBytes bool
	// CPUs are the CPUs RedirectCPU sends frames to, round robin; each
	// gets a CPUMAP entry of QSize frames (0: DefaultQSize) whose program
	// counts the frames that reach it and drops them, or with
	// RemotePass passes them to the network stack there.
	CPUs       []int
	QSize      int
	RemotePass bool
}

// DefaultQSize is the queue of each CPUMAP entry of RedirectCPU, in
// frames, as xdp-bench's.
const DefaultQSize = 2048

// KernObjects is one loaded in-kernel path: its program and the maps it uses.
// Maps the program does not use are nil.
type KernObjects struct {
	Kind KernProgram
	// Remote is RedirectCPU's program on the CPUs frames are sent to;
	// CPUMap its CPUMAP, RemoteStats what Remote counted per CPU (see
	// ReadRemoteStats). nil for the other programs.
	Remote      *ebpf.Program
	CPUMap      *ebpf.Map
	RemoteStats *ebpf.Map
	// Op is the packet operation the program applies (NoTouch for those
	// that take none).
	Op      PacketOp
	Program *ebpf.Program
	// Stats holds the per rx queue, per CPU counters (see ReadStats).
	Stats *ebpf.Map
	// TxPorts is the egress map of Redirect (DEVMAP, key 0) and
	// RedirectMulti (DEVMAP_HASH keyed by ifindex); see SetPorts.
	TxPorts *ebpf.Map
	// ProtoStats holds DropCountProto's per-protocol counters.
	ProtoStats *ebpf.Map

	counters bool
}

// LoadKern loads the program p of kern.c, with only the maps it references.
func LoadKern(p KernProgram, opts KernOptions) (*KernObjects, error) {
	name, ok := kernSections[p]
	if !ok {
		return nil, fmt.Errorf("load kern program: unknown program %q (known: %v)", p, KernPrograms)
	}
	op := opts.PacketOp
	if op == "" {
		op = p.DefaultPacketOp()
	}
	code, ok := packetOpCodes[op]
	switch {
	case !ok:
		return nil, fmt.Errorf("load kern program %s: unknown packet operation %q", p, op)
	case !p.TakesPacketOp() && (op != NoTouch || opts.LoadBytes):
		return nil, fmt.Errorf("load kern program %s: it takes no packet operation or load mode", p)
	case opts.LoadBytes && op == NoTouch:
		return nil, fmt.Errorf("load kern program %s: load-bytes is how a packet operation reads the frame, and no-touch reads nothing", p)
	}
	spec, err := loadKern()
	if err != nil {
		return nil, fmt.Errorf("load kern program %s: %w", p, err)
	}
	if err := spec.Variables[kernVarPacketOp].Set(code); err != nil {
		return nil, fmt.Errorf("load kern program %s: set the packet operation: %w", p, err)
	}
	if err := spec.Variables[kernVarLoadBytes].Set(boolByte(opts.LoadBytes)); err != nil {
		return nil, fmt.Errorf("load kern program %s: set the load mode: %w", p, err)
	}
	if err := spec.Variables[kernVarEnableCounters].Set(boolByte(opts.Counters)); err != nil {
		return nil, fmt.Errorf("load kern program %s: set counters: %w", p, err)
	}
	if err := spec.Variables[kernVarCountUdpDstPort].Set(opts.CountUDPDstPort); err != nil {
		return nil, fmt.Errorf("load kern program %s: set the UDP port to count: %w", p, err)
	}
	keep := []string{name}
	if p == RedirectCPU {
		if err := cpuMapSpec(spec, opts); err != nil {
			return nil, fmt.Errorf("load kern program %s: %w", p, err)
		}
		keep = append(keep, kernProgXdpCpumapRemote)
	} else if len(opts.CPUs) > 0 || opts.RemotePass || opts.QSize != 0 {
		return nil, fmt.Errorf("load kern program %s: CPUs, QSize and RemotePass are %s's", p, RedirectCPU)
	}
	keepOnly(spec, keep...)

	if opts.LoadBytes {
		if err := HaveLoadBytes(); err != nil {
			return nil, fmt.Errorf("load kern program %s: %w", p, err)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load kern program %s: %w", p, err)
	}
	k := &KernObjects{
		Kind:       p,
		Op:         op,
		Program:    coll.DetachProgram(name),
		Stats:      coll.DetachMap(kernMapQueueStats),
		ProtoStats: coll.DetachMap(kernMapProtoStats),
		counters:   opts.Counters,
	}
	switch p {
	case Redirect:
		k.TxPorts = coll.DetachMap(kernMapTxPorts)
	case RedirectMulti:
		k.TxPorts = coll.DetachMap(kernMapTxPortsMulti)
	case RedirectCPU:
		k.Remote = coll.DetachProgram(kernProgXdpCpumapRemote)
		k.CPUMap = coll.DetachMap(kernMapCpuMap)
		k.RemoteStats = coll.DetachMap(kernMapRemoteStats)
		err = setCPUs(coll.Maps[kernMapCpusAvailable], k.CPUMap, k.Remote, opts)
	}
	coll.Close() // the .rodata map stays alive through the program's reference
	if err != nil {
		k.Close()
		return nil, fmt.Errorf("load kern program %s: %w", p, err)
	}
	return k, nil
}

// cpuMapSpec sizes RedirectCPU's maps to the machine's possible CPUs and
// sets its constants from opts.
func cpuMapSpec(spec *ebpf.CollectionSpec, opts KernOptions) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	if len(opts.CPUs) == 0 {
		return errors.New("no CPU to send frames to")
	}
	for i, c := range opts.CPUs {
		if c < 0 || c >= n {
			return fmt.Errorf("CPU %d: this machine has CPUs 0-%d", c, n-1)
		}
		if slices.Contains(opts.CPUs[:i], c) {
			return fmt.Errorf("CPU %d listed twice", c)
		}
	}
	if opts.QSize < 0 {
		return fmt.Errorf("queue size %d: must be positive", opts.QSize)
	}
	spec.Maps[kernMapCpuMap].MaxEntries = uint32(n)
	spec.Maps[kernMapCpusAvailable].MaxEntries = uint32(len(opts.CPUs))
	if err := spec.Variables[kernVarCpusCount].Set(uint32(len(opts.CPUs))); err != nil {
		return fmt.Errorf("set the CPU count: %w", err)
	}
	if err := spec.Variables[kernVarRemotePass].Set(boolByte(opts.RemotePass)); err != nil {
		return fmt.Errorf("set the remote action: %w", err)
	}
	return nil
}

// setCPUs fills RedirectCPU's maps: the CPUs in order, and each one's
// CPUMAP entry with its queue size and the remote program.
func setCPUs(available, cpuMap *ebpf.Map, remote *ebpf.Program, opts KernOptions) error {
	qsize := uint32(opts.QSize)
	if qsize == 0 {
		qsize = DefaultQSize
	}
	for i, c := range opts.CPUs {
		if err := available.Put(uint32(i), uint32(c)); err != nil {
			return fmt.Errorf("add CPU %d to %s: %w", c, available, err)
		}
		// struct bpf_cpumap_val: the queue size, then the program's fd.
		val := [2]uint32{qsize, uint32(remote.FD())}
		if err := cpuMap.Put(uint32(c), val); err != nil {
			// Before Linux 5.9 an entry takes no program: EINVAL.
			return fmt.Errorf("add CPU %d to the CPUMAP with a program to count and drop there (which needs Linux 5.9): %w", c, err)
		}
	}
	return nil
}

// RemoteStat is what RedirectCPU's remote program counted on one CPU.
type RemoteStat struct {
	CPU     int    `json:"cpu"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// ReadRemoteStats reads what RedirectCPU's remote program counted on each
// CPU that counted anything, since load, ordered by CPU.
func (k *KernObjects) ReadRemoteStats() ([]RemoteStat, error) {
	if k.RemoteStats == nil {
		return nil, fmt.Errorf("read remote stats: program %s sends nothing to other CPUs", k.Kind)
	}
	var out []RemoteStat
	err := readPerCPU(k.RemoteStats, 1, func(_, cpu int, v *kernQueueCounters) {
		if v.Packets != 0 || v.Bytes != 0 {
			out = append(out, RemoteStat{CPU: cpu, Packets: v.Packets, Bytes: v.Bytes})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read remote stats: %w", err)
	}
	return out, nil
}

// keepOnly trims spec to the programs progs and the maps they reference,
// so loading one path does not create the maps of the others.
func keepOnly(spec *ebpf.CollectionSpec, progs ...string) {
	all := spec.Programs
	spec.Programs = map[string]*ebpf.ProgramSpec{}
	used := map[string]bool{}
	for _, prog := range progs {
		ps := all[prog]
		spec.Programs[prog] = ps
		for _, ins := range ps.Instructions {
			if ref := ins.Reference(); ref != "" {
				used[ref] = true
			}
		}
	}
	for name := range spec.Maps {
		if !used[name] {
			delete(spec.Maps, name)
		}
	}
}

// SetPorts sets the egress interfaces of Redirect (exactly one) or
// RedirectMulti (one or more). The kernel resolves ifindexes in the calling
// thread's network namespace.
func (k *KernObjects) SetPorts(ifindexes ...int) error {
	switch {
	case k.TxPorts == nil:
		return fmt.Errorf("set ports: program %s does not redirect", k.Kind)
	case len(ifindexes) == 0:
		return errors.New("set ports: no egress interface")
	case k.Kind == Redirect && len(ifindexes) != 1:
		return fmt.Errorf("set ports: %s takes one egress interface, got %d (use %s)", Redirect, len(ifindexes), RedirectMulti)
	}
	for _, ifindex := range ifindexes {
		key := uint32(0)
		if k.Kind == RedirectMulti {
			key = uint32(ifindex)
		}
		if err := k.TxPorts.Put(key, uint32(ifindex)); err != nil {
			// The kernel checks here that the interface exists in this
			// namespace and can transmit redirected frames (EINVAL if not).
			return fmt.Errorf("set ports: add ifindex %d to %s (is it in this network namespace?): %w", ifindex, k.TxPorts, err)
		}
	}
	return nil
}

// Close releases the program and its maps. Detaching is the caller's job
// (internal/hook); a program stays attached while a link holds it.
func (k *KernObjects) Close() error {
	var errs []error
	if k.Program != nil {
		errs = append(errs, k.Program.Close())
	}
	if k.Remote != nil {
		errs = append(errs, k.Remote.Close())
	}
	for _, m := range []*ebpf.Map{k.Stats, k.TxPorts, k.ProtoStats, k.CPUMap, k.RemoteStats} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}

// QueueCPUStat is what one CPU counted for one rx queue.
type QueueCPUStat struct {
	Queue   int    `json:"queue"`
	CPU     int    `json:"cpu"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// QueueCPUStats is a snapshot of the counters: one entry per (queue, CPU)
// that counted anything, ordered by queue then CPU. internal/lab/kern sums them
// per queue and per CPU.
type QueueCPUStats []QueueCPUStat

// ReadStats reads the per rx queue, per CPU counters, which are cumulative
// since load. Without KernOptions.Counters it returns an error rather than
// zeros, so a caller cannot mistake "not counting" for "no traffic".
func (k *KernObjects) ReadStats() (QueueCPUStats, error) {
	if !k.counters || k.Stats == nil {
		return nil, fmt.Errorf("read stats of %s: loaded without counters", k.Kind)
	}
	var out QueueCPUStats
	err := readPerCPU(k.Stats, MaxQueues+1, func(queue, cpu int, v *kernQueueCounters) {
		if queue == MaxQueues {
			queue = QueueUnrecorded
		}
		if v.Packets != 0 || v.Bytes != 0 {
			out = append(out, QueueCPUStat{Queue: queue, CPU: cpu, Packets: v.Packets, Bytes: v.Bytes})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read stats of %s: %w", k.Kind, err)
	}
	return out, nil
}

// Total sums all entries.
func (s QueueCPUStats) Total() (packets, bytes uint64) {
	for _, e := range s {
		packets += e.Packets
		bytes += e.Bytes
	}
	return packets, bytes
}

// ProtoStat is how many frames of one IP protocol DropCountProto saw.
type ProtoStat struct {
	// Proto is the IPv4 protocol or IPv6 next header, or ProtoNotIP.
	Proto   int    `json:"proto"`
	Packets uint64 `json:"packets"`
}

// ReadProtoStats reads DropCountProto's counters, summed over CPUs, for
// the protocols seen; ordered by protocol.
func (k *KernObjects) ReadProtoStats() ([]ProtoStat, error) {
	if k.ProtoStats == nil {
		return nil, fmt.Errorf("read protocol stats: program %s does not count protocols", k.Kind)
	}
	sums := make([]uint64, ProtoNotIP+1)
	err := readPerCPU(k.ProtoStats, len(sums), func(proto, _ int, v *uint64) { sums[proto] += *v })
	if err != nil {
		return nil, fmt.Errorf("read protocol stats: %w", err)
	}
	var out []ProtoStat
	for proto, n := range sums {
		if n != 0 {
			out = append(out, ProtoStat{Proto: proto, Packets: n})
		}
	}
	return out, nil
}

// readPerCPU calls fn for each key below n and each possible CPU of a
// per-CPU array.
func readPerCPU[V any](m *ebpf.Map, n int, fn func(key, cpu int, v *V)) error {
	var values []V
	for key := range uint32(n) {
		if err := m.Lookup(key, &values); err != nil {
			return fmt.Errorf("lookup key %d in %s: %w", key, m, err)
		}
		for cpu := range values {
			fn(int(key), cpu, &values[cpu])
		}
	}
	return nil
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

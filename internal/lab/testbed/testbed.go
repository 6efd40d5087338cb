// Package testbed builds a test bed of two network namespaces joined by veth
// pairs, so that xdpeng can be run, tested and measured without a NIC.
//
// A bed called NAME has a generator namespace NAME-gen and a device-under-test
// namespace NAME-dut, both bind-mounted under /var/run/netns so that
// `ip netns exec NAME-dut ...` works. Link K is a veth pair genK (198.18.K.1/24,
// in NAME-gen) <-> dutK (198.18.K.2/24, in NAME-dut) with the same number of
// receive and transmit queues on both ends, static neighbour entries both ways
// (no ARP on the wire) and IPv6 off, so the only frames on the link are the
// ones a test sends and counters add up exactly.
//
// veth hands frames that arrive through ndo_xdp_xmit (XDP_REDIRECT, the
// live-frames generator) to its peer only if the peer runs NAPI, that is when
// it has an XDP program attached or GRO enabled; Up enables GRO on both ends.
// Where there is a CPU the generator does not use, the DUT's NAPI runs in
// threaded mode and its kthreads (napi/dutK-ID) are pinned to the DUT CPUs, so
// the DUT's receive work does not compete with the generator.
package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// Limits of Config; the address plan 198.18.K.0/24 allows 256 links.
const (
	MaxLinks   = 256
	MaxQueues  = 128
	MaxNameLen = 32
	// MinMTU and MaxMTU bound Config.MTU: what veth takes (the IPv4
	// minimum, and 64 KiB less an Ethernet header).
	MinMTU = 68
	MaxMTU = 65535
)

// NAPIMode chooses where the DUT's veth receive work (NAPI) runs.
type NAPIMode int

const (
	// NAPISoftirq, the default, leaves NAPI in softirq, which runs on the
	// CPU that sends into the veth: with the generator on CPU 0, the DUT's
	// XDP program and AF_XDP copy run there too (layout "A", the reference
	// layout). The generator's own flushes then pace it to what the DUT's
	// receive path takes, so bounded runs arrive whole.
	NAPISoftirq NAPIMode = iota
	// NAPIAuto makes NAPI threaded and pins it to the DUT CPUs when they do
	// not overlap the generator CPUs, and leaves it in softirq otherwise.
	NAPIAuto
	// NAPIThreaded requires threaded NAPI pinned to the DUT CPUs (layout "B");
	// Up fails if the kernel cannot do it.
	NAPIThreaded
)

// Config describes a test bed to create. The zero value is valid: a bed with
// a generated name, one link with one queue each way.
type Config struct {
	Name   string // "" picks a unique name; namespaces are Name-gen and Name-dut
	Queues int    // receive and transmit queues on each veth end; 0 means 1
	Links  int    // veth pairs; 0 means 1
	// GenCPUs are the CPUs the generator will use, DUTCPUs those of the DUT
	// (its NAPI kthreads are pinned there, round-robin per queue). Defaults:
	// the first and the last CPU this process may run on.
	GenCPUs, DUTCPUs []int
	NAPI             NAPIMode
	// MTU is the MTU of both ends of every link, 0 for the kernel's
	// default (1500); up to MaxMTU, so that beds can carry jumbo frames.
	MTU int
	// GenRPS steers the receive work of skbs arriving at the generator
	// ends (what the DUT sends back or forwards: AF_XDP copy-mode
	// transmit, the bridge) to the generator CPUs with RPS. Without it
	// veth receives them on the CPU that sent them, the DUT's, which then
	// pays for the generator side's stack: work a real link would take
	// off the DUT.
	GenRPS bool
}

// Link is one veth pair of a bed.
type Link struct {
	Gen, DUT           string // interface names: genK in the gen namespace, dutK in the DUT namespace
	GenMAC, DUTMAC     net.HardwareAddr
	GenIP, DUTIP       net.IP
	GenIndex, DUTIndex int // interface indexes, each in its own namespace
}

// NAPIThread is one of the DUT's threaded-NAPI kthreads.
type NAPIThread struct {
	Dev  string
	ID   uint32 // NAPI id; the kthread is called napi/Dev-ID
	PID  int
	CPUs []int // where it may run
}

// Bed describes a test bed. It holds no open resources: it may be copied, and
// Open returns an equal description of an existing bed from another process.
type Bed struct {
	Name         string
	GenNS, DUTNS string // namespace names, usable with Do and `ip netns exec`
	Links        []Link
	Queues       int
	MTU          int // of both ends of every link
	GenCPUs      []int
	DUTCPUs      []int
	ThreadedNAPI bool         // the DUT ends run threaded NAPI
	NAPIThreads  []NAPIThread // the DUT's NAPI kthreads when ThreadedNAPI
	NAPINote     string       // why NAPI is not threaded, when it is not
	GenRPS       bool         // the generator ends steer what they receive to GenCPUs (Config.GenRPS)
}

// ExistsError is returned by Up when a namespace of the bed already exists.
type ExistsError struct {
	Name, Namespace string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("test bed %q already exists (namespace %s); remove it with: xdpeng testbed down --name %s",
		e.Name, e.Namespace, e.Name)
}

// NotFoundError is returned by Open when the bed or part of it is missing.
type NotFoundError struct {
	Name, Namespace string
	Partial         bool // the other namespace exists
}

func (e *NotFoundError) Error() string {
	if e.Partial {
		return fmt.Sprintf("test bed %q is incomplete (namespace %s is missing); remove it with: xdpeng testbed down --name %s",
			e.Name, e.Namespace, e.Name)
	}
	return fmt.Sprintf("test bed %q not found (no namespace %s); create it with: xdpeng testbed up --name %s",
		e.Name, e.Namespace, e.Name)
}

// GenNS and DUTNS return the namespace names of the bed called name.
func GenNS(name string) string { return name + "-gen" }

// DUTNS returns the DUT namespace name of the bed called name.
func DUTNS(name string) string { return name + "-dut" }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// ValidateName checks that name can name a bed: short, and made of letters,
// digits, '_', '.' and '-' so that it is a safe file name in /var/run/netns.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("empty test bed name")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("test bed name %q is longer than %d characters", name, MaxNameLen)
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("test bed name %q: use letters, digits, '_', '.' and '-', not starting with '.' or '-'", name)
	}
	return nil
}

var uniqueCounter atomic.Uint32

// UniqueName returns a short bed name that starts with prefix and is not in use
// now: prefix, this process's id and a counter, in base 36.
func UniqueName(prefix string) string {
	pid := strconv.FormatInt(int64(os.Getpid()), 36)
	for {
		n := strconv.FormatUint(uint64(uniqueCounter.Add(1)), 36)
		name := prefix + pid + "-" + n
		if !nsExists(GenNS(name)) && !nsExists(DUTNS(name)) {
			return name
		}
	}
}

// withDefaults checks cfg and fills in the defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Queues == 0 {
		cfg.Queues = 1
	}
	if cfg.Links == 0 {
		cfg.Links = 1
	}
	if cfg.Queues < 1 || cfg.Queues > MaxQueues {
		return cfg, fmt.Errorf("queues: %d is out of range 1-%d", cfg.Queues, MaxQueues)
	}
	if cfg.Links < 1 || cfg.Links > MaxLinks {
		return cfg, fmt.Errorf("links: %d is out of range 1-%d", cfg.Links, MaxLinks)
	}
	if cfg.MTU != 0 && (cfg.MTU < MinMTU || cfg.MTU > MaxMTU) {
		return cfg, fmt.Errorf("MTU %d is out of range %d-%d", cfg.MTU, MinMTU, MaxMTU)
	}
	if cfg.Name == "" {
		cfg.Name = UniqueName("tb")
	}
	if err := ValidateName(cfg.Name); err != nil {
		return cfg, err
	}
	switch cfg.NAPI {
	case NAPIAuto, NAPISoftirq, NAPIThreaded:
	default:
		return cfg, fmt.Errorf("unknown NAPI mode %d", cfg.NAPI)
	}
	online, err := cpuset.Online()
	if err != nil {
		return cfg, err
	}
	if len(online) == 0 {
		return cfg, errors.New("no CPU is allowed for this process")
	}
	if len(cfg.GenCPUs) == 0 {
		cfg.GenCPUs = []int{online[0]}
	}
	if len(cfg.DUTCPUs) == 0 {
		cfg.DUTCPUs = []int{online[len(online)-1]}
	}
	if err := cpuset.CheckOnline(cfg.GenCPUs); err != nil {
		return cfg, fmt.Errorf("generator CPUs: %w", err)
	}
	if err := cpuset.CheckOnline(cfg.DUTCPUs); err != nil {
		return cfg, fmt.Errorf("DUT CPUs: %w", err)
	}
	return cfg, nil
}

// Addresses of link k: 198.18.k.1 on the gen end, 198.18.k.2 on the DUT end.
func linkIP(k, host int) net.IP { return net.IPv4(198, 18, byte(k), byte(host)).To4() }

// linkMAC gives link k's ends fixed, locally administered addresses
// (02:78:64 is "xd"), so that printed commands and captures are predictable.
func linkMAC(k, host int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x78, 0x64, byte(k >> 8), byte(k), byte(host)}
}

// Up creates the test bed described by cfg. Everything it made is removed
// again if a step fails.
func Up(cfg Config) (_ *Bed, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Bed{
		Name:    cfg.Name,
		GenNS:   GenNS(cfg.Name),
		DUTNS:   DUTNS(cfg.Name),
		Queues:  cfg.Queues,
		MTU:     cfg.MTU,
		GenCPUs: cfg.GenCPUs,
		DUTCPUs: cfg.DUTCPUs,
	}
	for _, ns := range []string{b.GenNS, b.DUTNS} {
		if nsExists(ns) {
			return nil, &ExistsError{Name: b.Name, Namespace: ns}
		}
	}

	// Remove only what this call created: a namespace that appeared under
	// our name meanwhile belongs to someone else.
	var created []string
	defer func() {
		if err != nil {
			for _, ns := range created {
				if e := removeNS(ns); e != nil {
					err = errors.Join(err, fmt.Errorf("clean up: %w", e))
				}
			}
		}
	}()
	for _, ns := range []string{b.GenNS, b.DUTNS} {
		if err := createNamed(ns); err != nil {
			if errors.Is(err, errNSExists) {
				return nil, &ExistsError{Name: b.Name, Namespace: ns}
			}
			return nil, fmt.Errorf("create test bed %s: %w", b.Name, err)
		}
		created = append(created, ns)
		if err := Do(ns, prepareNS); err != nil {
			return nil, fmt.Errorf("create test bed %s: %w", b.Name, err)
		}
	}
	if err := b.makeLinks(cfg.Links); err != nil {
		return nil, fmt.Errorf("create test bed %s: %w", b.Name, err)
	}
	if err := b.applyNAPI(cfg.NAPI); err != nil {
		return nil, fmt.Errorf("create test bed %s: %w", b.Name, err)
	}
	if cfg.GenRPS {
		if err := b.steerGen(); err != nil {
			return nil, fmt.Errorf("create test bed %s: %w", b.Name, err)
		}
	}
	return b, nil
}

// steerGen sets RPS on every receive queue of the generator ends to the
// generator CPUs (Config.GenRPS).
func (b *Bed) steerGen() error {
	ns, err := netns.GetFromName(b.GenNS)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", b.GenNS, err)
	}
	defer ns.Close()
	mask := cpuMask(b.GenCPUs)
	err = inSysfs(ns, func(sys string) error {
		for _, l := range b.Links {
			for q := 0; q < b.Queues; q++ {
				p := filepath.Join(sys, "class/net", l.Gen, "queues", fmt.Sprintf("rx-%d", q), "rps_cpus")
				if err := os.WriteFile(p, []byte(mask), 0o644); err != nil {
					return fmt.Errorf("steer %s's receive to CPUs %s: %w", l.Gen, cpuset.Format(b.GenCPUs), err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.GenRPS = true
	return nil
}

// cpuMask is the hexadecimal CPU mask of cpus, as rps_cpus takes it: 32-bit
// words separated by commas, the highest first.
func cpuMask(cpus []int) string {
	top := 0
	for _, c := range cpus {
		top = max(top, c)
	}
	words := make([]uint32, top/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ",")
}

// prepareNS turns IPv6 off (so that no router solicitation or DAD frame shows
// up in the counters) and brings lo up in the current namespace.
func prepareNS() error {
	for _, p := range []string{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "/proc/sys/net/ipv6/conf/all/disable_ipv6"} {
		// Without IPv6 in the kernel the files are missing, which is as good.
		if err := os.WriteFile(p, []byte("1"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("disable IPv6: %w", err)
		}
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// nsHandles opens the bed's two namespaces and a netlink handle in each.
type nsHandles struct {
	genNS, dutNS netns.NsHandle
	gen, dut     *netlink.Handle
}

func (b *Bed) openHandles() (*nsHandles, error) {
	h := &nsHandles{genNS: -1, dutNS: -1}
	var err error
	if h.genNS, err = netns.GetFromName(b.GenNS); err != nil {
		return nil, fmt.Errorf("open namespace %s: %w", b.GenNS, err)
	}
	if h.dutNS, err = netns.GetFromName(b.DUTNS); err != nil {
		h.close()
		return nil, fmt.Errorf("open namespace %s: %w", b.DUTNS, err)
	}
	if h.gen, err = netlink.NewHandleAt(h.genNS); err != nil {
		h.close()
		return nil, fmt.Errorf("netlink in %s: %w", b.GenNS, err)
	}
	if h.dut, err = netlink.NewHandleAt(h.dutNS); err != nil {
		h.close()
		return nil, fmt.Errorf("netlink in %s: %w", b.DUTNS, err)
	}
	return h, nil
}

func (h *nsHandles) close() {
	if h.gen != nil {
		h.gen.Close()
	}
	if h.dut != nil {
		h.dut.Close()
	}
	if h.genNS.IsOpen() {
		h.genNS.Close()
	}
	if h.dutNS.IsOpen() {
		h.dutNS.Close()
	}
}

func (b *Bed) makeLinks(n int) error {
	h, err := b.openHandles()
	if err != nil {
		return err
	}
	defer h.close()
	for k := range n {
		l := Link{
			Gen: "gen" + strconv.Itoa(k), DUT: "dut" + strconv.Itoa(k),
			GenMAC: linkMAC(k, 1), DUTMAC: linkMAC(k, 2),
			GenIP: linkIP(k, 1), DUTIP: linkIP(k, 2),
		}
		veth := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{
				Name:         l.Gen,
				HardwareAddr: l.GenMAC,
				NumRxQueues:  b.Queues,
				NumTxQueues:  b.Queues,
			},
			PeerName:         l.DUT,
			PeerHardwareAddr: l.DUTMAC,
			PeerNamespace:    netlink.NsFd(int(h.dutNS)),
			PeerNumRxQueues:  uint32(b.Queues),
			PeerNumTxQueues:  uint32(b.Queues),
		}
		if b.MTU != 0 {
			// Both ends: the link attributes are the first end's, and
			// netlink gives the peer the same MTU (veth_newlink).
			veth.LinkAttrs.MTU = b.MTU
		}
		if err := h.gen.LinkAdd(veth); err != nil {
			return fmt.Errorf("create veth pair %s/%s: %w", l.Gen, l.DUT, err)
		}
		if err := setMTU(h, l, b.MTU); err != nil {
			return err
		}
		if l.GenIndex, err = setupEnd(h.gen, l.Gen, l.GenIP, l.DUTIP, l.DUTMAC); err != nil {
			return err
		}
		if l.DUTIndex, err = setupEnd(h.dut, l.DUT, l.DUTIP, l.GenIP, l.GenMAC); err != nil {
			return err
		}
		if b.MTU == 0 {
			dl, err := h.dut.LinkByName(l.DUT)
			if err != nil {
				return fmt.Errorf("find %s: %w", l.DUT, err)
			}
			b.MTU = dl.Attrs().MTU
		}
		b.Links = append(b.Links, l)
	}
	// GRO is an ethtool setting, which acts on the namespace of the socket:
	// one Do per namespace.
	if err := Do(b.GenNS, func() error { return b.enableGRO(func(l Link) string { return l.Gen }) }); err != nil {
		return err
	}
	return Do(b.DUTNS, func() error { return b.enableGRO(func(l Link) string { return l.DUT }) })
}

// setMTU makes sure both ends of l have mtu (0: whatever they got), and
// sets the DUT end's where the kernel did not give it the first end's.
func setMTU(h *nsHandles, l Link, mtu int) error {
	if mtu == 0 {
		return nil
	}
	for _, end := range []struct {
		h    *netlink.Handle
		name string
	}{{h.gen, l.Gen}, {h.dut, l.DUT}} {
		link, err := end.h.LinkByName(end.name)
		if err != nil {
			return fmt.Errorf("find %s: %w", end.name, err)
		}
		if link.Attrs().MTU == mtu {
			continue
		}
		if err := end.h.LinkSetMTU(link, mtu); err != nil {
			return fmt.Errorf("set the MTU of %s to %d: %w", end.name, mtu, err)
		}
	}
	return nil
}

// setupEnd gives one veth end its address and its peer's static neighbour
// entry, and brings it up. It returns the interface index.
func setupEnd(h *netlink.Handle, name string, ip, peerIP net.IP, peerMAC net.HardwareAddr) (int, error) {
	link, err := h.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("find %s: %w", name, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}}
	if err := h.AddrAdd(link, addr); err != nil {
		return 0, fmt.Errorf("add address %s to %s: %w", addr.IPNet, name, err)
	}
	neigh := &netlink.Neigh{
		LinkIndex:    link.Attrs().Index,
		Family:       unix.AF_INET,
		State:        netlink.NUD_PERMANENT,
		IP:           peerIP,
		HardwareAddr: peerMAC,
	}
	if err := h.NeighAdd(neigh); err != nil {
		return 0, fmt.Errorf("add neighbour %s lladdr %s on %s: %w", peerIP, peerMAC, name, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return 0, fmt.Errorf("bring %s up: %w", name, err)
	}
	return link.Attrs().Index, nil
}

// enableGRO turns GRO on for one end of every link, in the current namespace,
// and checks that the kernel took it: without it (and without an XDP program)
// veth drops frames that arrive by ndo_xdp_xmit.
func (b *Bed) enableGRO(end func(Link) string) error {
	et, err := ethtool.NewEthtool()
	if err != nil {
		return fmt.Errorf("open ethtool socket: %w", err)
	}
	defer et.Close()
	for _, l := range b.Links {
		dev := end(l)
		// The kernel recomputes a device's features on other changes too
		// (the peer coming up, say); a request that was overtaken by one
		// is made again, a few times.
		var feat map[string]bool
		for try := 0; try < 5 && !feat["rx-gro"]; try++ {
			if try > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			if err := et.Change(dev, map[string]bool{"rx-gro": true}); err != nil {
				return fmt.Errorf("enable GRO on %s: %w", dev, err)
			}
			if feat, err = et.Features(dev); err != nil {
				return fmt.Errorf("read features of %s: %w", dev, err)
			}
		}
		if !feat["rx-gro"] {
			return fmt.Errorf("GRO stays off on %s: XDP-redirected frames would be dropped", dev)
		}
	}
	return nil
}

// Open describes the existing bed called name.
func Open(name string) (*Bed, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	b := &Bed{Name: name, GenNS: GenNS(name), DUTNS: DUTNS(name)}
	genOK, dutOK := nsExists(b.GenNS), nsExists(b.DUTNS)
	switch {
	case !genOK && !dutOK:
		return nil, &NotFoundError{Name: name, Namespace: b.DUTNS}
	case !genOK:
		return nil, &NotFoundError{Name: name, Namespace: b.GenNS, Partial: true}
	case !dutOK:
		return nil, &NotFoundError{Name: name, Namespace: b.DUTNS, Partial: true}
	}
	h, err := b.openHandles()
	if err != nil {
		return nil, err
	}
	defer h.close()
	links, err := h.gen.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list interfaces in %s: %w", b.GenNS, err)
	}
	for _, gl := range links {
		k, ok := strings.CutPrefix(gl.Attrs().Name, "gen")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || gl.Type() != "veth" {
			continue
		}
		l := Link{Gen: gl.Attrs().Name, DUT: "dut" + k, GenMAC: gl.Attrs().HardwareAddr, GenIndex: gl.Attrs().Index, GenIP: linkIP(n, 1)}
		dl, err := h.dut.LinkByName(l.DUT)
		if err != nil {
			return nil, fmt.Errorf("test bed %s: %s has no peer %s in %s: %w", name, l.Gen, l.DUT, b.DUTNS, err)
		}
		l.DUTMAC, l.DUTIndex, l.DUTIP = dl.Attrs().HardwareAddr, dl.Attrs().Index, linkIP(n, 2)
		if b.MTU == 0 || dl.Attrs().MTU < b.MTU {
			b.MTU = dl.Attrs().MTU
		}
		if a := firstIPv4(h.gen, gl); a != nil {
			l.GenIP = a
		}
		if a := firstIPv4(h.dut, dl); a != nil {
			l.DUTIP = a
		}
		b.Links = append(b.Links, l)
	}
	if len(b.Links) == 0 {
		return nil, fmt.Errorf("test bed %s has no genK/dutK veth pairs; remove it with: xdpeng testbed down --name %s", name, name)
	}
	sort.Slice(b.Links, func(i, j int) bool { return b.Links[i].GenIndex < b.Links[j].GenIndex })
	err = Do(b.DUTNS, func() error {
		info, err := netdev.Lookup(b.Links[0].DUT)
		if err != nil {
			return err
		}
		b.Queues = info.RxQueues
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := b.readNAPI(h.dutNS); err != nil {
		return nil, err
	}
	if online, err := cpuset.Online(); err == nil && len(online) > 0 {
		b.GenCPUs = []int{online[0]}
		if len(b.DUTCPUs) == 0 {
			b.DUTCPUs = []int{online[len(online)-1]}
		}
	}
	return b, nil
}

func firstIPv4(h *netlink.Handle, l netlink.Link) net.IP {
	addrs, err := h.AddrList(l, unix.AF_INET)
	if err != nil || len(addrs) == 0 {
		return nil
	}
	return addrs[0].IP.To4()
}

// Down removes the bed: the veth pairs, then both namespaces. It is
// idempotent: what is already gone is not an error.
func (b *Bed) Down() error { return Down(b.Name) }

// Down removes the bed called name; see (*Bed).Down.
func Down(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	var errs []error
	for _, ns := range []string{GenNS(name), DUTNS(name)} {
		if err := removeNS(ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove test bed %s: %w", name, err)
	}
	return nil
}

// removeNS deletes the veths in a namespace, then the namespace. The veths are
// deleted first because the kernel destroys a namespace asynchronously, and
// not at all while a process or socket still holds it; deleting a veth takes
// its peer along at once.
func removeNS(ns string) error {
	if !nsExists(ns) {
		return nil
	}
	var errs []error
	handle, err := netns.GetFromName(ns)
	if err == nil {
		// A `testbed up` killed between creating the file and mounting the
		// namespace on it leaves a plain file: nothing to delete inside.
		if isNamespace(int(handle)) {
			errs = append(errs, deleteVeths(ns, handle))
		}
		handle.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("open namespace %s: %w", ns, err))
	}
	errs = append(errs, deleteNamed(ns))
	return errors.Join(errs...)
}

// isNamespace reports whether fd refers to a namespace (nsfs), not to the
// empty file a namespace is mounted on.
func isNamespace(fd int) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(fd, &st) == nil && st.Type == unix.NSFS_MAGIC
}

func deleteVeths(ns string, handle netns.NsHandle) error {
	h, err := netlink.NewHandleAt(handle)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", ns, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return fmt.Errorf("list interfaces in %s: %w", ns, err)
	}
	var errs []error
	for _, l := range links {
		if l.Type() != "veth" {
			continue
		}
		// The peer may have gone with an earlier deletion in this loop.
		if err := h.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", l.Attrs().Name, ns, err))
		}
	}
	return errors.Join(errs...)
}

// List returns the names of the beds found under /var/run/netns, i.e. each
// NAME for which NAME-gen or NAME-dut exists, sorted. Incomplete beds are
// listed too, so that they can be removed.
func List() ([]string, error) {
	entries, err := os.ReadDir(NetnsDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", NetnsDir, err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		base, ok := strings.CutSuffix(n, "-gen")
		if !ok {
			base, ok = strings.CutSuffix(n, "-dut")
		}
		if ok && ValidateName(base) == nil && !slices.Contains(names, base) {
			names = append(names, base)
		}
	}
	sort.Strings(names)
	return names, nil
}

// InGen runs fn in the bed's generator namespace; see Do.
func (b *Bed) InGen(fn func() error) error { return Do(b.GenNS, fn) }

// InDUT runs fn in the bed's DUT namespace; see Do.
func (b *Bed) InDUT(fn func() error) error { return Do(b.DUTNS, fn) }

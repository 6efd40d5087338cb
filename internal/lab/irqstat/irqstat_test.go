package irqstat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// procRoot makes a proc file system's root whose softirqs file holds text.
func procRoot(t *testing.T, text []byte) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "softirqs"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func readSoftirqs(t *testing.T, name string) Softirqs {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSoftirqsFrom(procRoot(t, b))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readInterrupts(t *testing.T, name string) Interrupts {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := ParseInterrupts(f)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestParseSoftirqs(t *testing.T) {
	s := readSoftirqs(t, "softirqs-2cpu")
	if !cmp.Equal(s.CPUs, []int{0, 1}) {
		t.Errorf("CPUs %v", s.CPUs)
	}
	if got := s.Counts["NET_RX"]; !cmp.Equal(got, []uint64{50584216, 18203321}) {
		t.Errorf("NET_RX %v", got)
	}
	if got := s.Counts["NET_TX"]; len(got) != 2 {
		t.Errorf("NET_TX %v", got)
	}
	if len(s.Counts) != 10 {
		t.Errorf("%d softirqs, want the 10 of the file", len(s.Counts))
	}
}

func TestParseInterrupts(t *testing.T) {
	in := readInterrupts(t, "interrupts-nic-3cpu")
	if !cmp.Equal(in.CPUs, []int{0, 1, 3}) {
		t.Errorf("CPUs %v, want 0 1 3 (CPU 2 offline)", in.CPUs)
	}
	byIRQ := map[string]Interrupt{}
	for _, l := range in.Lines {
		byIRQ[l.IRQ] = l
	}
	for _, want := range []Interrupt{
		{IRQ: "16", Counts: []uint64{112, 0, 27}, Desc: "IO-APIC 16-fasteoi ehci_hcd:usb1, i801_smbus"},
		{IRQ: "66", Counts: []uint64{0, 2201547, 4294967000}, Desc: "IR-PCI-MSI 1572866-edge ens3-TxRx-1"},
		{IRQ: "91", Counts: []uint64{88123, 0, 0}, Desc: "IR-PCI-MSIX-0000:3b:00.0 1-edge mlx5_comp0@pci:0000:3b:00.0"},
		{IRQ: "LOC", Counts: []uint64{1203321, 1198034, 1187654}, Desc: "Local timer interrupts"},
		{IRQ: "ERR", Counts: []uint64{0, 0, 0}, Desc: ""},
	} {
		if diff := cmp.Diff(want, byIRQ[want.IRQ]); diff != "" {
			t.Errorf("line %s (-want +got):\n%s", want.IRQ, diff)
		}
	}
	if len(in.Lines) != 15 {
		t.Errorf("%d lines, want 15", len(in.Lines))
	}
}

func TestParseRefusesGarbage(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "empty"},
		{"no header", "NET_RX: 1 2\n", "not a CPU column"},
		{"short softirq line", "CPU0 CPU1\nNET_RX: 1\n", "1 counts for 2 CPUs"},
		{"no colon", "CPU0\nNET_RX 1\n", "no colon"},
		{"no count", "CPU0\n 24: IO-APIC 5-edge x\n", "no count"},
	} {
		_, errS := ReadSoftirqsFrom(procRoot(t, []byte(tc.text)))
		_, errI := ParseInterrupts(strings.NewReader(tc.text))
		// Each case is bad for at least the parser it was written for.
		if (errS == nil || !strings.Contains(errS.Error(), tc.want)) && (errI == nil || !strings.Contains(errI.Error(), tc.want)) {
			t.Errorf("%s: softirqs %v, interrupts %v; want an error saying %q", tc.name, errS, errI, tc.want)
		}
	}
}

func TestMatch(t *testing.T) {
	nic := readInterrupts(t, "interrupts-nic-3cpu")
	virtio := readInterrupts(t, "interrupts-virtio-2cpu")
	irqs := func(in Interrupts) []string {
		var out []string
		for _, l := range in.Lines {
			out = append(out, l.IRQ)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		in    Interrupts
		names []string
		want  []string
	}{
		// ixgbe names its lines after the device; ens3f1 is another one.
		{"ixgbe", nic, []string{"ens3", "0000:03:00.0"}, []string{"64", "65", "66"}},
		// i40e: queue lines by name, the misc line by PCI address.
		{"i40e", nic, []string{"ens4f0", "0000:04:00.0"}, []string{"70", "71"}},
		// mlx5 names lines after the PCI function only.
		{"mlx5", nic, []string{"ens1f0np0", "0000:3b:00.0"}, []string{"90", "91"}},
		// virtio-net after the virtio device (virtio2 here, not virtio21).
		{"virtio", virtio, []string{"eth0", "virtio2"}, []string{"37", "38", "39"}},
		{"veth", nic, []string{"dut0"}, nil},
		{"no names", nic, nil, nil},
	} {
		if got := irqs(tc.in.Match(tc.names...)); !cmp.Equal(got, tc.want) {
			t.Errorf("%s: Match(%v) = %v, want %v", tc.name, tc.names, got, tc.want)
		}
	}
}

func TestDeviceNames(t *testing.T) {
	sys := t.TempDir()
	pci := filepath.Join(sys, "devices", "pci0000:00", "0000:00:03.0", "virtio2")
	if err := os.MkdirAll(filepath.Join(pci, "net", "eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	net := filepath.Join(sys, "class", "net")
	for _, dev := range []string{"eth0", "veth0"} {
		if err := os.MkdirAll(filepath.Join(net, dev), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(pci, filepath.Join(net, "eth0", "device")); err != nil {
		t.Fatal(err)
	}
	if got := deviceNames(net, "eth0"); !cmp.Equal(got, []string{"eth0", "virtio2"}) {
		t.Errorf("eth0: %v", got)
	}
	if got := deviceNames(net, "veth0"); !cmp.Equal(got, []string{"veth0"}) {
		t.Errorf("veth0 (no device link): %v", got)
	}
	if got := deviceNames(net, "nosuch"); !cmp.Equal(got, []string{"nosuch"}) {
		t.Errorf("missing device: %v", got)
	}
}

func TestRatesBetween(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	names := []string{"ens3", "0000:03:00.0"}
	prev := Sample{Time: t0, Softirqs: readSoftirqs(t, "softirqs-2cpu"), Device: readInterrupts(t, "interrupts-nic-3cpu").Match(names...)}
	cur := Sample{Time: t0.Add(2 * time.Second), Softirqs: readSoftirqs(t, "softirqs-2cpu-later"), Device: readInterrupts(t, "interrupts-nic-3cpu-later").Match(names...)}
	r, err := RatesBetween(prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	want := Rates{
		Interval: 2 * time.Second,
		NetRx:    []CPURate{{0, (50585960 - 50584216) / 2.0}, {1, 0}},
		NetTx:    []CPURate{{0, 0}, {1, 0}},
		Device: DeviceRates{Lines: []IRQRate{
			{IRQ: "64", Desc: "IR-PCI-MSI 1572864-edge ens3", PerCPU: []CPURate{{0, 0}, {1, 0}, {3, 0}}},
			{IRQ: "65", Desc: "IR-PCI-MSI 1572865-edge ens3-TxRx-0", PerCPU: []CPURate{{0, 10000}, {1, 0}, {3, 0}}, Total: 10000},
			// CPU 3's count wrapped at 2^32: 1000 more.
			{IRQ: "66", Desc: "IR-PCI-MSI 1572866-edge ens3-TxRx-1", PerCPU: []CPURate{{0, 0}, {1, 15000}, {3, 500}}, Total: 15500},
		}},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
	if got := r.Device.Total(); got != 25500 || r.Device.None() {
		t.Errorf("device total %v, None %v; want 25500, false", got, r.Device.None())
	}

	// i40e's queue line was freed and requested again: a reset, not a wrap.
	i40e := []string{"ens4f0", "0000:04:00.0"}
	prev.Device = readInterrupts(t, "interrupts-nic-3cpu").Match(i40e...)
	cur.Device = readInterrupts(t, "interrupts-nic-3cpu-later").Match(i40e...)
	r, err = RatesBetween(prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Device.Lines) != 2 || r.Device.Lines[1].PerCPU[0].PerSec != 3.5 {
		t.Errorf("i40e after a reset: %+v, want 7 counts in 2 s on CPU 0 of line 71", r.Device.Lines)
	}

	// A veth: no line, and the rates say so.
	prev.Device = readInterrupts(t, "interrupts-nic-3cpu").Match("dut0")
	cur.Device = readInterrupts(t, "interrupts-nic-3cpu-later").Match("dut0")
	r, err = RatesBetween(prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Device.None() || r.Device.Total() != 0 {
		t.Errorf("veth: %+v, want no interrupts", r.Device)
	}

	if _, err := RatesBetween(cur, prev); err == nil {
		t.Error("samples in the wrong order accepted")
	}
}

func TestDelta(t *testing.T) {
	for _, tc := range []struct{ prev, cur, want uint64 }{
		{10, 15, 5},
		{4294967000, 704, 1000},               // 32-bit wrap
		{1_000_000_000, 7, 7},                 // went down by far: reset
		{1 << 40, 5, 5},                       // not a 32-bit count: reset
		{1 << 40, 1<<40 + 9, 9},               // wide counts work too
		{4294967295, 0, 1},                    // wrap to exactly 0
		{2_000_000_000, 1_000_000, 1_000_000}, // 2^32-2e9+1e6 > 2^31: reset
	} {
		if got := delta(tc.prev, tc.cur); got != tc.want {
			t.Errorf("delta(%d, %d) = %d, want %d", tc.prev, tc.cur, got, tc.want)
		}
	}
}

// TestMonitorHere reads this machine's files: the softirq rates cover
// every CPU, and a device with no interrupt line says so.
func TestMonitorHere(t *testing.T) {
	if _, err := os.Stat(SoftirqsPath); err != nil {
		t.Skipf("no %s here: %v", SoftirqsPath, err)
	}
	m, err := NewMonitor("lo")
	if err != nil {
		t.Fatal(err)
	}
	first := m.last
	r, err := m.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NetRx) != len(first.Softirqs.CPUs) || r.Interval <= 0 {
		t.Errorf("rates %+v: want one NET_RX rate per CPU column (%v)", r, first.Softirqs.CPUs)
	}
	// The loopback device has no interrupts anywhere.
	if !r.Device.None() || r.Device.Name != "lo" || !cmp.Equal(r.Device.Names, []string{"lo"}) {
		t.Errorf("lo: %+v, want no interrupts", r.Device)
	}
}

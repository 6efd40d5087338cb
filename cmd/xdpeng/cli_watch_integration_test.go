package main

// The observability flags through the built binary in a test bed: the
// Prometheus endpoint of every long-running command (scraped from inside
// the namespace, equal to the summary at the end, lint-clean, gone with
// the process however it ends), the pcap capture, the errors view, the
// interrupt rates and xdpeng stats.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// freeAddr returns 127.0.0.1:PORT with a port nothing in namespace ns
// listens on.
func freeAddr(t *testing.T, ns string) string {
	t.Helper()
	var addr string
	err := testbed.Do(ns, func() error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr = ln.Addr().String()
		return ln.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// portFree fails the test if addr cannot be bound in namespace ns: the
// endpoint of a command that ended must be gone.
func portFree(t *testing.T, ns, addr string) {
	t.Helper()
	err := testbed.Do(ns, func() error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		return ln.Close()
	})
	if err != nil {
		t.Errorf("%s is not free after the command ended: %v", addr, err)
	}
}

// scrape GETs /metrics from addr in namespace ns: the socket is made in
// the namespace, where 127.0.0.1 is the command's.
func scrape(ns, addr string) (string, error) {
	var conn net.Conn
	err := testbed.Do(ns, func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, time.Second)
		return err
	})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	if err := req.Write(conn); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s: %s", resp.Status, b)
	}
	return string(b), nil
}

// waitScrape scrapes until the endpoint of p answers (at most 10 s, a
// guard against a hang) and returns the first answer.
func waitScrape(t *testing.T, p *proc, ns, addr string) string {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !p.exited(); time.Sleep(20 * time.Millisecond) {
		var body string
		if body, err = scrape(ns, addr); err == nil {
			return body
		}
	}
	p.cmd.Process.Kill()
	t.Fatalf("no metrics at %s (%v):\n%s", addr, err, p.wait(t))
	return ""
}

// lintMetrics fails the test for anything the client library's linter,
// the checks of promtool check metrics, finds in an exposition.
func lintMetrics(t *testing.T, body string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("lint: %v\n%s", err, body)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// startAttached starts argv in namespace ns, which holds dut0, and waits
// until dut0 has an XDP program: the command is ready for traffic.
func startAttached(t *testing.T, ns string, argv ...string) *proc {
	t.Helper()
	p := startIn(t, ns, argv...)
	if _, ok := waitHooks(t, ns, "dut0", func(h testbedtest.Hooks) bool { return h.XDPProg != 0 }); !ok {
		p.signal(t, syscall.SIGKILL)
		t.Fatalf("nothing attached:\n%s", p.wait(t))
	}
	return p
}

// interrupt stops p with SIGINT and returns how it ended; the test fails
// unless it exited 0.
func interrupt(t *testing.T, p *proc) result {
	t.Helper()
	p.signal(t, syscall.SIGINT)
	r := p.wait(t)
	if r.code != 0 {
		t.Fatalf("%v:\n%s", p.cmd.Args, r)
	}
	return r
}

// metricValue returns the value of the series of name whose labels
// include every one of labels ("queue=\"0\""), and whether there is one.
func metricValue(body, name string, labels ...string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return v, err == nil
	}
	return 0, false
}

// TestCLIMetricsRxdrop: while rxdrop --metrics runs, the received-frames
// counter of queue 0 rises under traffic; once the generator has stopped
// it equals the JSON summary's rx_packets; the exposition is lint-clean;
// and the port is free again after the command ends, by SIGINT or kill -9.
func TestCLIMetricsRxdrop(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	addr := freeAddr(t, ns)
	p := startIn(t, ns, bin, "rxdrop", "-i", "dut0", "--json", "--metrics", addr)
	body := waitScrape(t, p, ns, addr)
	lintMetrics(t, body)
	rx := func() float64 {
		t.Helper()
		body, err := scrape(ns, addr)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := metricValue(body, "xdpeng_rx_packets_total", `queue="0"`, `interface="dut0"`, `mode="rxdrop"`)
		if !ok {
			t.Fatalf("no xdpeng_rx_packets_total of queue 0:\n%s", body)
		}
		return v
	}
	if v := rx(); v != 0 {
		t.Errorf("%v frames received before the generator started", v)
	}
	g := startIn(t, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "600000", "--rate", "200000", "--json")
	// It rises: above zero, then above that, while the generator sends
	// (the waits only guard against a hang).
	var seen []float64
	for _, above := range []func() float64{func() float64 { return 0 }, func() float64 { return seen[0] }} {
		floor := above()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if v := rx(); v > floor {
				seen = append(seen, v)
				break
			}
			if time.Now().After(deadline) || g.exited() {
				t.Fatalf("queue 0's counter did not rise above %v while the generator sent: %v", floor, seen)
			}
		}
	}
	t.Logf("queue 0 received %v, then %v", seen[0], seen[1])
	if r := g.wait(t); r.code != 0 {
		t.Fatalf("gen:\n%s", r)
	}
	// The frames in flight arrive: two scrapes 200 ms apart agree.
	last := rx()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		v := rx()
		if v == last {
			break
		}
		last = v
	}
	body, err := scrape(ns, addr)
	if err != nil {
		t.Fatal(err)
	}
	lintMetrics(t, body)
	r := interrupt(t, p)
	var sum xskSummary
	summaryLine(t, r.stdout, &sum)
	if float64(sum.RxPackets) != last || sum.RxPackets == 0 {
		t.Errorf("scraped %v frames received after the generator stopped, the summary says %d", last, sum.RxPackets)
	}
	if v, _ := metricValue(body, "xdpeng_xsk_rx_ring_full_total", `queue="0"`); v != float64(sum.XDPStats.RxRingFull) {
		t.Errorf("scraped rx_ring_full %v, the summary says %d", v, sum.XDPStats.RxRingFull)
	}
	portFree(t, ns, addr)

	// kill -9: the kernel closes the socket.
	p = startIn(t, ns, bin, "rxdrop", "-i", "dut0", "--metrics", addr)
	waitScrape(t, p, ns, addr)
	p.signal(t, syscall.SIGKILL)
	if r := p.wait(t); r.signal != syscall.SIGKILL {
		t.Errorf("not killed:\n%s", r)
	}
	portFree(t, ns, addr)
}

// TestCLIMetricsEveryCommand starts each long-running command with
// --metrics and scrapes its own counters, lint-clean; after it ends the
// port is free. A port already taken is refused before anything is
// attached.
func TestCLIMetricsEveryCommand(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	bin := buildCLI(t)
	for _, tc := range []struct {
		name   string
		gen    bool // run in the generator's namespace
		args   []string
		metric string
	}{
		{"count", false, []string{"count", "-i", "dut0"}, "xdpeng_count_malformed_frames_total"},
		{"l2fwd", false, []string{"l2fwd", "-i", "dut0"}, "xdpeng_tx_packets_total"},
		{"fwd", false, []string{"fwd", "-i", "dut0", "-o", "dut1"}, "xdpeng_xsk_output_tx_invalid_descs_total"},
		{"txonly", false, []string{"txonly", "-i", "dut0", "-d", "20s", "--rate", "1000"}, "xdpeng_tx_packets_total"},
		{"kern", false, []string{"kern", "drop", "-i", "dut0", "-e"}, "xdpeng_xdp_errors_unrecorded_total"},
		{"gen", true, []string{"gen", "-i", "gen0", "-d", "20s", "--rate", "1000"}, "xdpeng_gen_sent_bytes_total"},
		{"stats", false, []string{"stats", "-i", "dut0,dut1"}, "xdpeng_netdev_rx_packets_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := bed.DUTNS
			if tc.gen {
				ns = bed.GenNS
			}
			before := readHooks(t, bed.DUTNS, "dut0")
			addr := freeAddr(t, ns)
			p := startIn(t, ns, append(append([]string{bin}, tc.args...), "--metrics", addr)...)
			body := waitScrape(t, p, ns, addr)
			if _, ok := metricValue(body, tc.metric); !ok {
				t.Errorf("no %s:\n%s", tc.metric, body)
			}
			lintMetrics(t, body)
			// A second one on the same port is refused, and attaches
			// nothing (the first's program stays).
			held := readHooks(t, bed.DUTNS, "dut0")
			r := runIn(t, 20*time.Second, ns, append(append([]string{bin}, tc.args...), "--metrics", addr, "-d", "1s")...)
			if r.code != 1 || !strings.Contains(r.stderr, "xdpeng: metrics: listen on") || !strings.Contains(r.stderr, "address already in use") ||
				!strings.Contains(r.stderr, "a port nothing listens on") {
				t.Errorf("a second %s on a taken port:\n%s", tc.name, r)
			}
			if h := readHooks(t, bed.DUTNS, "dut0"); !h.Equal(held) {
				t.Errorf("dut0's hooks changed from %+v to %+v by a command refused for its port", held, h)
			}
			p.signal(t, syscall.SIGINT)
			if r := p.wait(t); r.code != 0 {
				t.Errorf("%s:\n%s", tc.name, r)
			}
			portFree(t, ns, addr)
			if h, ok := waitHooks(t, bed.DUTNS, "dut0", before.Equal); !ok {
				t.Errorf("hooks %+v after the command ended, %+v before", h, before)
			}
		})
	}
}

// TestCLICapture: rxdrop -w --capture-count 1000 with gen sending writes
// 1000 frames that are byte for byte the generator's, which tcpdump reads
// back; at full rate, every frame received is written, skipped or
// discarded, and the run's own accounting still closes.
func TestCLICapture(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	dir := t.TempDir()
	ns := bed.DUTNS
	link := bed.Links[0]

	t.Run("count", func(t *testing.T) {
		const size, ports = 128, 4
		file := filepath.Join(dir, "f.pcap")
		p := startAttached(t, ns, bin, "rxdrop", "-i", "dut0", "-w", file, "--capture-count", "1000", "--json")
		g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "5000", "--rate", "100000",
			"--size", strconv.Itoa(size), "--ports", strconv.Itoa(ports), "--json")
		if g.code != 0 {
			t.Fatalf("gen:\n%s", g)
		}
		// The frames' length as sent, without the FCS (whether --size
		// counts one or not).
		var gs struct {
			TxPackets uint64 `json:"tx_packets"`
			TxBytes   uint64 `json:"tx_bytes"`
		}
		summaryLine(t, g.stdout, &gs)
		if gs.TxPackets != 5000 {
			t.Fatalf("gen sent %d frames, want 5000", gs.TxPackets)
		}
		frameLen := int(gs.TxBytes / gs.TxPackets)
		time.Sleep(300 * time.Millisecond) // let the last frames arrive
		r := interrupt(t, p)
		var sum xskSummary
		summaryLine(t, r.stdout, &sum)
		c := sum.Capture
		if c == nil || c.Written != 1000 || c.File != file || c.Format != "pcap" {
			t.Fatalf("capture summary %+v, want 1000 frames written to %s", c, file)
		}
		if got := c.Written + c.Skipped + c.Discarded + c.AfterStop; got != sum.RxPackets {
			t.Errorf("capture accounts for %d frames (%+v), rxdrop received %d", got, *c, sum.RxPackets)
		}
		// What gen sent: its frame with each of the ports.
		want, err := packet.UDPVariants(packet.UDPConfig{
			SrcMAC: link.GenMAC, DstMAC: link.DUTMAC,
			SrcIP: netip.MustParseAddr(link.GenIP.String()), DstIP: netip.MustParseAddr(link.DUTIP.String()),
			SrcPort: 1234, DstPort: 9, Size: frameLen,
		}, ports)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pr, err := pcapgo.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; ; n++ {
			data, ci, err := pr.ReadPacketData()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("record %d: %v", n, err)
			}
			port := int(data[36])<<8 | int(data[37]) // UDP destination port behind a 20-byte IPv4 header
			if port < 9 || port >= 9+ports || ci.Length != frameLen || !bytes.Equal(data, want[port-9]) {
				t.Errorf("record %d (%d bytes of %d) is not a frame gen sent:\n got %x\nwant %x", n, len(data), ci.Length, data, want[min(max(port-9, 0), ports-1)])
				break
			}
		}
		if n != 1000 {
			t.Errorf("the file has %d records, want 1000", n)
		}
		tcpdump, err := exec.LookPath("tcpdump")
		if err != nil {
			t.Logf("tcpdump is not installed, so only gopacket read the file: %v", err)
			return
		}
		out, err := exec.Command(tcpdump, "-r", file, "-nn").Output()
		if err != nil {
			t.Fatalf("tcpdump -r: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		wantLine := fmt.Sprintf("IP %s.1234 > %s.", link.GenIP, link.DUTIP)
		udpLen := fmt.Sprintf("UDP, length %d", frameLen-14-20-8)
		if len(lines) != 1000 || !strings.Contains(lines[0], wantLine) || !strings.Contains(lines[0], udpLen) {
			t.Errorf("tcpdump read %d frames, the first %q; want 1000 like %q ... %s", len(lines), lines[0], wantLine, udpLen)
		}
	})

	t.Run("pcapng", func(t *testing.T) {
		file := filepath.Join(dir, "f.pcapng")
		p := startAttached(t, ns, bin, "rxdrop", "-i", "dut0", "-w", file, "--capture-count", "100", "--json")
		g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "500", "--rate", "100000", "--json")
		if g.code != 0 {
			t.Fatalf("gen:\n%s", g)
		}
		time.Sleep(300 * time.Millisecond)
		r := interrupt(t, p)
		var sum xskSummary
		summaryLine(t, r.stdout, &sum)
		c := sum.Capture
		if c == nil || c.Written != 100 || c.Format != "pcapng" {
			t.Fatalf("capture summary %+v, want 100 frames written as pcapng", c)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		nr, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatalf("not a pcapng file: %v", err)
		}
		n := 0
		for ; ; n++ {
			data, ci, err := nr.ReadPacketData()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("record %d: %v", n, err)
			}
			if ci.InterfaceIndex != 0 || len(data) < 42 || !bytes.Equal(data[0:6], link.DUTMAC) {
				t.Fatalf("record %d: interface %d, %x; want interface 0, a frame to dut0", n, ci.InterfaceIndex, data)
			}
		}
		in, err := nr.Interface(0)
		if n != 100 || nr.NInterfaces() != 1 || err != nil || in.Name != "dut0" || in.Description != "dut0 rx queue 0" {
			t.Errorf("%d records, %d interfaces, the first %q %q (%v); want 100 records on dut0, rx queue 0", n, nr.NInterfaces(), in.Name, in.Description, err)
		}
		// The statistics block: the frames offered to the ring (a Put
		// running as the capture stopped may be in neither count).
		if st := in.Statistics; st.PacketsReceived < 100 || st.PacketsReceived > c.Written+c.Skipped+c.Discarded || st.PacketsDropped > c.Skipped {
			t.Errorf("interface statistics: received %d, dropped %d; the capture wrote %d, skipped %d, discarded %d",
				st.PacketsReceived, st.PacketsDropped, c.Written, c.Skipped, c.Discarded)
		}
		if tcpdump, err := exec.LookPath("tcpdump"); err == nil {
			out, err := exec.Command(tcpdump, "-r", file, "-nn").Output()
			if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || len(lines) != 100 {
				t.Errorf("tcpdump -r: %v, %d lines; want 100", err, len(lines))
			}
		}
	})

	t.Run("full rate", func(t *testing.T) {
		file := filepath.Join(dir, "full.pcap")
		p := startAttached(t, ns, bin, "rxdrop", "-i", "dut0", "-w", file, "--snaplen", "32", "--json")
		// Unbounded rate; 500000 records of 48 bytes in the file at most.
		g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "500000", "--json")
		if g.code != 0 {
			t.Fatalf("gen:\n%s", g)
		}
		var gs genSummary
		summaryLine(t, g.stdout, &gs)
		time.Sleep(300 * time.Millisecond)
		r := interrupt(t, p)
		var sum xskSummary
		summaryLine(t, r.stdout, &sum)
		c := sum.Capture
		if c == nil {
			t.Fatalf("no capture in the summary: %s", r.stdout)
		}
		t.Logf("sent %d, received %d, socket drops %d; capture written %d, skipped %d, discarded %d",
			gs.TxPackets, sum.RxPackets, sum.XDPStats.Drops(), c.Written, c.Skipped, c.Discarded)
		// Every frame received was offered to the capture: written, or
		// skipped (the ring was full), never waited for.
		if c.AfterStop != 0 || c.Discarded != 0 || c.Written+c.Skipped != sum.RxPackets {
			t.Errorf("capture %+v does not account for the %d frames received", *c, sum.RxPackets)
		}
		// The data path's accounting closes with the capture on.
		if got := sum.RxPackets + sum.XDPStats.Drops() + *gs.XmitErrors + *gs.Lost; got != gs.TxPackets {
			t.Errorf("sent %d != received %d + socket drops %d + xmit errors %d + lost %d", gs.TxPackets, sum.RxPackets,
				sum.XDPStats.Drops(), *gs.XmitErrors, *gs.Lost)
		}
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		// 24-byte header, then 16 bytes and the 32 captured per record.
		if want := int64(24 + c.Written*(16+32)); st.Size() != want {
			t.Errorf("the file has %d bytes, %d written frames make %d", st.Size(), c.Written, want)
		}
	})

	t.Run("a refused run leaves files alone", func(t *testing.T) {
		file := filepath.Join(dir, "never.pcap")
		r := runIn(t, 20*time.Second, ns, bin, "rxdrop", "-i", "dut0", "-q", "0", "-z", "-w", file, "-d", "1s")
		if r.code != 1 || !strings.Contains(r.stderr, "zero-copy") {
			t.Fatalf("zero-copy on veth was not refused:\n%s", r)
		}
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("a run that never started left %s (%v)", file, err)
		}
		old := filepath.Join(dir, "old.pcap")
		if err := os.WriteFile(old, []byte("an older capture"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = runIn(t, 20*time.Second, ns, bin, "rxdrop", "-i", "dut0", "-q", "0", "-z", "-w", old, "-d", "1s")
		if b, err := os.ReadFile(old); r.code != 1 || err != nil || string(b) != "an older capture" {
			t.Errorf("a refused run changed %s to %q (%v):\n%s", old, b, err, r)
		}
		// A path that cannot be written is refused before anything is
		// attached: no header, no summary.
		for path, want := range map[string]string{
			filepath.Join(dir, "nosuchdir", "f.pcap"): "directory " + filepath.Join(dir, "nosuchdir") + " does not exist",
			dir:               dir + " is a directory",
			"/proc/nope.pcap": "cannot create or write it",
		} {
			r = runIn(t, 20*time.Second, ns, bin, "rxdrop", "-i", "dut0", "-w", path, "-d", "1s")
			if r.code != 1 || !strings.Contains(r.stderr, "-w "+path+": "+want) || r.stdout != "" {
				t.Errorf("a capture into %s, want it refused with %q and nothing on stdout:\n%s", path, want, r)
			}
		}
	})
}

// TestCLIErrors: a redirect to a device that is down shows ENETDOWN in
// kern's errors view with the exact count of frames lost; rxdrop -e under
// overload shows its sockets' drops by errno, the same counts as their
// XDP statistics.
func TestCLIErrors(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	bin := buildCLI(t)
	ns := bed.DUTNS
	type errorsSummary struct {
		RxPackets uint64 `json:"rx_packets"`
		XDPStats  struct {
			RxDropped  uint64 `json:"rx_dropped"`
			RxRingFull uint64 `json:"rx_ring_full"`
		} `json:"xdp_stats"`
		XDPErrors *struct {
			Attached []string `json:"attached"`
			Missing  []struct {
				Tracepoint, Reason string
			} `json:"missing"`
			Lost    uint64 `json:"lost"`
			Reasons []struct {
				Tracepoint string `json:"tracepoint"`
				Detail     string `json:"detail"`
				Frames     uint64 `json:"frames"`
			} `json:"reasons"`
		} `json:"xdp_errors"`
	}

	t.Run("redirect to a device that is down", func(t *testing.T) {
		const n = 5000
		err := bed.InDUT(func() error {
			l, err := netlink.LinkByName("dut1")
			if err != nil {
				return err
			}
			return netlink.LinkSetDown(l)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			bed.InDUT(func() error {
				l, err := netlink.LinkByName("dut1")
				if err != nil {
					return err
				}
				return netlink.LinkSetUp(l)
			})
		})
		p := startAttached(t, ns, bin, "kern", "redirect", "-i", "dut0", "-o", "dut1", "-e", "--json", "-n", "0.2")
		g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", strconv.Itoa(n), "--json")
		if g.code != 0 {
			t.Fatalf("gen:\n%s", g)
		}
		time.Sleep(300 * time.Millisecond)
		r := interrupt(t, p)
		var s errorsSummary
		summaryLine(t, r.stdout, &s)
		e := s.XDPErrors
		if e == nil {
			t.Fatalf("no xdp_errors in the summary: %s", r.stdout)
		}
		// Down from the start, which no link change says: a note does.
		if want := "xdpeng: note: dut1 is down (set down): every frame redirected to it is dropped until it is up"; !strings.Contains(r.stderr, want) {
			t.Errorf("no note that dut1 is down, want %q:\n%s", want, r.stderr)
		}
		t.Logf("counted %v, missing %v; received %d, lost %d: %+v", e.Attached, e.Missing, s.RxPackets, e.Lost, e.Reasons)
		if s.RxPackets != n || e.Lost != n || len(e.Reasons) != 1 ||
			e.Reasons[0].Tracepoint != "xdp_redirect_err" || e.Reasons[0].Detail != "ENETDOWN" || e.Reasons[0].Frames != n {
			t.Errorf("%d frames received, lost %d: %+v; want %d, all xdp_redirect_err ENETDOWN", s.RxPackets, e.Lost, e.Reasons, n)
		}
		// The intervals carry the same, spread over them.
		var perInterval uint64
		for _, line := range strings.Split(r.stdout, "\n") {
			var v struct {
				Type      string `json:"type"`
				XDPErrors []struct {
					Detail string `json:"detail"`
					Frames uint64 `json:"frames"`
				} `json:"xdp_errors"`
			}
			if json.Unmarshal([]byte(line), &v) == nil && v.Type == "interval" {
				for _, x := range v.XDPErrors {
					perInterval += x.Frames
				}
			}
		}
		if perInterval > n {
			t.Errorf("the intervals add up to %d lost frames, more than the %d sent", perInterval, n)
		}
		// And the text view names the errno, the target and the count.
		text := runErrorsText(t, bin, bed, n)
		if !strings.Contains(text, "  note: dut1 is down (set down)") || !strings.Contains(text, "xdp_redirect_err ENETDOWN to dut1 through DevMap") || !strings.Contains(text, fmt.Sprintf(": %d\n", n)) {
			t.Errorf("the text summary does not show %d frames lost to ENETDOWN towards dut1:\n%s", n, text)
		}
	})

	t.Run("socket drops", func(t *testing.T) {
		p := startAttached(t, ns, bin, "rxdrop", "-i", "dut0", "--ring-size", "64", "--frames", "128", "-e", "--json")
		if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "-d", "1s", "--json"); g.code != 0 {
			t.Fatalf("gen:\n%s", g)
		}
		time.Sleep(300 * time.Millisecond)
		r := interrupt(t, p)
		var s errorsSummary
		summaryLine(t, r.stdout, &s)
		if s.XDPErrors == nil {
			t.Fatalf("no xdp_errors in the summary: %s", r.stdout)
		}
		got := map[string]uint64{}
		for _, x := range s.XDPErrors.Reasons {
			got[x.Tracepoint+" "+x.Detail] = x.Frames
		}
		t.Logf("xdp stats %+v; errors %v", s.XDPStats, got)
		// A full rx ring is ENOBUFS, an empty fill ring ENOMEM: the
		// same frames as the socket's own counters.
		if got["xdp_redirect_err ENOBUFS"] != s.XDPStats.RxRingFull || got["xdp_redirect_err ENOMEM"] != s.XDPStats.RxDropped ||
			s.XDPErrors.Lost != s.XDPStats.RxRingFull+s.XDPStats.RxDropped {
			t.Errorf("errors %v (lost %d) differ from the sockets' rx_ring_full %d and rx_dropped %d",
				got, s.XDPErrors.Lost, s.XDPStats.RxRingFull, s.XDPStats.RxDropped)
		}
	})
}

// runErrorsText runs kern redirect -e in text once more, with n frames sent
// into the down port, and returns its output.
func runErrorsText(t *testing.T, bin string, bed *testbed.Bed, n int) string {
	t.Helper()
	p := startAttached(t, bed.DUTNS, bin, "kern", "redirect", "-i", "dut0", "-o", "dut1", "-e")
	if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", strconv.Itoa(n)); g.code != 0 {
		t.Fatalf("gen:\n%s", g)
	}
	time.Sleep(300 * time.Millisecond)
	r := interrupt(t, p)
	return r.stdout
}

// TestCLIStats: stats -i dut0 while rxdrop receives what gen sends shows
// veth's queue-0 XDP counters moving with rxdrop's count: over the run,
// the frames redirected are the frames rxdrop received, and the frames
// veth's XDP saw are those plus the sockets' drops.
func TestCLIStats(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	rx := startAttached(t, ns, bin, "rxdrop", "-i", "dut0", "--json")
	st := startIn(t, ns, bin, "stats", "-i", "dut0", "--json", "-n", "0.2")
	if !st.waitOutput(10*time.Second, false, func(s string) bool { return strings.Contains(s, `"type":"interval"`) }) {
		st.signal(t, syscall.SIGKILL)
		t.Fatalf("stats printed no interval:\n%s", st.wait(t))
	}
	if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "300000", "--rate", "300000", "--json"); g.code != 0 {
		t.Fatalf("gen:\n%s", g)
	}
	time.Sleep(500 * time.Millisecond)
	st.signal(t, syscall.SIGINT)
	rx.signal(t, syscall.SIGINT)
	sr, rr := st.wait(t), rx.wait(t)
	if sr.code != 0 || rr.code != 0 {
		t.Fatalf("stats:\n%s\nrxdrop:\n%s", sr, rr)
	}
	var sum xskSummary
	summaryLine(t, rr.stdout, &sum)
	type devRates struct {
		Interface string `json:"interface"`
		Ethtool   []struct {
			Name   string  `json:"name"`
			Delta  uint64  `json:"delta"`
			PerSec float64 `json:"per_sec"`
		} `json:"ethtool"`
	}
	var ss struct {
		Type    string     `json:"type"`
		Devices []devRates `json:"devices"`
	}
	summaryLine(t, sr.stdout, &ss)
	if ss.Type != "summary" || len(ss.Devices) != 1 || ss.Devices[0].Interface != "dut0" {
		t.Fatalf("stats summary %+v", ss)
	}
	delta := map[string]uint64{}
	for _, c := range ss.Devices[0].Ethtool {
		delta[c.Name] = c.Delta
	}
	t.Logf("rxdrop received %d, socket drops %d; veth: %v", sum.RxPackets, sum.XDPStats.Drops(), delta)
	if delta["rx_queue_0_xdp_redirect"] != sum.RxPackets || delta["rx_queue_0_xdp_packets"] != sum.RxPackets+sum.XDPStats.Drops() {
		t.Errorf("veth counted %d redirects of %d frames, rxdrop received %d with %d socket drops",
			delta["rx_queue_0_xdp_redirect"], delta["rx_queue_0_xdp_packets"], sum.RxPackets, sum.XDPStats.Drops())
	}
	// While frames flowed, the intervals show the counter rising.
	rising := false
	for _, line := range strings.Split(sr.stdout, "\n") {
		var v struct {
			Type    string     `json:"type"`
			Devices []devRates `json:"devices"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Type == "interval" {
			for _, c := range v.Devices[0].Ethtool {
				rising = rising || (c.Name == "rx_queue_0_xdp_packets" && c.PerSec > 0)
			}
		}
	}
	if !rising {
		t.Errorf("no interval shows rx_queue_0_xdp_packets rising:\n%s", sr.stdout)
	}
}

// TestCLIIRQ: --irq prints NET_RX softirqs per CPU and says that a veth
// has no interrupts.
func TestCLIIRQ(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	r := runIn(t, 20*time.Second, bed.DUTNS, bin, "kern", "drop", "-i", "dut0", "--irq", "-d", "700ms", "-I", "200ms")
	if r.code != 0 {
		t.Fatalf("kern drop --irq:\n%s", r)
	}
	for _, want := range []string{"irq: dut0 has no interrupt line in /proc/interrupts", "irq/s: NET_RX cpu0 ", "dut0 has no interrupts", "irq/s over the run: NET_RX"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runIn(t, 20*time.Second, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "--irq", "--json", "-d", "700ms", "-I", "200ms")
	if r.code != 0 {
		t.Fatalf("rxdrop --irq:\n%s", r)
	}
	var sum struct {
		IRQ *struct {
			NetRx []struct {
				CPU int `json:"cpu"`
			} `json:"net_rx"`
			Device string `json:"device"`
			NoIRQ  bool   `json:"device_has_no_irq"`
		} `json:"irq"`
	}
	summaryLine(t, r.stdout, &sum)
	if sum.IRQ == nil || len(sum.IRQ.NetRx) == 0 || sum.IRQ.Device != "dut0" || !sum.IRQ.NoIRQ {
		t.Errorf("irq in the summary: %+v\n%s", sum.IRQ, r.stdout)
	}
}

// TestCLIMetricsIdleEqualsSummary: in every wait mode, once the frames
// stop, a scrape shows every frame received: the workers publish their
// counters when the ring runs dry, not only every few batches.
func TestCLIMetricsIdleEqualsSummary(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	for _, mode := range [][]string{{}, {"-p"}, {"--busy"}, {"--busy-poll"}} {
		t.Run(strings.Join(append([]string{"wait"}, mode...), " "), func(t *testing.T) {
			addr := freeAddr(t, ns)
			p := startAttached(t, ns, append([]string{bin, "rxdrop", "-i", "dut0", "--json", "--metrics", addr}, mode...)...)
			if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "1000", "--rate", "10000", "--json"); g.code != 0 {
				t.Fatalf("gen:\n%s", g)
			}
			// Settled: two scrapes 300 ms apart agree.
			var last float64 = -1
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
				body, err := scrape(ns, addr)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := metricValue(body, "xdpeng_rx_packets_total", `queue="0"`)
				if v == last {
					break
				}
				last = v
			}
			r := interrupt(t, p)
			var sum xskSummary
			summaryLine(t, r.stdout, &sum)
			if float64(sum.RxPackets) != last {
				t.Errorf("a scrape after the frames stopped shows %v received, the summary %d", last, sum.RxPackets)
			}
		})
	}
}

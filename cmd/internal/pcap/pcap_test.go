package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// base is a timestamp with every nanosecond digit in use.
const base = int64(1_700_000_000_123_456_789)

// record is a frame as it should come out of the file.
type record struct {
	ts      int64
	data    []byte // the captured bytes
	origLen int
}

// readAll reads a pcap file with gopacket's reader and checks its header.
func readAll(t *testing.T, r io.Reader, snaplen int) []record {
	t.Helper()
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		t.Fatalf("gopacket cannot read the file: %v", err)
	}
	// Not pr.Resolution(): gopacket v1.1.19 returns microseconds for the
	// nanosecond magic and the reverse. The timestamps with all nine
	// digits in use show the resolution instead.
	if pr.LinkType() != layers.LinkTypeEthernet || pr.Snaplen() != uint32(snaplen) {
		t.Errorf("file header: link type %v, snaplen %d; want Ethernet, %d", pr.LinkType(), pr.Snaplen(), snaplen)
	}
	var out []record
	for {
		data, ci, err := pr.ReadPacketData()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read record %d: %v", len(out), err)
		}
		if ci.CaptureLength != len(data) {
			t.Errorf("record %d: capture length %d, %d bytes", len(out), ci.CaptureLength, len(data))
		}
		out = append(out, record{ts: ci.Timestamp.UnixNano(), data: data, origLen: ci.Length})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 100, LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	short := bytes.Repeat([]byte{0xab}, 60)
	long := make([]byte, 1500)
	for i := range long {
		long[i] = byte(i)
	}
	want := []record{
		{ts: base, data: short, origLen: 60},
		{ts: base + 999_999_999, data: long[:100], origLen: 1500}, // cut to the snapshot length
		{ts: 0, data: short[:10], origLen: 60},                    // the caller captured less
	}
	for _, r := range []struct {
		ts   int64
		data []byte
		orig int
	}{{base, short, 60}, {base + 999_999_999, long, 1500}, {0, short[:10], 60}} {
		if err := w.WritePacket(0, r.ts, r.data, r.orig); err != nil {
			t.Fatal(err)
		}
	}
	if got := buf.Len(); got != fileHeaderLen+3*recordHeaderLen+60+100+10 {
		t.Errorf("file is %d bytes", got)
	}
	if magic := binary.LittleEndian.Uint32(buf.Bytes()); magic != MagicNanos {
		t.Errorf("magic %#x, want %#x", magic, MagicNanos)
	}
	got := readAll(t, &buf, 100)
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ts != want[i].ts || got[i].origLen != want[i].origLen || !bytes.Equal(got[i].data, want[i].data) {
			t.Errorf("record %d: ts %d, length %d, %d bytes; want ts %d, length %d, %d bytes",
				i, got[i].ts, got[i].origLen, len(got[i].data), want[i].ts, want[i].origLen, len(want[i].data))
		}
	}
}

func TestWriterRefuses(t *testing.T) {
	for _, n := range []int{0, -1, MaxSnaplen + 1} {
		if _, err := NewWriter(io.Discard, n, LinkTypeEthernet); err == nil || !strings.Contains(err.Error(), "snapshot length") {
			t.Errorf("NewWriter(snaplen %d) = %v, want a snapshot length error", n, err)
		}
	}
	w, err := NewWriter(io.Discard, 64, LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(0, -1, []byte{1}, 1); err == nil || !strings.Contains(err.Error(), "timestamp") {
		t.Errorf("negative timestamp: %v", err)
	}
	if err := w.WritePacket(0, base, []byte{1, 2}, 1); err == nil || !strings.Contains(err.Error(), "original length") {
		t.Errorf("original length below captured: %v", err)
	}
	if _, err := NewWriter(failWriter{}, 64, LinkTypeEthernet); err == nil {
		t.Error("a failed header write was not reported")
	}
	if err := w.WritePacket(1, base, []byte{1}, 1); err == nil || !strings.Contains(err.Error(), "interface 1") {
		t.Errorf("interface 1 of a classic pcap file: %v", err)
	}
	if _, err := NewWriter(io.Discard, 64, 256); err == nil || !strings.Contains(err.Error(), "link type") {
		t.Errorf("link type 256: %v", err)
	}
	if _, err := NewNgWriter(io.Discard, 64, LinkTypeEthernet, nil); err == nil || !strings.Contains(err.Error(), "interface") {
		t.Errorf("pcapng without interfaces: %v", err)
	}
	ng, err := NewNgWriter(io.Discard, 64, LinkTypeEthernet, []Interface{{Name: "dut0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ng.WritePacket(1, base, []byte{1}, 1); err == nil || !strings.Contains(err.Error(), "interface 1") {
		t.Errorf("interface 1 of a pcapng file with one: %v", err)
	}
	if err := ng.WritePacket(0, -1, []byte{1}, 1); err == nil || !strings.Contains(err.Error(), "timestamp") {
		t.Errorf("pcapng, negative timestamp: %v", err)
	}
	// pcapng's timestamps are 64 bits of nanoseconds: 2200 is fine.
	if err := ng.WritePacket(0, 230*365*24*3600*1e9, []byte{1}, 1); err != nil {
		t.Errorf("pcapng, a time after 2106: %v", err)
	}
}

// ngRecord is a frame read from a pcapng file, with its interface.
type ngRecord struct {
	record
	iface int
}

// readNg reads a pcapng file with gopacket's reader: its interfaces, as
// its interface description blocks say, and its frames.
func readNg(t *testing.T, r io.Reader, snaplen int) ([]pcapgo.NgInterface, []ngRecord) {
	t.Helper()
	nr, err := pcapgo.NewNgReader(r, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatalf("gopacket cannot read the pcapng file: %v", err)
	}
	var out []ngRecord
	for {
		data, ci, err := nr.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read record %d: %v", len(out), err)
		}
		out = append(out, ngRecord{record{ts: ci.Timestamp.UnixNano(), data: data, origLen: ci.Length}, ci.InterfaceIndex})
	}
	var ifaces []pcapgo.NgInterface
	for i := range nr.NInterfaces() {
		in, err := nr.Interface(i)
		if err != nil {
			t.Fatal(err)
		}
		if in.LinkType != layers.LinkTypeEthernet || in.SnapLength != uint32(snaplen) || in.TimestampResolution != 9 {
			t.Errorf("interface %d: link type %v, snaplen %d, resolution %v; want Ethernet, %d, 9 (ns)", i, in.LinkType, in.SnapLength, in.TimestampResolution, snaplen)
		}
		ifaces = append(ifaces, in)
	}
	return ifaces, out
}

func TestNgWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	ifaces := []Interface{{Name: "dut0", Description: "dut0 rx queue 0"}, {Name: "dut0", Description: "dut0 rx queue 3"}}
	w, err := NewNgWriter(&buf, 100, LinkTypeEthernet, ifaces)
	if err != nil {
		t.Fatal(err)
	}
	long := make([]byte, 1500)
	for i := range long {
		long[i] = byte(i)
	}
	in := []ngRecord{
		{record{base, long[:60], 60}, 1},
		{record{base + 999_999_999, long, 1500}, 0},
		{record{0, long[:10], 60}, 1},
	}
	for _, r := range in {
		if err := w.WritePacket(r.iface, r.ts, r.data, r.origLen); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteInterfaceStats(1, 7, 2, time.Unix(0, base)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteInterfaceStats(2, 7, 2, time.Unix(0, base)); err == nil || !strings.Contains(err.Error(), "interface 2") {
		t.Errorf("statistics of interface 2 of 2: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	gotIfaces, got := readNg(t, &buf, 100)
	if len(gotIfaces) != 2 {
		t.Fatalf("%d interfaces, want 2", len(gotIfaces))
	}
	if s := gotIfaces[1].Statistics; s.PacketsReceived != 7 || s.PacketsDropped != 2 || s.LastUpdate.UnixNano() != base {
		t.Errorf("interface 1 statistics %+v, want 7 received, 2 dropped at %d", s, base)
	}
	for i, want := range ifaces {
		if gotIfaces[i].Name != want.Name || gotIfaces[i].Description != want.Description {
			t.Errorf("interface %d: %q %q, want %q %q", i, gotIfaces[i].Name, gotIfaces[i].Description, want.Name, want.Description)
		}
	}
	if len(got) != len(in) {
		t.Fatalf("read %d records, want %d", len(got), len(in))
	}
	for i, want := range in {
		want.data = want.data[:min(100, len(want.data))] // cut to the snapshot length
		if got[i].ts != want.ts || got[i].origLen != want.origLen || got[i].iface != want.iface || !bytes.Equal(got[i].data, want.data) {
			t.Errorf("record %d: ts %d, length %d, interface %d, %d bytes; want ts %d, length %d, interface %d, %d bytes", i,
				got[i].ts, got[i].origLen, got[i].iface, len(got[i].data), want.ts, want.origLen, want.iface, len(want.data))
		}
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"a.pcapng": PcapNG, "/x/A.PCAPNG": PcapNG, "a.pcap": Pcap, "a": Pcap, "a.pcapng.gz": Pcap, "/dev/null": Pcap} {
		if got := FormatOf(path); got != want {
			t.Errorf("FormatOf(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Snaplen: MaxSnaplen + 1}, "snapshot length"},
		{Config{Rings: -1}, "rings"},
		{Config{Slots: 3}, "power of two"},
		{Config{Slots: 1 << 20, Snaplen: 4096}, "MiB per ring"},
		{Config{LinkType: 1000}, "link type"},
		{Config{Format: 7}, "format"},
		{Config{Rings: 2, Format: PcapNG, Interfaces: []Interface{{Name: "dut0"}}}, "1 interfaces for 2 rings"},
	} {
		if _, err := Start(io.Discard, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error about %q", tc.cfg, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "x.pcap")
	if _, err := Create(path, Config{Slots: 3}); err == nil {
		t.Error("Create with a bad config succeeded")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Create with a bad config left %s: %v", path, err)
	}
}

// frame encodes ring and seq in a 64-byte frame (and its length, 64+seq%7).
func frame(ring, seq int) []byte {
	f := make([]byte, 64+seq%7)
	binary.BigEndian.PutUint32(f[0:], uint32(ring))
	binary.BigEndian.PutUint32(f[4:], uint32(seq))
	for i := 8; i < len(f); i++ {
		f[i] = byte(ring*31 + seq + i)
	}
	return f
}

func frameTS(ring, seq int) int64 { return base + int64(seq)*10 + int64(ring) }

// TestCaptureRace has a producer per ring put frames while the writer
// drains; the file holds every frame exactly once, bytes and timestamps as
// put, each ring's in order. Run it with -race.
func TestCaptureRace(t *testing.T) {
	const rings, perRing = 3, 3000
	var buf syncBuffer
	c, err := Start(&buf, Config{Rings: rings, Slots: 256, Snaplen: 128})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var offered [rings]int
	for ring := range rings {
		wg.Go(func() {
			r := c.Ring(ring)
			for seq := range perRing {
				// A full ring skips the frame; retry so that the file's
				// content is known, and count the skips.
				for !r.Put(frameTS(ring, seq), frame(ring, seq)) {
					offered[ring]++
					time.Sleep(10 * time.Microsecond)
				}
				offered[ring]++
			}
		})
	}
	wg.Wait()
	st, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	total := offered[0] + offered[1] + offered[2]
	if st.Written != rings*perRing || st.Discarded != 0 || st.Written+st.Skipped != uint64(total) {
		t.Errorf("stats %+v for %d frames offered, %d taken", st, total, rings*perRing)
	}
	next := [rings]int{}
	for i, r := range readAll(t, buf.reader(), 128) {
		ring := int(binary.BigEndian.Uint32(r.data[0:]))
		seq := int(binary.BigEndian.Uint32(r.data[4:]))
		if ring >= rings || seq != next[ring] {
			t.Fatalf("record %d is frame %d of ring %d, want frame %d", i, seq, ring, next[min(ring, rings-1)])
		}
		next[ring]++
		if want := frame(ring, seq); !bytes.Equal(r.data, want) || r.origLen != len(want) || r.ts != frameTS(ring, seq) {
			t.Fatalf("record %d (ring %d frame %d) differs from what was put", i, ring, seq)
		}
	}
	if next != [rings]int{perRing, perRing, perRing} {
		t.Errorf("frames per ring in the file: %v, want %d each", next, perRing)
	}
}

// TestCapturePcapNG: a pcapng capture has an interface per ring, and each
// frame is on its ring's; the rings are merged by timestamp as in pcap.
func TestCapturePcapNG(t *testing.T) {
	var buf syncBuffer
	ifaces := []Interface{{Name: "dut0", Description: "dut0 rx queue 2"}, {Name: "dut0", Description: "dut0 rx queue 5"}}
	c, err := Start(&buf, Config{Rings: 2, Slots: 64, Snaplen: 128, Format: PcapNG, Interfaces: ifaces})
	if err != nil {
		t.Fatal(err)
	}
	const perRing = 20
	for seq := range perRing {
		for ring := range 2 {
			if !c.Ring(ring).Put(frameTS(ring, seq), frame(ring, seq)) {
				t.Fatal("a ring of 64 slots is full after fewer frames")
			}
		}
	}
	st, err := c.Close()
	if err != nil || st != (Stats{Written: 2 * perRing}) {
		t.Fatalf("Close = %+v, %v; want %d written", st, err, 2*perRing)
	}
	got, recs := readNg(t, buf.reader(), 128)
	if len(got) != 2 || got[0].Description != "dut0 rx queue 2" || got[1].Description != "dut0 rx queue 5" || got[1].Name != "dut0" {
		t.Fatalf("interfaces %+v, want dut0's queues 2 and 5", got)
	}
	if len(recs) != 2*perRing {
		t.Fatalf("%d records, want %d", len(recs), 2*perRing)
	}
	for i, r := range recs {
		ring, seq := int(binary.BigEndian.Uint32(r.data[0:])), int(binary.BigEndian.Uint32(r.data[4:]))
		if ring != i%2 || seq != i/2 || r.iface != ring || r.ts != frameTS(ring, seq) || !bytes.Equal(r.data, frame(ring, seq)) {
			t.Errorf("record %d: frame %d of ring %d on interface %d at %d; want frame %d of ring %d on its own interface", i, seq, ring, r.iface, r.ts, i/2, i%2)
		}
	}
	for i, in := range got {
		if in.Statistics.PacketsReceived != perRing || in.Statistics.PacketsDropped != 0 {
			t.Errorf("interface %d statistics: received %d, dropped %d; want %d, 0", i, in.Statistics.PacketsReceived, in.Statistics.PacketsDropped, perRing)
		}
	}

	// Rings that fill while the writer is stuck: the statistics blocks
	// count what each ring's producer offered and what it skipped.
	const slots = 8
	gw := newGateWriter(1) // the header passes, the first flush blocks
	c, err = Start(gw, Config{Rings: 2, Slots: slots, Snaplen: 96, Format: PcapNG})
	if err != nil {
		t.Fatal(err)
	}
	c.Ring(0).Put(base-1, frame(0, 999))
	<-gw.entered
	for seq := range slots + 3 {
		for ring := range 2 {
			c.Ring(ring).Put(frameTS(ring, seq), frame(ring, seq))
		}
	}
	close(gw.gate)
	if st, err = c.Close(); err != nil || st != (Stats{Written: 1 + 2*slots, Skipped: 6}) {
		t.Fatalf("Close = %+v, %v", st, err)
	}
	got, recs = readNg(t, gw.reader(), 96)
	if len(recs) != 1+2*slots || len(got) != 2 {
		t.Fatalf("%d records on %d interfaces", len(recs), len(got))
	}
	for i, want := range [][2]uint64{{1 + slots + 3, 3}, {slots + 3, 3}} {
		if s := got[i].Statistics; s.PacketsReceived != want[0] || s.PacketsDropped != want[1] {
			t.Errorf("ring %d statistics: received %d, dropped %d; want %d, %d", i, s.PacketsReceived, s.PacketsDropped, want[0], want[1])
		}
	}

	// Without Interfaces, ring i is described as "ring i".
	buf = syncBuffer{}
	c, err = Start(&buf, Config{Rings: 3, Format: PcapNG})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := readNg(t, buf.reader(), DefaultSnaplen); len(got) != 3 || got[2].Description != "ring 2" {
		t.Errorf("interfaces %+v, want rings 0..2", got)
	}
}

// TestCaptureFullRingAndMerge blocks the writer in a write, fills the rings
// past their size, then lets it go: what fit is written in timestamp order
// across rings, and exactly the rest is counted as skipped.
func TestCaptureFullRingAndMerge(t *testing.T) {
	const slots = 8
	gw := newGateWriter(1) // the file header passes, the first flush blocks
	c, err := Start(gw, Config{Rings: 2, Slots: slots, Snaplen: 96})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Ring(0).Put(base-1, frame(0, 999)) {
		t.Fatal("Put into an empty ring failed")
	}
	<-gw.entered // the writer wrote it and is stuck flushing
	taken := [2]int{}
	for seq := range slots + 3 {
		for ring := range 2 {
			if c.Ring(ring).Put(frameTS(ring, seq), frame(ring, seq)) {
				taken[ring]++
			}
		}
	}
	if st := c.Stats(); taken != [2]int{slots, slots} || st.Skipped != 6 || st.Written != 1 {
		t.Errorf("with the writer stuck: taken %v, stats %+v; want %d each, 6 skipped, 1 written", taken, st, slots)
	}
	close(gw.gate)
	st, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Written: 1 + 2*slots, Skipped: 6}); st != want {
		t.Errorf("Close = %+v, want %+v", st, want)
	}
	recs := readAll(t, gw.reader(), 96)
	if len(recs) != 1+2*slots {
		t.Fatalf("%d records, want %d", len(recs), 1+2*slots)
	}
	for i := 1; i < len(recs); i++ {
		// Ring 0's frame seq has ts base+10*seq, ring 1's one more.
		want := frameTS((i-1)%2, (i-1)/2)
		if recs[i].ts != want {
			t.Errorf("record %d has ts %d, want %d: not merged by timestamp", i, recs[i].ts, want)
		}
	}
}

func TestCaptureCount(t *testing.T) {
	var buf syncBuffer
	c, err := Start(&buf, Config{Count: 10, Slots: 128})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Ring(0)
	taken := 0
	for seq := range 100 {
		if r.Put(frameTS(0, seq), frame(0, seq)) {
			taken++
		}
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after Count frames")
	}
	if r.Put(base, frame(0, 0)) {
		t.Error("Put took a frame after Count was reached")
	}
	st, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 10 || st.Skipped != 0 || st.Discarded != uint64(taken-10) {
		t.Errorf("stats %+v with %d frames taken, want 10 written, %d discarded", st, taken, taken-10)
	}
	recs := readAll(t, buf.reader(), DefaultSnaplen)
	for i, rec := range recs {
		if !bytes.Equal(rec.data, frame(0, i)) {
			t.Errorf("record %d is not frame %d", i, i)
		}
	}
	if len(recs) != 10 {
		t.Errorf("%d records, want 10", len(recs))
	}
	if st2, err2 := c.Close(); st2 != st || err2 != nil {
		t.Errorf("second Close = %+v, %v; want the first's", st2, err2)
	}
}

func TestCaptureWriteError(t *testing.T) {
	gw := newGateWriter(1)
	gw.fail = errors.New("disk full")
	close(gw.gate)
	c, err := Start(gw, Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.Ring(0).Put(base, frame(0, 0))
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after a write error")
	}
	st, err := c.Close()
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close error %v, want the write error", err)
	}
	if st.Written+st.Discarded != 1 {
		t.Errorf("stats %+v: the frame is neither written nor discarded", st)
	}
}

func TestPutDoesNotAllocate(t *testing.T) {
	c, err := Start(io.Discard, Config{Slots: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := frame(0, 0)
	if n := testing.AllocsPerRun(10000, func() { c.Ring(0).Put(base, f) }); n != 0 {
		t.Errorf("Put allocates %.1f times per call", n)
	}
}

// udpFrame builds an Ethernet/IPv4/UDP frame of size bytes with gopacket.
func udpFrame(t *testing.T, dport uint16, size int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0x78, 0x64, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0x78, 0x64, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{198, 18, 0, 1}, DstIP: net.IP{198, 18, 0, 2}}
	udp := &layers.UDP{SrcPort: 1234, DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	payload := make([]byte, size-14-20-8)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCreateReadByTcpdump writes real UDP frames to a pcap and a pcapng
// file and reads them back with gopacket and, where installed, tcpdump.
func TestCreateReadByTcpdump(t *testing.T) {
	for _, name := range []string{"cap.pcap", "cap.pcapng"} {
		t.Run(name, func(t *testing.T) { createReadByTcpdump(t, name) })
	}
}

func createReadByTcpdump(t *testing.T, name string) {
	path := filepath.Join(t.TempDir(), name)
	format := FormatOf(path)
	c, err := Create(path, Config{Rings: 2, Snaplen: 128, Format: format})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var frames [][]byte
	for i := range n {
		// Ports no tcpdump decoder claims; 64..554 bytes, cut at 128.
		f := udpFrame(t, uint16(40000+i), 64+i*10)
		frames = append(frames, f)
		for !c.Ring(i%2).Put(base+int64(i), f) {
			time.Sleep(time.Millisecond)
		}
	}
	st, err := c.Close()
	if err != nil || st != (Stats{Written: n}) {
		t.Fatalf("Close = %+v, %v; want %d written", st, err, n)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record
	if format == PcapNG {
		_, ng := readNg(t, f, 128)
		for _, r := range ng {
			recs = append(recs, r.record)
		}
	} else {
		recs = readAll(t, f, 128)
	}
	if len(recs) != n {
		t.Fatalf("gopacket read %d frames, want %d", len(recs), n)
	}
	for i, r := range recs {
		want := frames[i][:min(128, len(frames[i]))]
		if r.ts != base+int64(i) || r.origLen != len(frames[i]) || !bytes.Equal(r.data, want) {
			t.Errorf("frame %d: ts %d, length %d; want ts %d, length %d, and the same bytes",
				i, r.ts, r.origLen, base+int64(i), len(frames[i]))
		}
	}

	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skipf("tcpdump is not installed, so only gopacket read the file: %v", err)
	}
	out, err := exec.Command(tcpdump, "-r", path, "-nn", "-tt", "--time-stamp-precision=nano").Output()
	if err != nil {
		t.Fatalf("tcpdump -r: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != n {
		t.Fatalf("tcpdump printed %d lines, want %d:\n%s", len(lines), n, out)
	}
	for i, line := range lines {
		// "1700000000.123456789 IP 198.18.0.1.1234 > 198.18.0.2.40000: UDP, length 22"
		want := fmt.Sprintf("%d.%09d IP 198.18.0.1.1234 > 198.18.0.2.%d: UDP, length %d",
			(base+int64(i))/1e9, (base+int64(i))%1e9, 40000+i, len(frames[i])-42)
		if line != want {
			t.Errorf("tcpdump line %d:\n got %s\nwant %s", i, line, want)
		}
	}
}

// syncBuffer is a bytes.Buffer written by the capture's goroutine and read
// by the test after Close.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) reader() io.Reader {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.NewReader(bytes.Clone(b.buf.Bytes()))
}

// gateWriter lets allow writes through, then blocks the next one (closing
// entered) until gate is closed; with fail set, that write fails.
type gateWriter struct {
	syncBuffer
	allow   int
	writes  int
	fail    error
	entered chan struct{}
	gate    chan struct{}
}

func newGateWriter(allow int) *gateWriter {
	return &gateWriter{allow: allow, entered: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	n := g.writes
	g.writes++
	g.mu.Unlock()
	if n == g.allow {
		close(g.entered)
		<-g.gate
		if g.fail != nil {
			return 0, g.fail
		}
	}
	return g.syncBuffer.Write(p)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space") }

//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestTxChecksumGenerator sends UDP over IPv4 and IPv6 and TCP with
// GeneratorConfig.TxChecksum in copy mode: the generator puts only the
// pseudo-header's sum in each checksum field, and every frame must arrive
// as the packet builder made it, checksum and all, filled by the kernel.
func TestTxChecksumGenerator(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const count = 4000
	base := linkUDP(l, 100)
	frames, err := packet.UDPVariants(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	v6 := base
	v6.SrcIP, v6.DstIP, v6.Size = netip.MustParseAddr("2001:2::2"), netip.MustParseAddr("2001:2::1"), 120
	f6 := make([]byte, v6.Size)
	if _, err := packet.BuildUDP(f6, v6); err != nil {
		t.Fatal(err)
	}
	tcp := base
	tcp.Size = 80
	syn := make([]byte, tcp.Size)
	if _, err := packet.BuildTCP(syn, tcp, packet.TCPSyn); err != nil {
		t.Fatal(err)
	}
	frames = append(frames, f6, syn)

	cfg := engine.DefaultGeneratorConfig()
	cfg.Interface = l.DUT
	cfg.BindMode = engine.BindCopy
	cfg.Frames, cfg.Count, cfg.Rate, cfg.TxChecksum = frames, count, 100_000, true
	c := listenWire(t, bed.GenNS, l.Gen, l.GenIndex, l.DUTMAC)
	var g *engine.Generator
	if err := bed.InDUT(func() (err error) { g, err = engine.NewGenerator(cfg); return err }); err != nil {
		if errors.Is(err, engine.ErrTxMetadata) && errors.Is(err, unix.EINVAL) {
			privtest.Unsupported(t, "%v", err) // a kernel without AF_XDP TX metadata
		}
		t.Fatalf("engine.NewGenerator: %v", err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	c.collect(t, count)
	if len(c.frames) != count {
		t.Fatalf("received %d frames, want %d", len(c.frames), count)
	}
	for i, f := range c.frames {
		if want := frames[i%len(frames)]; !bytes.Equal(f[:len(want)], want) {
			t.Fatalf("frame %d arrived as\n%x\nwant\n%x", i, f, want)
		}
	}
}

// TestTxChecksumRefused checks what TxChecksum refuses before anything is
// set up.
func TestTxChecksumRefused(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	icmp := make([]byte, 64)
	if _, err := packet.BuildICMPEcho(icmp, linkUDP(l, 64), 1, 1); err != nil {
		t.Fatal(err)
	}
	udp := make([]byte, 2000)
	if _, err := packet.BuildUDP(udp, linkUDP(l, 2000)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		frame    []byte
		mb, unal bool
	}{{"ICMP", icmp, false, false}, {"frame too long for the metadata", udp, false, false}, {"multi-buffer", udp, true, false}, {"unaligned", icmp, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.DefaultGeneratorConfig()
			cfg.Interface = l.DUT
			cfg.Frames, cfg.Count, cfg.TxChecksum, cfg.MultiBuffer, cfg.Unaligned = [][]byte{tc.frame}, 10, true, tc.mb, tc.unal
			err := bed.InDUT(func() error {
				g, err := engine.NewGenerator(cfg)
				if err == nil {
					g.Close()
				}
				return err
			})
			if !errors.Is(err, engine.ErrTxMetadata) {
				t.Fatalf("NewGenerator: %v, want ErrTxMetadata", err)
			}
			t.Log(err)
		})
	}
}

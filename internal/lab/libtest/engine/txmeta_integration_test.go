//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
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

// TestTxTimestampGenerator sends with GeneratorConfig.TxTimestamp in copy
// mode, with and without TxChecksum: every completion has a timestamp
// (CLOCK_TAI, taken when the peer has the frame), none before its frame
// was queued or after Run returned, and the frames arrive as built: with
// TxChecksum the generator asks again for the checksum after each
// completion, whose timestamp the kernel wrote over the request.
func TestTxTimestampGenerator(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const count = 3000
	frames, err := packet.UDPVariants(linkUDP(l, 100), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, csum := range []bool{false, true} {
		t.Run(map[bool]string{false: "timestamp", true: "timestamp+checksum"}[csum], func(t *testing.T) {
			cfg := engine.DefaultGeneratorConfig()
			cfg.Interface = l.DUT
			cfg.Frames, cfg.Count, cfg.Rate, cfg.TxTimestamp, cfg.TxChecksum = frames, count, 50_000, true, csum
			cfg.NumFrames = 384 // each UMEM frame sent several times over
			c := listenWire(t, bed.GenNS, l.Gen, l.GenIndex, l.DUTMAC)
			var g *engine.Generator
			if err := bed.InDUT(func() (err error) { g, err = engine.NewGenerator(cfg); return err }); err != nil {
				if errors.Is(err, engine.ErrTxMetadata) && errors.Is(err, unix.EINVAL) {
					privtest.Unsupported(t, "%v", err) // a kernel without AF_XDP TX metadata
				}
				t.Fatalf("engine.NewGenerator: %v", err)
			}
			defer g.Close()
			if g.ZeroCopy() {
				t.Fatal("bound zero-copy: TxTimestamp binds copy mode")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			if err := g.Run(ctx); err != nil {
				t.Fatalf("Run: %v", err)
			}
			ran := time.Since(start)
			tt := g.TxTimes()
			t.Logf("%d frames in %v: min %v, mean %v, p50 %v, p99 %v, max %v; %d without a timestamp, %d early",
				tt.Frames, ran, tt.Min, tt.Mean(), tt.Percentile(50), tt.Percentile(99), tt.Max, tt.NoTimestamp, tt.Early)
			if tt.Frames != count || tt.NoTimestamp != 0 || tt.Early != 0 {
				t.Errorf("%d frames timed, %d without a timestamp, %d stamped before they were queued: want %d, 0, 0", tt.Frames, tt.NoTimestamp, tt.Early, count)
			}
			// The sending time and the timestamp are read around the Run:
			// allow for where the two clocks were compared (a system call).
			if tt.Max > ran+time.Millisecond || tt.Min > tt.Percentile(50) || tt.Percentile(50) > tt.Max || tt.Sum < time.Duration(tt.Frames)*tt.Min {
				t.Errorf("times min %v, p50 %v, max %v, sum %v over a run of %v: not in order, or longer than the run", tt.Min, tt.Percentile(50), tt.Max, tt.Sum, ran)
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
		})
	}
}

// TestTxTimestampLaunchTimeRefused checks what TxTimestamp and LaunchDelay
// refuse before anything is set up: veth has no launch time (its
// xsk-features are empty), launch times are for zero-copy, completion
// timestamps for copy mode.
func TestTxTimestampLaunchTimeRefused(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	frames, err := packet.UDPVariants(linkUDP(l, 100), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		set   func(*engine.GeneratorConfig)
		reply string
	}{
		{"launch time on veth", func(c *engine.GeneratorConfig) { c.LaunchDelay = 100 * time.Microsecond }, "without tx-launch-time-fifo"},
		{"negative launch delay", func(c *engine.GeneratorConfig) { c.LaunchDelay = -time.Microsecond }, "must be positive"},
		{"launch time multi-buffer", func(c *engine.GeneratorConfig) { c.LaunchDelay, c.MultiBuffer = time.Millisecond, true }, "multi-buffer"},
		{"timestamp zero-copy", func(c *engine.GeneratorConfig) { c.TxTimestamp, c.BindMode = true, engine.BindZeroCopy }, "copy mode only"},
		{"timestamp unaligned", func(c *engine.GeneratorConfig) { c.TxTimestamp, c.Unaligned = true, true }, "unaligned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.DefaultGeneratorConfig()
			cfg.Interface = l.DUT
			cfg.Frames, cfg.Count = frames, 10
			tc.set(&cfg)
			err := bed.InDUT(func() error {
				g, err := engine.NewGenerator(cfg)
				if err == nil {
					g.Close()
				}
				return err
			})
			if !errors.Is(err, engine.ErrTxMetadata) || !strings.Contains(err.Error(), tc.reply) {
				t.Fatalf("NewGenerator: %v, want ErrTxMetadata saying %q", err, tc.reply)
			}
			t.Log(err)
		})
	}
}

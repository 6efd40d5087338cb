//go:build linux

package engine_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v\n%s", args, err, out)
	}
}

// runResult waits for Run's result; the bound only guards against a hang.
func runResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the device went away")
	}
	return nil
}

// TestDeviceGone deletes the device under a running engine, both ways it
// goes: ip link del, and the veth peer's namespace removed. Run returns a
// *DeviceGoneError naming it, the counters up to then stay readable, and
// Close succeeds.
func TestDeviceGone(t *testing.T) {
	for _, how := range []string{"link del", "peer netns del", "output link del"} {
		t.Run(how, func(t *testing.T) {
			bed := testbedtest.New(t, 1, 2)
			cfg := rxdropConfig(bed)
			if how == "output link del" {
				cfg.Outputs = []engine.Output{{Interface: bed.Links[1].DUT}}
			}
			var eng *engine.Engine
			if err := bed.InDUT(func() (err error) { eng, err = engine.New(cfg); return err }); err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			done := make(chan error, 1)
			go func() { done <- eng.Run(context.Background()) }()
			st := send(t, bed, 0, gen.Config{Count: 1000, Threads: 1})
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if s, _ := eng.Stats(); s.Total().RxPackets == st.Sent {
					break
				}
			}

			gone := bed.Links[0].DUT
			deleted := time.Now()
			switch how {
			case "link del":
				ipCmd(t, "-n", bed.DUTNS, "link", "del", gone)
			case "peer netns del":
				ipCmd(t, "netns", "del", bed.GenNS)
			case "output link del":
				gone = bed.Links[1].DUT
				ipCmd(t, "-n", bed.DUTNS, "link", "del", gone)
			}
			err := runResult(t, done)
			t.Logf("Run returned %v after %v", err, time.Since(deleted))
			var ge *engine.DeviceGoneError
			if !errors.Is(err, engine.ErrDeviceGone) || !errors.As(err, &ge) || ge.Device != gone || ge.Time.Before(deleted) {
				t.Fatalf("Run: %v, want a DeviceGoneError for %s", err, gone)
			}
			s, err := eng.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Total().RxPackets; got != st.Sent {
				t.Errorf("received %d of %d frames sent before the device went", got, st.Sent)
			}
			if err := eng.Close(); err != nil {
				t.Errorf("Close after the device went: %v", err)
			}
		})
	}
}

// TestLinkDownAndUp sets the device down and up again under a running
// engine: OnLinkChange hears both, Run goes on, and frames sent after are
// received and counted with those before.
func TestLinkDownAndUp(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	changes := make(chan engine.LinkChange, 8)
	cfg := rxdropConfig(bed)
	cfg.OnLinkChange = func(c engine.LinkChange) { changes <- c }
	r := start(t, bed, cfg)
	next := func() engine.LinkChange {
		t.Helper()
		select {
		case c := <-changes:
			return c
		case err := <-r.done:
			t.Fatalf("Run ended: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no link change")
		}
		return engine.LinkChange{}
	}
	before := send(t, bed, 0, gen.Config{Count: 1000, Threads: 1})
	dut := bed.Links[0].DUT
	ipCmd(t, "-n", bed.DUTNS, "link", "set", dut, "down")
	if c := next(); c.Device != dut || c.Up || c.AdminUp || c.Time.IsZero() {
		t.Errorf("after set down: %+v", c)
	}
	ipCmd(t, "-n", bed.DUTNS, "link", "set", dut, "up")
	if c := next(); c.Device != dut || !c.Up || !c.AdminUp || !c.Carrier {
		t.Errorf("after set up: %+v", c)
	}
	after := send(t, bed, 0, gen.Config{Count: 1000, Threads: 1})
	s := r.finish(before.Sent + after.Sent)
	if got, want := s.Total().RxPackets, before.Sent+after.Sent; got != want {
		t.Errorf("received %d, sent %d before and %d after the link went down and up", got, before.Sent, after.Sent)
	}
}

// TestGeneratorDeviceGone deletes the device under an unbounded generator:
// Run returns a *DeviceGoneError.
func TestGeneratorDeviceGone(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	cfg := engine.DefaultGeneratorConfig()
	cfg.Interface = l.DUT
	cfg.Rate = 100_000
	frames, err := packet.UDPVariants(linkUDP(l, 64), 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Frames = frames
	var g *engine.Generator
	if err := bed.InDUT(func() (err error) { g, err = engine.NewGenerator(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s, _ := g.Stats(); s.Total().TxPackets > 0 {
			break
		}
	}
	ipCmd(t, "-n", bed.DUTNS, "link", "del", l.DUT)
	if err := runResult(t, done); !errors.Is(err, engine.ErrDeviceGone) {
		t.Fatalf("Run: %v, want ErrDeviceGone", err)
	}
	if s, _ := g.Stats(); s.Total().TxPackets == 0 {
		t.Error("no frame counted before the device went")
	}
}

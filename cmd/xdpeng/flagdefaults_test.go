package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/engine"
)

// TestFlagHelpHeadroom: the figures --frame-size and --headroom print are
// the ones the engine checks a UMEM with.
func TestFlagHelpHeadroom(t *testing.T) {
	fs := pflag.NewFlagSet("rxdrop", pflag.ContinueOnError)
	var f xskFlags
	f.register(fs)
	reserve := 2048 - engine.MaxFrameHeadroom(2048)
	if u := fs.Lookup("headroom").Usage; !strings.Contains(u, fmt.Sprintf("frame size - %d", reserve)) ||
		!strings.Contains(u, fmt.Sprintf("its own %d", engine.KernelHeadroom)) {
		t.Errorf("--headroom usage %q: want the frame size - %d and the kernel's %d", u, reserve, engine.KernelHeadroom)
	}
	err := geometryError(fmt.Errorf("too large"), 2048, engine.MaxFrameHeadroom(2048)+1)
	if want := fmt.Sprintf("keeps %d bytes", reserve); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("geometryError = %v, want %q", err, want)
	}
}

// TestFlagDefaults: the AF_XDP modes' flag defaults, as --help prints them
// and as a command line without them configures the engine, are those of
// engine.DefaultConfig, and txonly's those of engine.DefaultGeneratorConfig.
func TestFlagDefaults(t *testing.T) {
	d := engine.DefaultConfig()
	if d.FillSize != d.CompletionSize || d.FillSize != d.RxSize || d.FillSize != d.TxSize {
		t.Fatalf("DefaultConfig's rings differ (%+v): one --ring-size default cannot be all four", d)
	}
	fs := pflag.NewFlagSet("rxdrop", pflag.ContinueOnError)
	var f xskFlags
	f.register(fs)
	for flag, want := range map[string]any{
		"batch": d.Batch, "frame-size": d.FrameSize, "headroom": d.FrameHeadroom, "frames": d.NumFrames,
		"ring-size": d.FillSize, "busy-poll-usecs": d.BusyPollUsecs, "busy-poll-budget": d.BusyPollBudget,
		"frags": d.MultiBuffer, "unaligned": d.Unaligned, "no-need-wakeup": !d.NeedWakeup, "udp-port": d.UDPPort,
		"shared-umem": d.SharedUmem, "force": 0,
	} {
		if got := fs.Lookup(flag).DefValue; got != fmt.Sprint(want) {
			t.Errorf("--%s default %s, DefaultConfig's %v", flag, got, want)
		}
	}
	if err := fs.Parse([]string{"-i", "eth9"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	want := d
	want.Interface = "eth9"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("-i eth9 configures\n%+v\nDefaultConfig with Interface eth9 is\n%+v", cfg, want)
	}
	gwant := engine.DefaultGeneratorConfig()
	gwant.Interface = "eth9"
	if got := generatorConfig(cfg); !reflect.DeepEqual(got, gwant) {
		t.Errorf("txonly -i eth9 configures\n%+v\nDefaultGeneratorConfig with Interface eth9 is\n%+v", got, gwant)
	}
}

package main

import (
	"fmt"
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

// Package xskmaptest makes what a caller of engine.Config.XSKMap brings:
// an XSKMAP and an XDP program that redirects to it.
package xskmaptest

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// New makes an XSKMAP of entries queues and an XDP program that redirects
// every frame to it by rx_queue_index and passes what finds no socket
// there; both are closed when the test ends.
func New(tb testing.TB, entries uint32) (*ebpf.Map, *ebpf.Program) {
	tb.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "user_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: entries})
	if err != nil {
		tb.Fatalf("create an XSKMAP: %v", err)
	}
	tb.Cleanup(func() { m.Close() })
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "user_redirect", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 16, asm.Word), // ctx->rx_queue_index
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Imm(asm.R3, 2), // XDP_PASS where the queue has no socket
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}})
	if err != nil {
		tb.Fatalf("load the redirect program: %v", err)
	}
	tb.Cleanup(func() { p.Close() })
	return m, p
}

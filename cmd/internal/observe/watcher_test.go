package observe

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
)

// TestNilWatcher: every method of a nil *Watcher does nothing, so that a
// command calls them whether or not it watches anything.
func TestNilWatcher(t *testing.T) {
	var w *Watcher
	if err := errors.Join(w.Serve(), w.Tap(&engine.Config{}), w.Running(), w.Finish(1), w.StopServing(), w.Close()); err != nil {
		t.Errorf("nil watcher: %v", err)
	}
	if w.MetricsURL() != "" || w.CapturePath() != "" || w.RunIRQ() != nil || w.Device().Name != "" {
		t.Error("a nil watcher reports something")
	}
	if _, _, _, ok := w.Tracepoints(); ok {
		t.Error("a nil watcher counts tracepoints")
	}
	if s := w.Summary(); s.XDPErrors != nil || s.Capture != nil || s.IRQ != nil {
		t.Errorf("a nil watcher's summary: %+v", s)
	}
}

// TestStartErrors: what fails says which part it was, and a device that
// does not exist is engine's own error.
func TestStartErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var oe *Error
	w, err := Start(Config{Metrics: ln.Addr().String()}, "lo")
	if !errors.As(err, &oe) || oe.Part != PartMetrics || w != nil {
		t.Errorf("a busy metrics port: %v (%#v), want an *Error of PartMetrics", err, oe)
	}
	var de *engine.DeviceError
	if w, err := Start(Config{Capture: filepath.Join(t.TempDir(), "c.pcap")}, "xdpeng-none0"); !errors.As(err, &de) || w != nil {
		t.Errorf("a device that does not exist: %v, want an *engine.DeviceError", err)
	}
	// Nothing watched: the device is not looked up.
	w, err = Start(Config{}, "xdpeng-none0")
	if err != nil || w.Device().Name != "xdpeng-none0" {
		t.Errorf("nothing watched: %v, %+v", err, w.Device())
	}
	w.Close()
}

// TestTap: the capture file is refused at Tap when it cannot be made; once
// tapped, the handler is wrapped, the file is written from Running on,
// and the summary accounts for the frames received.
func TestTap(t *testing.T) {
	dir := t.TempDir()
	w, err := Start(Config{Capture: filepath.Join(dir, "no", "c.pcap")}, "lo")
	if err != nil {
		t.Fatal(err)
	}
	var oe *Error
	if err := w.Tap(&engine.Config{FrameSize: 2048}); !errors.As(err, &oe) || oe.Part != PartCaptureFile {
		t.Errorf("a capture in a directory that does not exist: %v, want an *Error of PartCaptureFile", err)
	}
	w.Close()

	path := filepath.Join(dir, "c.pcap")
	w, err = Start(Config{Capture: path, Snaplen: 96}, "lo")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := engine.Config{FrameSize: 2048, Queues: []int{0}}
	if err := w.Tap(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Handler == nil || cfg.Handler(0) == nil || w.CapturePath() != path {
		t.Fatalf("Tap left no handler, or capture path %q", w.CapturePath())
	}
	if err := w.Running(); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(7); err != nil {
		t.Fatal(err)
	}
	c := w.Summary().Capture
	if c == nil || c.File != path || c.Format != "pcap" || c.Snaplen != 96 || c.Received != 7 || c.AfterStop != 7 || c.Written != 0 {
		t.Errorf("summary of a capture that saw none of 7 frames: %+v", c)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 24 || !bytes.Equal(b[:4], []byte{0xd4, 0xc3, 0xb2, 0xa1}) && !bytes.Equal(b[:4], []byte{0xa1, 0xb2, 0xc3, 0xd4}) &&
		!bytes.Equal(b[:4], []byte{0x4d, 0x3c, 0xb2, 0xa1}) && !bytes.Equal(b[:4], []byte{0xa1, 0xb2, 0x3c, 0x4d}) {
		t.Errorf("%s holds % x (%v), want a pcap file header alone", path, b, err)
	}
}

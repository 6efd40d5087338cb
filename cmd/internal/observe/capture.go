package observe

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"github.com/xdpeng/xdpeng/cmd/internal/pcap"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/counter"
)

// Tap puts the capture in front of cfg's handler: one ring per queue. It
// opens the file first, before anything is attached, so that a path that
// cannot be written is refused with the interface untouched; the file is
// written only once Running is called (see captureFile).
func (w *Watcher) Tap(cfg *engine.Config) error {
	if w == nil || w.cfg.Capture == "" {
		return nil
	}
	file, err := openCaptureFile(w.cfg.Capture)
	if err != nil {
		return partErr(PartCaptureFile, err)
	}
	w.capFile = file
	queues := cfg.Queues
	if queues == nil {
		for q := range w.dev.RxQueues {
			queues = append(queues, q)
		}
	}
	w.capRings = make([]int, 0)
	for i, q := range queues {
		for len(w.capRings) <= q {
			w.capRings = append(w.capRings, -1)
		}
		w.capRings[q] = i
	}
	snaplen := w.cfg.Snaplen
	if snaplen == 0 {
		snaplen = int(cfg.FrameSize)
	}
	w.capSnap = snaplen
	pc := pcap.Config{Snaplen: snaplen, Count: w.cfg.CaptureCount, Rings: max(1, len(queues)), Format: pcap.FormatOf(w.cfg.Capture)}
	if pc.Format == pcap.PcapNG {
		// One interface block per ring, which is one per queue.
		for _, q := range queues {
			pc.Interfaces = append(pc.Interfaces, pcap.Interface{Name: w.dev.Name, Description: fmt.Sprintf("%s rx queue %d", w.dev.Name, q)})
		}
		if len(queues) == 0 {
			pc.Interfaces = []pcap.Interface{{Name: w.dev.Name, Description: w.dev.Name}}
		}
	}
	c, err := pcap.Start(w.capFile, pc)
	if err != nil {
		return partErr(PartCapture, err)
	}
	w.capture = c
	inner := cfg.Handler
	cfg.Handler = func(q int) engine.Handler {
		var h engine.Handler
		if inner != nil {
			h = inner(q)
		}
		return pcap.Tap(c.Ring(w.capRings[q]), h)
	}
	return nil
}

// Running is called when the engine is about to run: the capture file
// gets what waited for it.
func (w *Watcher) Running() error {
	if w == nil || w.capFile == nil {
		return nil
	}
	return partErr(PartCapture, w.capFile.start())
}

// CapturePath is the capture's file, "" without a capture.
func (w *Watcher) CapturePath() string {
	if w == nil || w.capture == nil {
		return ""
	}
	return w.cfg.Capture
}

// CaptureSummary is the capture's part of a summary. Every frame the
// workers received is in one of Written, Skipped, Discarded and AfterStop.
type CaptureSummary struct {
	File string `json:"file"`
	// Format is "pcap" or "pcapng", as the file's name asked.
	Format  string `json:"format"`
	Snaplen int    `json:"snaplen"`
	pcap.Stats
	// AfterStop frames arrived after the capture had stopped (its count
	// reached, or a write failed).
	AfterStop uint64 `json:"after_stop"`
	Error     string `json:"error,omitempty"`
	// Received are the frames the workers received, as Finish was told.
	Received uint64 `json:"-"`
}

func (w *Watcher) captureSummary() *CaptureSummary {
	if w == nil || w.capture == nil {
		return nil
	}
	s := w.capStats
	c := &CaptureSummary{File: w.cfg.Capture, Format: pcap.FormatOf(w.cfg.Capture).String(), Snaplen: w.capSnap, Stats: s,
		AfterStop: counter.Sub(w.capRx, s.Written+s.Skipped+s.Discarded), Received: w.capRx}
	if w.capErr != nil {
		c.Error = w.capErr.Error()
	}
	return c
}

// captureFile is the capture's file. openCaptureFile opens it before
// anything is attached, so that a directory, or a path that cannot be
// created or written, is refused first; but it is left as it was until
// start: an existing file is truncated only then, and one that the open
// created is removed again by close if the run never started. Until start
// what is written (the file's header) waits in memory.
type captureFile struct {
	path    string
	mu      sync.Mutex
	f       *os.File
	created bool // the open made the file
	started bool
	buf     bytes.Buffer
}

// openCaptureFile opens path for writing as pcap.OpenFile does: never
// through a symbolic link, a new file 0600, an existing one only if it is
// a regular file of this user's with no other link, or a character device
// (such as /dev/null).
func openCaptureFile(path string) (*captureFile, error) {
	f, created, err := pcap.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return &captureFile{path: path, f: f, created: created}, nil
}

func (c *captureFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return c.buf.Write(p)
	}
	return c.f.Write(p)
}

// start empties a regular file that was there before and writes what
// waited.
func (c *captureFile) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return nil
	}
	if st, err := c.f.Stat(); err == nil && st.Mode().IsRegular() {
		if err := c.f.Truncate(0); err != nil {
			return fmt.Errorf("truncate %s: %w", c.path, err)
		}
	}
	c.started = true
	if _, err := c.f.Write(c.buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	c.buf = bytes.Buffer{}
	return nil
}

// close closes the file; one the open created for a run that never
// started is removed.
func (c *captureFile) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	if !c.started && c.created {
		if rerr := os.Remove(c.path); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

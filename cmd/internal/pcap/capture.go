package pcap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults and limits of Config.
const (
	// DefaultSnaplen is the engine's default frame size: no frame it
	// receives is longer.
	DefaultSnaplen = 2048
	// DefaultSlots is the slots per ring: at 2 Mpps, the 2 ms that the
	// writer may sleep between drains, twice over.
	DefaultSlots = 4096
	// MaxRingBytes bounds Slots x Snaplen, the memory of one ring.
	MaxRingBytes = 1 << 30
	// PollInterval is how long the writer sleeps when it found the rings
	// empty; it flushes the file then, so a reader sees frames within it.
	PollInterval = time.Millisecond
)

// Config describes a Capture. The zero value is one ring with the defaults.
type Config struct {
	// Snaplen is how many bytes of each frame are kept, 1..MaxSnaplen;
	// 0 means DefaultSnaplen.
	Snaplen int
	// Count stops the capture after that many frames are written; 0 means
	// no limit.
	Count uint64
	// Rings is the number of producers, one Ring each; 0 means 1.
	Rings int
	// Slots is the frames each ring holds, a power of two; 0 means
	// DefaultSlots.
	Slots int
	// LinkType is the file's link type; 0 means LinkTypeEthernet.
	LinkType uint32
	// Format is the file's format; the zero value is Pcap.
	Format Format
	// Interfaces, for PcapNG, describe where each ring's frames come
	// from, one per ring; nil gives ring i the description "ring i".
	Interfaces []Interface
}

func (c *Config) validate() error {
	if c.Snaplen == 0 {
		c.Snaplen = DefaultSnaplen
	}
	if c.Rings == 0 {
		c.Rings = 1
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.LinkType == 0 {
		c.LinkType = LinkTypeEthernet
	}
	switch {
	case c.Snaplen < 1 || c.Snaplen > MaxSnaplen:
		return fmt.Errorf("pcap: snapshot length %d out of range 1..%d", c.Snaplen, MaxSnaplen)
	case c.Rings < 0:
		return fmt.Errorf("pcap: %d rings: need at least 1", c.Rings)
	case c.Slots < 0 || c.Slots&(c.Slots-1) != 0:
		return fmt.Errorf("pcap: %d slots per ring: must be a power of two", c.Slots)
	case c.LinkType > MaxLinkType:
		return fmt.Errorf("pcap: link type %d out of range 1..%d", c.LinkType, MaxLinkType)
	case c.Format != Pcap && c.Format != PcapNG:
		return fmt.Errorf("pcap: unknown file format %d", c.Format)
	case c.Interfaces != nil && len(c.Interfaces) != c.Rings:
		return fmt.Errorf("pcap: %d interfaces for %d rings: give one per ring", len(c.Interfaces), c.Rings)
	case c.Slots*c.Snaplen > MaxRingBytes:
		return fmt.Errorf("pcap: %d slots of %d bytes is %d MiB per ring, more than %d MiB",
			c.Slots, c.Snaplen, c.Slots*c.Snaplen>>20, MaxRingBytes>>20)
	}
	return nil
}

// Stats account for every frame offered to the rings: Written + Skipped +
// Discarded, plus the frames Put refused after the capture had stopped.
type Stats struct {
	// Written is the number of frames in the file.
	Written uint64 `json:"written"`
	// Skipped is the number of frames that found their ring full: the
	// writer did not keep up, and they are not in the file.
	Skipped uint64 `json:"skipped"`
	// Discarded is the number of frames taken into a ring and not written
	// because the capture stopped first: Count was reached, a write failed,
	// or Close ran while they were being put.
	Discarded uint64 `json:"discarded"`
}

// Capture writes the frames put into its rings to a pcap or pcapng file.
type Capture struct {
	cfg   Config
	rings []*Ring
	bw    *bufio.Writer
	pw    *Writer
	file  *os.File // closed by Close when Create opened it

	written  atomic.Uint64 // by the writer goroutine
	done     chan struct{} // closed when the writer goroutine stops writing
	closing  chan struct{}
	finished chan struct{} // closed when the writer goroutine returns
	err      error         // the writer's error, read after finished
	once     sync.Once
	stats    Stats
	closeErr error
}

// Create opens the file at path as OpenFile does (truncating an existing
// one) and starts a capture into it; Close closes the file. If the capture
// cannot start, a file the open made is removed.
func Create(path string, cfg Config) (*Capture, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f, created, err := OpenFile(path)
	if err != nil {
		return nil, fmt.Errorf("pcap: %s: %w", path, err)
	}
	var c *Capture
	if st, serr := f.Stat(); serr == nil && st.Mode().IsRegular() {
		err = f.Truncate(0)
	}
	if err == nil {
		c, err = Start(f, cfg)
	}
	if err != nil {
		f.Close()
		if created {
			os.Remove(path)
		}
		return nil, err
	}
	c.file = f
	return c, nil
}

// Start writes the file header to w and starts the writer goroutine. The
// rings' memory, Slots x Snaplen bytes each, is allocated here.
func Start(w io.Writer, cfg Config) (*Capture, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Capture{
		cfg:      cfg,
		bw:       bufio.NewWriterSize(w, 1<<16),
		done:     make(chan struct{}),
		closing:  make(chan struct{}),
		finished: make(chan struct{}),
	}
	var pw *Writer
	var err error
	if cfg.Format == PcapNG {
		ifaces := cfg.Interfaces
		if ifaces == nil {
			for i := range cfg.Rings {
				ifaces = append(ifaces, Interface{Description: fmt.Sprintf("ring %d", i)})
			}
		}
		pw, err = NewNgWriter(c.bw, cfg.Snaplen, cfg.LinkType, ifaces)
	} else {
		pw, err = NewWriter(c.bw, cfg.Snaplen, cfg.LinkType)
	}
	if err == nil {
		err = c.flush(pw)
	}
	if err != nil {
		return nil, fmt.Errorf("pcap: write file header: %w", err)
	}
	c.pw = pw
	for range cfg.Rings {
		c.rings = append(c.rings, newRing(cfg.Slots, cfg.Snaplen))
	}
	go c.run()
	return c, nil
}

// Ring returns the ring of producer i, 0 <= i < Config.Rings.
func (c *Capture) Ring(i int) *Ring { return c.rings[i] }

// Done is closed when the capture stops writing: Count frames were
// written, a write failed (Close returns the error) or Close was called.
func (c *Capture) Done() <-chan struct{} { return c.done }

// Stats returns the counts so far; frames still in the rings are in none of
// them yet.
func (c *Capture) Stats() Stats {
	s := Stats{Written: c.written.Load()}
	for _, r := range c.rings {
		s.Skipped += r.skipped.Load()
	}
	return s
}

// Close stops the capture, writes what the rings hold (up to Count),
// flushes and, if Create opened it, closes the file. A Put running at the
// same time is safe, but its frame may be in none of the counts: for exact
// counts, stop the producers first. It returns the final counts and the
// first error; a second call returns the same.
func (c *Capture) Close() (Stats, error) {
	c.once.Do(func() {
		c.stop()
		close(c.closing)
		<-c.finished
		var taken uint64
		for _, r := range c.rings {
			taken += r.head.Load()
			c.stats.Skipped += r.skipped.Load()
		}
		c.stats.Written = c.written.Load()
		c.stats.Discarded = taken - c.stats.Written
		errs := []error{c.err}
		if c.file != nil {
			if err := c.file.Close(); err != nil {
				errs = append(errs, fmt.Errorf("pcap: close %s: %w", c.file.Name(), err))
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.stats, c.closeErr
}

// stop makes Put refuse frames from now on.
func (c *Capture) stop() {
	for _, r := range c.rings {
		r.stopped.Store(true)
	}
}

// run is the writer goroutine: it drains the rings until Close, Count or a
// write error.
func (c *Capture) run() {
	defer close(c.finished)
	defer func() {
		c.stop()
		if c.err == nil {
			c.err = c.writeStats()
		}
		if err := c.flush(c.pw); err != nil && c.err == nil {
			c.err = err
		}
		close(c.done)
	}()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	heads := make([]uint64, len(c.rings))
	for {
		select {
		case <-c.closing:
			// Put sees stopped before Close waits here, so this pass
			// takes everything put before Close (up to Count).
			c.drain(heads)
			return
		default:
		}
		n, more := c.drain(heads)
		if !more {
			return
		}
		if n == 0 {
			if err := c.flush(c.pw); err != nil {
				c.err = err
				return
			}
			select {
			case <-c.closing:
			case <-tick.C:
			}
		}
	}
}

// writeStats writes each ring's counts once Put takes no more frames: the
// frames offered to it (taken or skipped) and those skipped. A Put that
// is running as the capture stops may be in neither (see Close).
func (c *Capture) writeStats() error {
	now := time.Now()
	for i, r := range c.rings {
		skipped := r.skipped.Load()
		if err := c.pw.WriteInterfaceStats(i, r.head.Load()+skipped, skipped, now); err != nil {
			return err
		}
	}
	return nil
}

// flush writes out what pw and the file's buffer hold.
func (c *Capture) flush(pw *Writer) error {
	if err := pw.Flush(); err != nil {
		return err
	}
	if err := c.bw.Flush(); err != nil {
		return fmt.Errorf("pcap: flush: %w", err)
	}
	return nil
}

// drain writes the frames in the rings up to their current heads, oldest
// timestamp first across rings, and frees their slots. It returns how many
// it wrote and false when the capture is to stop (Count reached, or a write
// failed).
func (c *Capture) drain(heads []uint64) (n int, more bool) {
	for i, r := range c.rings {
		heads[i] = r.head.Load()
	}
	for {
		if c.cfg.Count != 0 && c.written.Load() >= c.cfg.Count {
			return n, false
		}
		// The oldest frame at the tail of a ring; rings are few.
		best := -1
		var bestTS int64
		for i, r := range c.rings {
			t := r.tail.Load()
			if t == heads[i] {
				continue
			}
			if ts := r.meta[t&r.mask].ts; best < 0 || ts < bestTS {
				best, bestTS = i, ts
			}
		}
		if best < 0 {
			return n, true
		}
		r := c.rings[best]
		t := r.tail.Load()
		m := r.meta[t&r.mask]
		if err := c.pw.WritePacket(c.ringIface(best), m.ts, r.slot(t)[:m.capLen], int(m.origLen)); err != nil {
			c.err = err
			return n, false
		}
		r.tail.Store(t + 1)
		c.written.Add(1)
		n++
	}
}

// ringIface is the pcapng interface of ring i's frames: its own.
func (c *Capture) ringIface(i int) int {
	if c.cfg.Format == PcapNG {
		return i
	}
	return 0
}

// Ring is one producer's ring of a Capture. Put may be called from one
// goroutine at a time (one ring per worker).
//
// The fields are grouped on cache lines by who writes them, so that the
// producer and the writer share a line only where they must (head, tail).
type Ring struct {
	// Read-only after newRing.
	mask    uint64
	snaplen int
	meta    []slotMeta
	data    []byte
	_       [64]byte
	// The producer's: head is published, cachedTail is its own. stopped
	// is set once by the capture.
	head       atomic.Uint64 // frames taken
	skipped    atomic.Uint64
	cachedTail uint64
	stopped    atomic.Bool
	_          [64]byte
	// The writer's.
	tail atomic.Uint64 // frames released by the writer
	_    [64]byte
}

type slotMeta struct {
	ts      int64
	capLen  uint32
	origLen uint32
}

func newRing(slots, snaplen int) *Ring {
	return &Ring{
		mask:    uint64(slots - 1),
		snaplen: snaplen,
		meta:    make([]slotMeta, slots),
		data:    make([]byte, slots*snaplen),
	}
}

func (r *Ring) slot(seq uint64) []byte {
	i := int(seq & r.mask)
	return r.data[i*r.snaplen : (i+1)*r.snaplen]
}

// Put copies up to Snaplen bytes of frame, its length and its timestamp ts
// (nanoseconds since the Unix epoch, up to 2106; another value fails the
// capture when it is written) into the ring. It returns false without
// waiting when the ring is full (the frame is counted as skipped) or the
// capture has stopped (not counted: the capture wants no more frames).
func (r *Ring) Put(ts int64, frame []byte) bool {
	if r.stopped.Load() {
		return false
	}
	h := r.head.Load()
	if h-r.cachedTail > r.mask {
		r.cachedTail = r.tail.Load()
		if h-r.cachedTail > r.mask {
			r.skipped.Add(1)
			return false
		}
	}
	n := copy(r.slot(h), frame)
	r.meta[h&r.mask] = slotMeta{ts: ts, capLen: uint32(n), origLen: uint32(len(frame))}
	r.head.Store(h + 1)
	return true
}

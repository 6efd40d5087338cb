package main

// What the long-running commands print when a device goes down, comes back
// or goes away while they run. The AF_XDP modes hear it from the engine
// (engine.Config.OnLinkChange, engine.ErrDeviceGone), kern and gen from an
// engine.LinkWatcher of their own.

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/xdpeng/xdpeng/engine"
)

// linkPrinter prints link changes, as text lines or "link" JSON lines.
type linkPrinter struct {
	w      io.Writer
	json   bool
	mode   string
	start  func() time.Time // when the run started
	downAt map[string]time.Time
}

func newLinkPrinter(w io.Writer, json bool, mode string, start func() time.Time) *linkPrinter {
	return &linkPrinter{w: w, json: json, mode: mode, start: start, downAt: map[string]time.Time{}}
}

// linkJSON is a "link" line.
type linkJSON struct {
	Type      string  `json:"type"`
	Mode      string  `json:"mode"`
	Interface string  `json:"interface"`
	State     string  `json:"state"` // down, up, gone
	AdminUp   bool    `json:"admin_up"`
	Carrier   bool    `json:"carrier"`
	T         float64 `json:"t"`    // seconds into the run
	Time      string  `json:"time"` // RFC 3339, with nanoseconds
	DownS     float64 `json:"down_s,omitempty"`
}

// elapsed is t in seconds since the run started.
func (p *linkPrinter) elapsed(t time.Time) float64 {
	if s := p.start(); !s.IsZero() {
		return t.Sub(s).Seconds()
	}
	return 0
}

// change prints a device going down or coming back up.
func (p *linkPrinter) change(c engine.LinkChange) {
	line := linkJSON{Type: "link", Mode: p.mode, Interface: c.Device, State: "down", AdminUp: c.AdminUp, Carrier: c.Carrier,
		T: round3(p.elapsed(c.Time)), Time: c.Time.Format(time.RFC3339Nano)}
	var down time.Duration
	if c.Up {
		line.State = "up"
		if at, ok := p.downAt[c.Device]; ok {
			down = c.Time.Sub(at)
			line.DownS = round3(down.Seconds())
		}
		delete(p.downAt, c.Device)
	} else {
		p.downAt[c.Device] = c.Time
	}
	if p.json {
		writeJSON(p.w, line)
		return
	}
	at := fmt.Sprintf("[%7.2fs] %s", line.T, c.Device)
	clock := c.Time.Format("15:04:05.000")
	switch {
	case c.Up && down > 0:
		fmt.Fprintf(p.w, "%s is up again at %s, after %.2f s down; the run goes on\n", at, clock, down.Seconds())
	case c.Up:
		fmt.Fprintf(p.w, "%s is up at %s; the run goes on\n", at, clock)
	case !c.AdminUp:
		fmt.Fprintf(p.w, "%s went down at %s (set down): nothing passes until it is up again; the run goes on and counts on\n", at, clock)
	default:
		fmt.Fprintf(p.w, "%s lost its carrier at %s (its link, or its veth peer, is down): nothing passes until it is back; the run goes on and counts on\n", at, clock)
	}
}

// gone prints a JSON "link" line for a device gone (the text says it in the
// error that ends the command) and returns the error with the time into the
// run added.
func (p *linkPrinter) gone(err error) error {
	var ge *engine.DeviceGoneError
	if !errors.As(err, &ge) {
		return err
	}
	t := p.elapsed(ge.Time)
	if p.json {
		writeJSON(p.w, linkJSON{Type: "link", Mode: p.mode, Interface: ge.Device, State: "gone", T: round3(t), Time: ge.Time.Format(time.RFC3339Nano)})
	}
	return fmt.Errorf("%w, %.2f s into the run: the run stopped there, and its totals above count up to then", err, t)
}

// linkChanges makes the channel that a run's link changes come through and
// the engine callback (engine.Config.OnLinkChange) that feeds it without
// ever blocking the engine.
func linkChanges() (<-chan engine.LinkChange, func(engine.LinkChange)) {
	ch := make(chan engine.LinkChange, 64)
	return ch, func(c engine.LinkChange) {
		select {
		case ch <- c:
		default: // 64 changes between two reads: the later ones go unsaid
		}
	}
}

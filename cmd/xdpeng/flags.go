package main

// Flag types and spellings shared by the commands: durations in bare
// seconds (xdpsock's -d 5, -n 2) or Go's units.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// seconds is a duration flag that takes bare seconds as xdpsock and
// xdp-bench do ("5", "0.5") as well as a Go duration ("5s", "500ms", "1m").
type seconds struct{ d *time.Duration }

// parseSeconds reads s as seconds or a duration.
func parseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f > float64(1<<62)/float64(time.Second) || f < -float64(1<<62)/float64(time.Second) {
			return 0, fmt.Errorf("%q: too long", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither seconds (5, 0.5) nor a duration (5s, 500ms, 1m)", s)
	}
	return d, nil
}

func (v seconds) Set(s string) error {
	d, err := parseSeconds(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// String is the duration as Go spells it, but "0" for none, which --help
// then leaves out as pflag does a zero default ("-d ... (default: until
// Ctrl-C)" says what 0 means).
func (v seconds) String() string {
	if v.d == nil || *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (v seconds) Type() string { return "seconds" }

// secondsVarP defines a duration flag that takes bare seconds too.
func secondsVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, value time.Duration, usage string) {
	*p = value
	fs.VarP(seconds{p}, name, short, usage)
}

// irqOrInterval is -I. xdpsock's -I is an IRQ string (the device's
// interrupts to count), xdpeng's was the statistics interval, now -n as in
// xdpsock: a duration given to -I still sets the interval, with a notice;
// anything else is refused with a pointer to --irq, which shows the
// device's interrupt rates (and every CPU's NET_RX softirqs) instead.
type irqOrInterval struct {
	interval *time.Duration
	notice   func(string)
}

func (v irqOrInterval) Set(s string) error {
	d, err := parseSeconds(s)
	if err != nil {
		return fmt.Errorf("xdpsock's -I (an IRQ string, to count the device's interrupts) is --irq here: it finds the device's interrupt lines itself; the statistics interval is -n")
	}
	*v.interval = d
	v.notice("-I is the old spelling of the interval, now -n as in xdpsock (whose -I is an IRQ string)")
	return nil
}

func (v irqOrInterval) String() string { return "" }
func (v irqOrInterval) Type() string   { return "string" }

// intervalFlags defines the statistics interval: -n/--interval, as
// xdpsock's, and -I (see irqOrInterval).
func intervalFlags(fs *pflag.FlagSet, p *time.Duration, usage string) {
	secondsVarP(fs, p, "interval", "n", time.Second, usage+" (seconds, or a duration like 500ms)")
	fs.VarP(irqOrInterval{interval: p, notice: func(s string) { fmt.Fprintln(os.Stderr, "xdpeng: note: "+s) }}, "irq-string", "I",
		"xdpsock's IRQ string: use --irq; -I DURATION still sets the interval")
	_ = fs.MarkHidden("irq-string")
}

// howLong is what a header says about the end of a run: "for 5s" with a
// duration, "Ctrl-C to stop" without.
func howLong(d time.Duration) string {
	if d > 0 {
		return fmt.Sprintf("for %v (Ctrl-C stops sooner)", d)
	}
	return "Ctrl-C to stop"
}

package gen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xdpeng/xdpeng/internal/lab/kfeat"
)

// Method is how a run sends its frames. Every method hands the device
// xdp_frames through its ndo_xdp_xmit, as a NIC's receive path and
// XDP_REDIRECT do, and counts the frames its program redirected; they differ
// in what makes the frames and in what the kernel must grant.
type Method int

const (
	// Auto picks the fastest method the kernel grants: Live where live
	// frames are granted, else XSK, else Packet. ChooseMethod says which.
	Auto Method = iota
	// Live runs the program with BPF_PROG_TEST_RUN in live-frames mode
	// (BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18 and later): the kernel
	// repeats the frame itself, no skb is made. The fastest.
	Live
	// XSK transmits with AF_XDP sockets (engine.Generator, copy mode)
	// into a relay: a veth pair in a network namespace of the run's own,
	// whose far end runs the program in native XDP and redirects each
	// frame to the device through a devmap. Each frame is an skb on the
	// way in and is copied into an xdp_frame by veth. Needs AF_XDP and
	// native XDP on veth.
	XSK
	// Packet transmits with AF_PACKET sockets (sendmmsg, bypassing the
	// queueing discipline, as trafgen does) into the same relay. Needs
	// no AF_XDP.
	Packet
)

var methodNames = [...]string{Auto: "auto", Live: "live", XSK: "xsk", Packet: "packet"}

// Methods are the methods by name, in the order Auto tries them.
var Methods = []Method{Live, XSK, Packet}

func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Describe is a line on what m needs and costs, for help texts.
// Relayed reports whether m sends through gen's veth relay (xsk, packet),
// whose XDP program runs in softirq on the sending CPU.
func (m Method) Relayed() bool { return m == XSK || m == Packet }

func (m Method) Describe() string {
	switch m {
	case Live:
		return "live frames (BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18+): the kernel repeats the frame, no skb; the fastest"
	case XSK:
		return "AF_XDP transmit into a veth relay whose XDP program redirects each frame to the device (an skb per frame, copied into an xdp_frame)"
	case Packet:
		return "AF_PACKET sendmmsg (qdisc bypass, as trafgen) into the same relay; needs no AF_XDP"
	}
	return "the fastest method the kernel grants: live, else xsk, else packet"
}

// ParseMethod takes a method's name.
func ParseMethod(s string) (Method, error) {
	for m, name := range methodNames {
		if s == name {
			return Method(m), nil
		}
	}
	return 0, fmt.Errorf("unknown method %q: use %s", s, strings.Join(methodNames[:], ", "))
}

// MarshalText writes the method's name (JSON, flags).
func (m Method) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText takes a method's name.
func (m *Method) UnmarshalText(b []byte) error {
	v, err := ParseMethod(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// RefusedError says that the kernel refused what a method needs.
type RefusedError struct {
	Method  Method
	Feature string // what was tried
	Err     error  // the kernel's answer
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("gen: method %s: the kernel refuses %s: %v", e.Method, e.Feature, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// ProbeLiveFrames returns the kernel's answer to live frames (a program
// run once in live-frames mode, kfeat): nil where they are granted.
func ProbeLiveFrames() error { return refused(Live, kfeat.LiveFrames) }

// ProbeAFXDP returns the kernel's answer to opening an AF_XDP socket.
func ProbeAFXDP() error { return refused(XSK, kfeat.AFXDP) }

func refused(m Method, name string) error {
	f, _ := kfeat.Lookup(name)
	if f.Err == nil {
		return nil
	}
	return &RefusedError{Method: m, Feature: f.Tried, Err: f.Err}
}

// ChooseMethod resolves Auto to the method Run would use, and for any other
// method checks that the kernel grants what it needs: a *RefusedError says
// what it refused.
func ChooseMethod(m Method) (Method, error) {
	switch m {
	case Auto:
		if ProbeLiveFrames() == nil {
			return Live, nil
		}
		if ProbeAFXDP() == nil {
			return XSK, nil
		}
		return Packet, nil
	case Live:
		return m, ProbeLiveFrames()
	case XSK:
		return m, ProbeAFXDP()
	case Packet:
		return m, nil
	}
	return m, errors.New("gen: " + m.String() + " is not a method")
}

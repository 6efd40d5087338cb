package engine

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cilium/ebpf"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// SteeringConfig chooses what NewSteering attaches.
type SteeringConfig struct {
	Interface string
	// XDPMode is where the program runs; XDPAuto as in Config.
	XDPMode XDPMode
	// Match chooses what goes to the sockets, as Config.Match does; the
	// rest goes to the kernel's stack.
	Match Match
	// MultiBuffer loads the program multi-buffer aware, for workers whose
	// Config.MultiBuffer is set.
	MultiBuffer bool
	// Force and ForceInUse replace an XDP program attached through
	// netlink (never a bpf_link held by a live process), as Config's.
	Force, ForceInUse bool
}

// Steering is the engine's steering program attached to a device with its
// XSKMAP (MaxQueues entries) and no socket in it: the privileged side of
// workers that run without root. A worker puts its sockets in the map
// (Config.XSKMap, the map obtained from a pin or over a Unix socket): each
// receive queue's frames go to the socket at the queue's index, and
// everything else (no socket at that index, or not Match's) to the
// kernel's stack.
//
// The program is attached through a bpf_link where the kernel has XDP
// links (5.9 and later), so the kernel detaches it when the process dies;
// a pin made by Pin outlives the process until removed. Its methods are
// not safe for concurrent use.
type Steering struct {
	name string
	mode XDPMode
	prog *bpf.XskRedirect
	link io.Closer
	pins []string
}

// NewSteering attaches the steering program to cfg.Interface. It refuses,
// as New does, a device that holds another XDP program (an
// *AttachedError), unless cfg.Force and the program is replaceable.
func NewSteering(cfg SteeringConfig) (_ *Steering, err error) {
	if cfg.Interface == "" {
		return nil, errors.New("no interface given")
	}
	if err := cfg.Match.Validate(); err != nil {
		return nil, err
	}
	facts, err := probe(cfg.Interface)
	if err != nil {
		return nil, err
	}
	c := Config{Interface: cfg.Interface, XDPMode: cfg.XDPMode, MultiBuffer: cfg.MultiBuffer}
	if err := c.resolveXDPMode(&facts.Info, facts.Plan()); err != nil {
		return nil, err
	}
	if err := c.checkMultiBuffer(facts, facts.Plan()); err != nil {
		return nil, err
	}
	if err := attachedError(foreignXDP(facts, netdev.ReplaceOf(cfg.Force, cfg.ForceInUse))); err != nil {
		return nil, err
	}
	s := &Steering{name: cfg.Interface, mode: c.XDPMode}
	if s.prog, err = bpf.NewXskRedirect(bpf.XskOptions{Match: xskMatch(cfg.Match), Frags: cfg.MultiBuffer}); err != nil {
		return nil, err
	}
	if s.link, err = hook.AttachXDP(s.prog.Program, facts.Info.Index, hookMode(s.mode), netdev.ReplaceOf(cfg.Force, cfg.ForceInUse)); err != nil {
		s.prog.Close()
		return nil, attachedError(err)
	}
	return s, nil
}

// XSKMap is the map workers put their sockets in: valid until Close.
func (s *Steering) XSKMap() *ebpf.Map { return s.prog.XsksMap }

// Mode is where the program runs (XDPAuto resolved).
func (s *Steering) Mode() XDPMode { return s.mode }

// Pin pins the XSKMAP at path, a file in a bpffs that must not exist yet,
// readable and writable by its owner only (0600; the caller may chown it
// to the workers' user). Close removes it.
func (s *Steering) Pin(path string) error {
	if err := s.prog.XsksMap.Pin(path); err != nil {
		return fmt.Errorf("pin the XSKMAP of %s at %s: %w", s.name, path, err)
	}
	s.pins = append(s.pins, path)
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("pin the XSKMAP of %s at %s: %w", s.name, path, err)
	}
	return nil
}

// Close detaches the program, removes the pins Pin made and closes the
// map. Workers' sockets still in the map receive nothing more.
func (s *Steering) Close() error {
	var errs []error
	if s.link != nil {
		errs = append(errs, s.link.Close())
		s.link = nil
	}
	for _, p := range s.pins {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the pin %s: %w", p, err))
		}
	}
	s.pins = nil
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
		s.prog = nil
	}
	return errors.Join(errs...)
}

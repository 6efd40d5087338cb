//go:build !linux

package engine

import (
	"fmt"
	"net"
	"net/netip"
)

// New validates cfg and fails with ErrNotSupported: an engine needs Linux.
// Simulate and Sim run a handler on every operating system.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("engine on %s: %w", cfg.Interface, ErrNotSupported)
}

// NewGenerator validates cfg and fails with ErrNotSupported: a generator
// needs Linux.
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("generator on %s: %w", cfg.Interface, ErrNotSupported)
}

// LookupDevice fails with ErrNotSupported: devices are looked up through
// Linux's netlink.
func LookupDevice(name string) (Device, error) {
	return Device{}, fmt.Errorf("look up %s: %w", name, ErrNotSupported)
}

// NextHopMAC fails with ErrNotSupported: neighbours and veth peers are
// Linux's.
func NextHopMAC(device string, dst netip.Addr) (net.HardwareAddr, error) {
	return nil, fmt.Errorf("next hop out of %s: %w", device, ErrNotSupported)
}

// WatchLinks fails with ErrNotSupported: link notifications are Linux's
// netlink.
func WatchLinks(names ...string) (*LinkWatcher, error) {
	return nil, fmt.Errorf("watch links: %w", ErrNotSupported)
}

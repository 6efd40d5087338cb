//go:build !linux

package xsk

import "fmt"

// NewUmem fails with ErrNotSupported: AF_XDP needs Linux. In-memory UMEMs
// (NewMemUmem) work everywhere.
func NewUmem(cfg UmemConfig) (*Umem, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("create AF_XDP socket: %w", ErrNotSupported)
}

func closeFD(int) error { return nil }

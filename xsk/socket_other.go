//go:build !linux

package xsk

import "fmt"

// NewSocket fails with ErrNotSupported: AF_XDP needs Linux. In-memory
// sockets (NewMemSocket) work everywhere.
func NewSocket(u *Umem, cfg SocketConfig) (*Socket, error) {
	if err := cfg.Validate(u); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("create AF_XDP socket: %w", ErrNotSupported)
}

// The system calls of a socket that NewSocket made; there is none here.

func (s *Socket) wakeRx() error                   { return ErrNotSupported }
func (s *Socket) wakeTx() error                   { return ErrNotSupported }
func (s *Socket) poll(int, bool) (bool, error)    { return false, ErrNotSupported }
func (s *Socket) setBusyPoll(int, int) error      { return ErrNotSupported }
func (s *Socket) napiID() (uint32, error)         { return 0, ErrNotSupported }
func (s *Socket) statistics() (Statistics, error) { return Statistics{}, ErrNotSupported }

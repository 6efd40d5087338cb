package engine

import (
	"errors"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// LookupDevice returns the device called name in the calling thread's
// network namespace; a *DeviceError if there is none.
func LookupDevice(name string) (Device, error) {
	info, err := lookup(name)
	if err != nil {
		return Device{}, err
	}
	return deviceOf(info), nil
}

func lookup(name string) (*netdev.Info, error) {
	info, err := netdev.Lookup(name)
	var nf *netdev.NoInterfaceError
	if errors.As(err, &nf) {
		return nil, &DeviceError{Name: nf.Name}
	}
	return info, err
}

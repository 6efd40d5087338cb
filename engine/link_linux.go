package engine

import (
	"fmt"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// watchLinks starts watching the devices in the calling thread's network
// namespace, which is the one they were looked up in.
func (c *core) watchLinks(devs ...*netdev.Info) error {
	names := map[int]string{}
	for _, d := range devs {
		names[d.Index] = d.Name
	}
	w, err := netdev.WatchLinks(names)
	if err != nil {
		return err
	}
	c.links = newLinkWatcher(w)
	return nil
}

// WatchLinks starts watching the devices called names in the calling
// thread's network namespace, from the kernel's link notifications; the
// watch stays in that namespace, whatever thread reads it. A device that
// does not exist is a *DeviceError; one deleted once the watch has started
// is told on Gone.
func WatchLinks(names ...string) (*LinkWatcher, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("watch links: no device given")
	}
	byIndex := map[int]string{}
	for _, n := range names {
		info, err := lookup(n)
		if err != nil {
			return nil, fmt.Errorf("watch links: %w", err)
		}
		byIndex[info.Index] = info.Name
	}
	w, err := netdev.WatchLinks(byIndex)
	if err != nil {
		return nil, err
	}
	return newLinkWatcher(w), nil
}

package engine

import "github.com/xdpeng/xdpeng/internal/netdev"

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
	c.links = w
	return nil
}

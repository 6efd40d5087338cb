package testbed

import (
	"path/filepath"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Place is a test bed namespace that holds an interface (FindInterface).
type Place struct {
	// Bed is the test bed's name, Namespace its namespace that holds the
	// interface (Bed-gen or Bed-dut).
	Bed, Namespace string
	// SameBed says the caller runs in one of the bed's namespaces.
	SameBed bool
}

// FindInterface returns the test bed namespaces that hold an interface
// called dev, in the order of List, the generator's before the DUT's: what
// to tell a user who looked for dev in the wrong namespace. Namespaces it
// cannot enter (without CAP_SYS_ADMIN: none) are left out; the error is
// List's.
func FindInterface(dev string) ([]Place, error) {
	beds, err := List()
	if err != nil {
		return nil, err
	}
	here, err := netns.Get()
	if err != nil {
		return nil, nil
	}
	defer here.Close()
	var places []Place
	for _, bed := range beds {
		var found []string
		same := false
		for _, ns := range []string{GenNS(bed), DUTNS(bed)} {
			if h, err := netns.GetFromPath(filepath.Join(NetnsDir, ns)); err == nil {
				same = same || h.Equal(here)
				h.Close()
			}
			if Do(ns, func() error { _, err := netlink.LinkByName(dev); return err }) == nil {
				found = append(found, ns)
			}
		}
		for _, ns := range found {
			places = append(places, Place{Bed: bed, Namespace: ns, SameBed: same})
		}
	}
	return places, nil
}

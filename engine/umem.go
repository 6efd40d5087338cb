package engine

// The memory behind an engine's or a generator's UMEMs: the frame geometry
// of the Config and the choice between huge and normal pages.

import (
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/xsk"
)

// UmemInfo describes the UMEMs of an engine or a generator as they were set
// up.
type UmemInfo struct {
	// FrameSize and Headroom are Config.FrameSize and FrameHeadroom.
	FrameSize, Headroom uint32
	// Unaligned: unaligned chunk mode (Config.Unaligned).
	Unaligned bool
	// MultiBuffer: frames may span several UMEM frames.
	MultiBuffer bool
	// HugePages reports whether huge pages of HugePageSize bytes back
	// every UMEM.
	HugePages    bool
	HugePageSize int
	// Note says why the UMEMs are in normal pages where huge pages were
	// wanted (unaligned mode, HugePagesAuto): the pool had too few free.
	// Empty otherwise.
	Note string
}

// umemPages is the choice of pages for the UMEMs of one engine.
type umemPages struct {
	huge     bool // put the UMEMs in huge pages
	auto     bool // fall back to normal pages when the pool runs short
	pageSize int  // of a huge page
	note     string
}

// choosePages decides where UMEMs of the given sizes go: huge pages when
// required, or in unaligned mode when the pool has enough free for all of
// them; normal pages otherwise, with a note where huge pages were wanted.
func choosePages(mode HugePageMode, unaligned bool, sizes []int) (umemPages, error) {
	if mode == HugePagesOff || mode == HugePagesAuto && !unaligned {
		return umemPages{}, nil
	}
	hp, err := xsk.ReadHugePages()
	if err != nil {
		return umemPages{}, err
	}
	need := 0
	for _, s := range sizes {
		need += hp.PagesFor(s)
	}
	short := hp.Size == 0 || hp.Available() < need
	switch {
	case short && mode == HugePagesOn:
		return umemPages{}, hugePagesError(need, hp, nil)
	case hp.Size == 0:
		return umemPages{note: "this kernel has no huge pages: the UMEMs are in normal pages"}, nil
	case short:
		return umemPages{note: fmt.Sprintf("the UMEMs need %d huge pages of %d kB and the pool has %d free (HugePages_Free in /proc/meminfo): they are in normal pages",
			need, hp.Size>>10, hp.Available())}, nil
	}
	return umemPages{huge: true, auto: mode == HugePagesAuto, pageSize: hp.Size}, nil
}

// newUmem maps and registers a UMEM in the pages chosen, and keeps it for
// Close. In auto mode a pool that runs short after all (another process
// took pages, or the kernel has not yet taken back those of a UMEM just
// closed) puts the UMEM in normal pages, and the note says so.
func (c *core) newUmem(uc xsk.UmemConfig) (*xsk.Umem, error) {
	uc.HugePages = c.pages.huge
	u, err := xsk.NewUmem(uc)
	if err != nil && c.pages.huge && c.pages.auto && errors.Is(err, xsk.ErrNoHugePages) {
		c.pages.huge = false
		c.pages.note = fmt.Sprintf("the huge page pool ran short while the UMEMs were made (%v): the rest are in normal pages", err)
		uc.HugePages = false
		u, err = xsk.NewUmem(uc)
	}
	if err != nil {
		var he *xsk.HugePagesError
		if errors.As(err, &he) {
			return nil, hugePagesError(he.Need, he.Pages, he.Err)
		}
		return nil, err
	}
	c.umems = append(c.umems, u)
	return u, nil
}

// umemInfo describes the core's UMEMs, made from cfg.
func (c *core) umemInfo(cfg *Config) UmemInfo {
	info := UmemInfo{FrameSize: cfg.FrameSize, Headroom: cfg.FrameHeadroom, Unaligned: cfg.Unaligned,
		MultiBuffer: cfg.MultiBuffer, Note: c.pages.note}
	info.HugePages = len(c.umems) > 0
	for _, u := range c.umems {
		info.HugePages = info.HugePages && u.HugePages()
	}
	if info.HugePages {
		info.HugePageSize = c.pages.pageSize
	}
	return info
}

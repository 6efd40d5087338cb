//go:build linux

package netdev

import (
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/xdpeng/xdpeng/internal/testutil/difftest"
	"golang.org/x/sys/unix"
)

// linkUpdate is a link notification about index with flags.
func linkUpdate(typ uint16, family byte, index int, flags uint32) netlink.LinkUpdate {
	var u netlink.LinkUpdate
	u.Header.Type = typ
	u.IfInfomsg = nl.IfInfomsg{IfInfomsg: unix.IfInfomsg{Family: family, Index: int32(index), Flags: flags}}
	return u
}

func TestLinkChanges(t *testing.T) {
	const up, running = unix.IFF_UP, unix.IFF_UP | unix.IFF_LOWER_UP
	names := map[int]string{5: "dut0", 6: "dut1"}
	state := map[int]*linkState{}
	steps := []struct {
		name    string
		updates []netlink.LinkUpdate
		want    []LinkEvent
	}{
		{"first state of each: no event", []netlink.LinkUpdate{
			linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, running), linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 6, running)}, nil},
		{"another device", []netlink.LinkUpdate{linkUpdate(unix.RTM_DELLINK, unix.AF_UNSPEC, 7, 0)}, nil},
		{"set down", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, 0)},
			[]LinkEvent{{Kind: LinkDown, Index: 5, Name: "dut0"}}},
		{"still down, another flag", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, unix.IFF_PROMISC)}, nil},
		{"up without carrier", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, up)}, nil},
		{"carrier", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, running)},
			[]LinkEvent{{Kind: LinkUp, Index: 5, Name: "dut0", AdminUp: true, Carrier: true}}},
		{"carrier lost", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 6, up)},
			[]LinkEvent{{Kind: LinkDown, Index: 6, Name: "dut1", AdminUp: true}}},
		{"a bridge port leaves its bridge", []netlink.LinkUpdate{linkUpdate(unix.RTM_DELLINK, unix.AF_BRIDGE, 5, running)}, nil},
		{"not a link message", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWADDR, unix.AF_UNSPEC, 5, 0)}, nil},
		{"deleted", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, 0), linkUpdate(unix.RTM_DELLINK, unix.AF_UNSPEC, 5, 0)},
			[]LinkEvent{{Kind: LinkDown, Index: 5, Name: "dut0"}, {Kind: LinkGone, Index: 5, Name: "dut0"}}},
		{"nothing more about a device gone", []netlink.LinkUpdate{linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, running)}, nil},
	}
	for _, s := range steps {
		var got []LinkEvent
		for _, u := range s.updates {
			if n, ok := noteOf(u); ok {
				if ev, changed := linkChange(names, state, n); changed {
					got = append(got, ev)
				}
			}
		}
		if diff := difftest.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	// A device found gone when asked.
	if ev, ok := linkChange(names, state, linkNote{index: 6, gone: true}); !ok || ev != (LinkEvent{Kind: LinkGone, Index: 6, Name: "dut1"}) {
		t.Errorf("dut1 found gone: %+v %v, want it gone", ev, ok)
	}
	if len(names) != 0 {
		t.Errorf("devices still watched after both went: %v", names)
	}
}

func TestLinkEventKindString(t *testing.T) {
	for k, want := range map[LinkEventKind]string{LinkDown: "down", LinkUp: "up", LinkGone: "gone", 9: "LinkEventKind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", int(k), got, want)
		}
	}
}

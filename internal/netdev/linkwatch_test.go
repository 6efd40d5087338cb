//go:build linux

package netdev

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/difftest"
	"golang.org/x/sys/unix"
)

// linkMsg is a netlink link message about index with flags.
func linkMsg(typ uint16, family byte, index int, flags uint32) syscall.NetlinkMessage {
	data := make([]byte, unix.SizeofIfInfomsg)
	data[0] = family
	binary.NativeEndian.PutUint32(data[4:], uint32(index))
	binary.NativeEndian.PutUint32(data[8:], flags)
	return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ}, Data: data}
}

// errMsg is the reply to a query (sequence number seq) that failed with errno.
func errMsg(seq uint32, errno unix.Errno) syscall.NetlinkMessage {
	data := make([]byte, 4+unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(data, uint32(-int32(errno)))
	return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: unix.NLMSG_ERROR, Seq: seq}, Data: data}
}

func TestLinkChanges(t *testing.T) {
	const up, running = unix.IFF_UP, unix.IFF_UP | unix.IFF_LOWER_UP
	names := map[int]string{5: "dut0", 6: "dut1"}
	state := map[int]*linkState{}
	steps := []struct {
		name string
		msgs []syscall.NetlinkMessage
		want []LinkEvent
	}{
		{"first state of each: no event", []syscall.NetlinkMessage{
			linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, running), linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 6, running)}, nil},
		{"another device", []syscall.NetlinkMessage{linkMsg(unix.RTM_DELLINK, unix.AF_UNSPEC, 7, 0)}, nil},
		{"set down", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, 0)},
			[]LinkEvent{{Kind: LinkDown, Index: 5, Name: "dut0"}}},
		{"still down, another flag", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, unix.IFF_PROMISC)}, nil},
		{"up without carrier", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, up)}, nil},
		{"carrier", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, running)},
			[]LinkEvent{{Kind: LinkUp, Index: 5, Name: "dut0", AdminUp: true, Carrier: true}}},
		{"carrier lost", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 6, up)},
			[]LinkEvent{{Kind: LinkDown, Index: 6, Name: "dut1", AdminUp: true}}},
		{"a bridge port leaves its bridge", []syscall.NetlinkMessage{linkMsg(unix.RTM_DELLINK, unix.AF_BRIDGE, 5, running)}, nil},
		{"deleted", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, 0), linkMsg(unix.RTM_DELLINK, unix.AF_UNSPEC, 5, 0)},
			[]LinkEvent{{Kind: LinkDown, Index: 5, Name: "dut0"}, {Kind: LinkGone, Index: 5, Name: "dut0"}}},
		{"nothing more about a device gone", []syscall.NetlinkMessage{linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, running)}, nil},
		{"a query answered ENODEV", []syscall.NetlinkMessage{errMsg(6, unix.ENODEV)},
			[]LinkEvent{{Kind: LinkGone, Index: 6, Name: "dut1"}}},
	}
	for _, s := range steps {
		got := linkChanges(s.msgs, names, state)
		if diff := difftest.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
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

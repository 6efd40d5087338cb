package kfeat

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/internal/testutil/linktest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// TestProbe tries every feature as root: each is named, in a fixed order,
// says what it tried, what needs it and what to use instead, and a refusal
// carries the kernel's answer; a second call gives the same answers. The
// probes leave nothing: the process stays in its network namespace, lo
// has no XDP program, and the kernel has the XDP links it had.
func TestProbe(t *testing.T) {
	privtest.Root(t)
	nsBefore, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	links := linktest.XDP(t)
	fs := Probe()
	want := []string{LiveFrames, AFXDP, TestRun, AdjustMeta, RxKfuncs, Frags, BusyPoll, ThreadedBusyPoll, XDPLink, TCX, Devmap}
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
		if f.Tried == "" || f.Needs == "" || f.Instead == "" {
			t.Errorf("%s: tried %q, needs %q, instead %q: each must be said", f.Name, f.Tried, f.Needs, f.Instead)
		}
		if f.Granted() {
			t.Logf("%s: granted", f.Name)
			continue
		}
		line := f.Refused()
		if !strings.HasPrefix(line, f.Name+" refused by this kernel (") || !strings.Contains(line, f.Err.Error()) || !strings.HasSuffix(line, f.Instead) {
			t.Errorf("%s: refusal line %q", f.Name, line)
		}
		t.Logf("%s", line)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("features %q, want %q", names, want)
	}
	again := Probe()
	for i := range fs {
		if fs[i].Name != again[i].Name || !errors.Is(again[i].Err, fs[i].Err) {
			t.Errorf("%s: answered %v, then %v", fs[i].Name, fs[i].Err, again[i].Err)
		}
	}
	if f, ok := Lookup(TCX); !ok || f.Name != TCX {
		t.Errorf("Lookup(%q) = %+v, %v", TCX, f, ok)
	}
	if _, ok := Lookup("no such feature"); ok {
		t.Error("Lookup of an unknown name found one")
	}

	if ns, err := os.Readlink("/proc/self/ns/net"); err != nil || ns != nsBefore {
		t.Errorf("network namespace %s after the probes (%v), %s before", ns, err, nsBefore)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if x := lo.Attrs().Xdp; x != nil && x.Attached {
		t.Errorf("lo has an XDP program after the probes: %+v", x)
	}
	if now := linktest.XDP(t); !slices.Equal(now, links) {
		t.Errorf("XDP links %v after the probes, %v before", now, links)
	}
}

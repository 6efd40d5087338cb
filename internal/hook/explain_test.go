package hook

import (
	"errors"
	"regexp"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestExplainXDPHasNoFlags: hook's errors say what happened, with the
// kernel's errno and a sentinel a caller can test, and name no flag of the
// CLI's (the CLI adds its advice).
func TestExplainXDPHasNoFlags(t *testing.T) {
	dev := &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "dut0", Index: 1 << 30}}
	flag := regexp.MustCompile(`(^|[\s(])--?[a-zA-Z]`)
	for _, tc := range []struct {
		errno error
		mode  XDPMode
		is    error
	}{
		{unix.EOPNOTSUPP, Native, ErrNoNativeXDP},
		{unix.ERANGE, Native, ErrMTUTooLarge},
		{unix.E2BIG, Generic, ErrMTUTooLarge},
		{unix.EPERM, Native, unix.EPERM},
		{unix.EIO, Native, unix.EIO},
	} {
		err := explainXDP(tc.errno, dev, tc.mode)
		if !errors.Is(err, tc.is) || !errors.Is(err, tc.errno) {
			t.Errorf("%v in %s mode: %v does not wrap %v and the errno", tc.errno, tc.mode, err, tc.is)
		}
		if flag.MatchString(err.Error()) {
			t.Errorf("%v in %s mode: %q names a flag", tc.errno, tc.mode, err)
		}
	}
}

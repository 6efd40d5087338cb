package selftest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRunGuard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  []ringRestore
		errs  int
	}{
		{"all put back", "rings - 3 eth0 256 256\nrestored - 3\n", nil, 0},
		{"killed during a test", "rings - 3 eth0 256 256\nrings ns1 7 veth1 512 128\nrestored ns1 7\n",
			[]ringRestore{{ns: "-", index: 3, name: "eth0", rx: 256, tx: 256}}, 0},
		// A second change of one device before it was put back keeps
		// the sizes the device had first.
		{"changed twice", "rings - 3 eth0 256 256\nrings - 3 eth0 128 64\n",
			[]ringRestore{{ns: "-", index: 3, name: "eth0", rx: 256, tx: 256}}, 0},
		{"in the order told", "rings - 4 eth1 100 100\nrings - 3 eth0 200 200\n",
			[]ringRestore{{ns: "-", index: 4, name: "eth1", rx: 100, tx: 100}, {ns: "-", index: 3, name: "eth0", rx: 200, tx: 200}}, 0},
		{"bad lines counted, good ones kept", "rings - x eth0 1 1\nhello\nrings - 3 eth0 256 256\n",
			[]ringRestore{{ns: "-", index: 3, name: "eth0", rx: 256, tx: 256}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ringRestore
			errs := runGuard(strings.NewReader(tc.input), func(rr ringRestore) error { got = append(got, rr); return nil })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("put back %+v, want %+v", got, tc.want)
			}
			if len(errs) != tc.errs {
				t.Errorf("errors %v, want %d", errs, tc.errs)
			}
		})
	}
	errs := runGuard(strings.NewReader("rings - 3 eth0 256 256\n"), func(ringRestore) error { return errors.New("EBUSY") })
	if len(errs) != 1 {
		t.Errorf("a failed put-back: errors %v, want 1", errs)
	}
}

package selftest

import "testing"

// The guard's keys and values read back as the device and sizes to put
// back; what is not a device's is refused.
func TestRingGuardLines(t *testing.T) {
	e := End{NS: "ns1", Name: "veth1", Index: 7}
	want := ringRestore{ns: "ns1", index: 7, name: "veth1", rx: 512, tx: 128}
	if got, err := parseRingRestore(ringKey(e), "veth1 512 128"); err != nil || got != want {
		t.Errorf("parse = %+v, %v; want %+v", got, err, want)
	}
	if got, err := parseRingRestore(ringKey(End{Name: "eth0", Index: 3}), "eth0 256 256"); err != nil || got.ns != "-" {
		t.Errorf("the caller's namespace: %+v, %v", got, err)
	}
	for _, bad := range [][2]string{{"rings/-/x", "eth0 1 1"}, {"napi/3", "eth0 1 1"}, {"rings/-/3", "eth0 1"}, {"rings/-/3", "eth0 x 1"}} {
		if _, err := parseRingRestore(bad[0], bad[1]); err == nil {
			t.Errorf("parse %q %q: no error", bad[0], bad[1])
		}
	}
}

package engine

import (
	"encoding/binary"
	"strings"
	"testing"
)

// obj is the path of one of package bpf's objects for this machine's
// byte order.
func obj(name string) string {
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		return "../bpf/" + name + "_bpfeb.o"
	}
	return "../bpf/" + name + "_bpfel.o"
}

// TestLoadUserProgramRefuses: what LoadUserProgram refuses before it loads
// anything (no privilege needed).
func TestLoadUserProgramRefuses(t *testing.T) {
	for _, tc := range []struct {
		obj, name, want string
	}{
		{obj("xskredirect"), "nope", "no XDP program named nope"},
		{obj("kern"), "", "XDP programs ("},
		{obj("xdperr"), "", "no XDP program in it"},
		{"/nonexistent.o", "", "no such file"},
	} {
		if _, err := LoadUserProgram(tc.obj, tc.name, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:%s: %v, want %q", tc.obj, tc.name, err, tc.want)
		}
	}
}

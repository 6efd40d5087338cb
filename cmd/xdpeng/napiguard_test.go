package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The guard puts back, in the order told, the first settings told of each
// NAPI not said restored, and names the lines it cannot read.
func TestRunNAPIGuard(t *testing.T) {
	in := strings.Join([]string{
		"napi 7 0 0 0",
		"napi 9 1 1000 0",
		"napi 7 2 200000 0", // a later change of NAPI 7 keeps its own
		"restored 9",
		"napi 11 0 50000 20000000",
		"bogus line",
		"napi x 0 0 0",
	}, "\n")
	type set struct {
		id uint32
		c  netdev.NAPIConfig
	}
	var got []set
	errs := runNAPIGuard(strings.NewReader(in), func(id uint32, c netdev.NAPIConfig) error {
		got = append(got, set{id, c})
		if id == 11 {
			return errors.New("gone")
		}
		return nil
	})
	want := []set{{7, netdev.NAPIConfig{}}, {11, netdev.NAPIConfig{GROFlushTimeout: 50 * time.Microsecond, IRQSuspendTimeout: 20 * time.Millisecond}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("put back %+v, want %+v", got, want)
	}
	if len(errs) != 3 {
		t.Errorf("errors %v: want the two lines it could not read and NAPI 11's failure", errs)
	}
	if errs := runNAPIGuard(strings.NewReader("napi 3 0 0 0\nrestored 3\n"), func(uint32, netdev.NAPIConfig) error {
		t.Error("a restored NAPI put back again")
		return nil
	}); len(errs) != 0 {
		t.Error(errs)
	}
}

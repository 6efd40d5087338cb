//go:build linux

package progbench

import (
	"reflect"
	"testing"
)

func TestOverDrop(t *testing.T) {
	res := []Result{
		{Program: XskRedirect, Size: 64, Rounds: []float64{28, 29, 29}},
		{Program: Drop, Size: 64, Rounds: []float64{22, 22, 30}},
		{Program: Pass, Size: 64, Rounds: []float64{22, 23}},      // rounds do not pair: left out
		{Program: XskRedirect, Size: 1500, Rounds: []float64{40}}, // no drop at 1500: left out
	}
	got := OverDrop(res)
	want := []Delta{{Program: XskRedirect, Size: 64, Ns: 6}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OverDrop = %+v, want %+v", got, want)
	}
}

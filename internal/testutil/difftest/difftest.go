// Package difftest compares what a test got with what it wanted, for the
// library's tests, which do without go-cmp (the library module's graph has
// no test-only dependency).
package difftest

import (
	"fmt"
	"reflect"
)

// Diff returns "" if want and got are deeply equal (reflect.DeepEqual: a nil
// slice differs from an empty one), else both, and for two byte slices the
// first offset where they differ.
func Diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	w, wok := want.([]byte)
	g, gok := got.([]byte)
	if wok && gok {
		i := 0
		for i < len(w) && i < len(g) && w[i] == g[i] {
			i++
		}
		return fmt.Sprintf("%d bytes wanted, %d got, first difference at offset %d\nwant % x\n got % x", len(w), len(g), i, w, g)
	}
	if fmt.Sprint(want) == fmt.Sprint(got) {
		return fmt.Sprintf("want %#v\n got %#v", want, got)
	}
	return fmt.Sprintf("want %+v\n got %+v", want, got)
}

package bpf

import (
	"errors"
	"testing"
)

func TestCheckKfuncs(t *testing.T) {
	missing := Kfunc{Name: "bpf_xdpeng_no_such_kfunc", Since: "99.0"}
	err := CheckKfuncs(missing)
	var ke *KfuncError
	if !errors.Is(err, ErrNoKfunc) || !errors.As(err, &ke) || ke.Kfunc != missing {
		t.Fatalf("CheckKfuncs(%s) = %v, want a *KfuncError for it", missing.Name, err)
	}
}

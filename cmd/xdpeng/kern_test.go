package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/lab/kern"
)

// TestKernProtoRows: kern --count-proto names protocols as count does,
// "proto 17 (udp)", and frames that are not IP "other (not IP)".
func TestKernProtoRows(t *testing.T) {
	var out bytes.Buffer
	p := &kernPrinter{w: &out}
	var protos []kernRate
	for _, n := range []int{17, 47, kern.ProtoNotIP} {
		protos = append(protos, kernRate{Proto: intp(n), ProtoName: kernProtoName(n), Packets: 5})
	}
	p.rows(nil, nil, nil, protos, nil, false)
	for _, want := range []string{"proto 17 (udp)", "proto 47 (gre)", "other (not IP)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rows do not say %q:\n%s", want, out.String())
		}
	}
}

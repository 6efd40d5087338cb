// Package linktest lists the kernel's bpf_links for the tests that check a
// run leaves none of its own behind.
package linktest

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf/link"
)

// XDP returns the IDs of the XDP bpf_links in the kernel, of every network
// namespace, in order; a failed listing fails the test.
func XDP(tb testing.TB) []link.ID {
	tb.Helper()
	var ids []link.ID
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil {
			continue // gone while read
		}
		if info.Type == link.XDPType {
			ids = append(ids, it.ID)
		}
	}
	if err := it.Err(); err != nil {
		tb.Fatalf("list bpf links: %v", err)
	}
	slices.Sort(ids)
	return ids
}

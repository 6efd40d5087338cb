// Package platform holds what xdpeng's packages share about the operating
// system they run on: the error that code needing Linux returns elsewhere.
package platform

import "errors"

// ErrNotSupported is returned by what needs Linux (AF_XDP, XDP, netlink,
// CPU affinity) on other operating systems; the packages that can return
// it export this same value.
var ErrNotSupported = errors.New("not supported on this operating system (AF_XDP and XDP need Linux)")

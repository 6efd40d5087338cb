module github.com/xdpeng/xdpeng

go 1.25.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/safchain/ethtool v0.7.0
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.43.0
)

require (
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go

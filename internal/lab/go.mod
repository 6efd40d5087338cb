module github.com/xdpeng/xdpeng/internal/lab

go 1.26.0

require github.com/xdpeng/xdpeng v0.0.0-00010101000000-000000000000

replace github.com/xdpeng/xdpeng => ../..

require (
	github.com/asavie/xdp v0.3.3
	github.com/cilium/ebpf v0.22.0
	github.com/google/go-cmp v0.7.0
	github.com/google/gopacket v1.1.19
	github.com/prometheus/procfs v0.22.0
	github.com/safchain/ethtool v0.7.0
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.50.0
)

// Package units formats rates and counts for people: the one place that
// decides how xdpeng prints packets per second, bits per second and sizes.
package units

import "fmt"

// PPS formats a packet rate: "12.35 Mpps", "980.1 Kpps", "12 pps".
func PPS(pps float64) string { return scaled(pps, "pps") }

// BPS formats a bit rate: "9.87 Gbps".
func BPS(bps float64) string { return scaled(bps, "bps") }

func scaled(v float64, unit string) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f G%s", v/1e9, unit)
	case v >= 1e6:
		return fmt.Sprintf("%.2f M%s", v/1e6, unit)
	case v >= 1e3:
		return fmt.Sprintf("%.1f K%s", v/1e3, unit)
	default:
		return fmt.Sprintf("%.0f %s", v, unit)
	}
}

// Mpps converts packets and seconds to millions of packets per second.
func Mpps(packets uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(packets) / seconds / 1e6
}

// WireBits is the number of bits a frame of size bytes occupies on an
// Ethernet wire: the frame plus its 4-byte FCS, preamble (8) and gap (12).
// xdpsock reports bps this way too.
func WireBits(size uint64) uint64 { return (size + 4 + 8 + 12) * 8 }

// Package pcap writes frames to a classic pcap file, and captures frames from
// a data path into one without making the data path wait.
//
// # The format
//
// The file is classic pcap (libpcap's format, what `tcpdump -w` writes), with
// the nanosecond magic number 0xa1b23c4d, little-endian: tcpdump, Wireshark,
// tshark and gopacket's pcapgo read it, nanoseconds included. pcapng was not
// chosen because what it adds is not needed here: a capture holds the frames
// of one device (one link type), and a record of classic pcap is a fixed
// 16-byte header then the bytes, which a writer cannot get wrong. A pcapng
// writer could later add the receive queue of each frame (epb_queue) on top
// of the same rings.
//
// # Capture
//
// A Capture has one Ring per producer (one per worker): a bounded ring of
// fixed-size slots, each holding a copy of up to Snaplen bytes of a frame,
// its original length and a timestamp. Ring.Put copies a frame into the next
// free slot and never blocks or allocates: when the ring is full, the frame
// is counted as skipped and dropped from the capture (not from the data
// path). One goroutine drains the rings, merging them by timestamp, and
// writes the file; Close flushes it and reports what was written, skipped and
// discarded, so that every frame offered is accounted for.
//
// Tap puts a ring in front of an engine.Handler: what a worker receives
// is copied into the ring before the handler sees it.
package pcap

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// File format constants.
const (
	// MagicNanos is the magic number of a pcap file whose timestamps are in
	// nanoseconds (microseconds: 0xa1b2c3d4).
	MagicNanos = 0xa1b23c4d
	// LinkTypeEthernet is LINKTYPE_ETHERNET, the link type of every frame
	// xdpeng sees.
	LinkTypeEthernet = 1
	// MaxSnaplen is the largest snapshot length readers accept (libpcap's
	// MAXIMUM_SNAPLEN).
	MaxSnaplen = 262144

	fileHeaderLen   = 24
	recordHeaderLen = 16
)

// Writer writes a pcap file record by record; it does not buffer (give it a
// bufio.Writer) and is not safe for concurrent use.
type Writer struct {
	w       io.Writer
	snaplen int
	hdr     [recordHeaderLen]byte
}

// NewWriter writes the file header to w: nanosecond timestamps, frames
// truncated to snaplen bytes (1..MaxSnaplen), link type linkType.
func NewWriter(w io.Writer, snaplen int, linkType uint32) (*Writer, error) {
	if snaplen < 1 || snaplen > MaxSnaplen {
		return nil, fmt.Errorf("pcap: snapshot length %d out of range 1..%d", snaplen, MaxSnaplen)
	}
	var h [fileHeaderLen]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], MagicNanos)
	le.PutUint16(h[4:], 2) // version 2.4
	le.PutUint16(h[6:], 4)
	// h[8:16]: thiszone and sigfigs, always 0.
	le.PutUint32(h[16:], uint32(snaplen))
	le.PutUint32(h[20:], linkType)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcap: write file header: %w", err)
	}
	return &Writer{w: w, snaplen: snaplen}, nil
}

// Snaplen is the snapshot length of the file.
func (w *Writer) Snaplen() int { return w.snaplen }

// WritePacket writes one record: the frame's first bytes data (cut to the
// snapshot length), its length on the wire origLen (at least len(data)) and
// its timestamp ts in nanoseconds since the Unix epoch (not before it).
func (w *Writer) WritePacket(ts int64, data []byte, origLen int) error {
	if len(data) > w.snaplen {
		data = data[:w.snaplen]
	}
	if ts < 0 || ts/1e9 > math.MaxUint32 {
		return fmt.Errorf("pcap: timestamp %d ns is outside the format's range (1970 to 2106)", ts)
	}
	if origLen < len(data) || origLen > math.MaxUint32 {
		return fmt.Errorf("pcap: original length %d is less than the %d bytes captured or too large", origLen, len(data))
	}
	le := binary.LittleEndian
	le.PutUint32(w.hdr[0:], uint32(ts/1e9))
	le.PutUint32(w.hdr[4:], uint32(ts%1e9))
	le.PutUint32(w.hdr[8:], uint32(len(data)))
	le.PutUint32(w.hdr[12:], uint32(origLen))
	if _, err := w.w.Write(w.hdr[:]); err != nil {
		return fmt.Errorf("pcap: write record header: %w", err)
	}
	if _, err := w.w.Write(data); err != nil {
		return fmt.Errorf("pcap: write frame: %w", err)
	}
	return nil
}

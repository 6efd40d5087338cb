package packet

import (
	"encoding/binary"
	"fmt"
)

// The stamp is what the generator writes at the start of a UDP payload so
// that a receiver can tell how long each frame took and which frames went
// missing (bpf/stamp.h is its C twin):
//
//	offset  size  field
//	0       4     magic, StampMagic
//	4       4     run id: the run that sent the frame
//	8       4     sequence number within the run
//	12      8     send time in ns, CLOCK_MONOTONIC (bpf_ktime_get_ns)
//
// All fields are big-endian. The stamp starts right after the UDP header,
// at StampOffset, which is even, so every field lies on 16-bit words of the
// UDP checksum.
const (
	StampLen   = 20
	StampMagic = 0x78646c74 // "xdlt"
)

// Stamp is the content of a stamp, without its magic.
type Stamp struct {
	RunID  uint32
	Seq    uint32
	TimeNS uint64
}

// StampOffset is where the stamp of a frame described by c starts: the
// first byte of its UDP payload.
func StampOffset(c *UDPConfig) int { return c.L4Offset() + UDPHdrLen }

// PutStamp writes s, with the magic, into the first StampLen bytes of b.
func PutStamp(b []byte, s Stamp) {
	_ = b[StampLen-1]
	binary.BigEndian.PutUint32(b[0:], StampMagic)
	binary.BigEndian.PutUint32(b[4:], s.RunID)
	binary.BigEndian.PutUint32(b[8:], s.Seq)
	binary.BigEndian.PutUint64(b[12:], s.TimeNS)
}

// ReadStamp reads a stamp from the start of b; ok is false when b is
// shorter than a stamp or does not start with the magic.
func ReadStamp(b []byte) (s Stamp, ok bool) {
	if len(b) < StampLen || binary.BigEndian.Uint32(b) != StampMagic {
		return Stamp{}, false
	}
	return Stamp{
		RunID:  binary.BigEndian.Uint32(b[4:]),
		Seq:    binary.BigEndian.Uint32(b[8:]),
		TimeNS: binary.BigEndian.Uint64(b[12:]),
	}, true
}

// FindStamp parses frame and reads the stamp at the start of its UDP
// payload; ok is false for a frame that is not UDP (or a fragment) or
// carries no stamp.
func FindStamp(frame []byte) (s Stamp, ok bool) {
	var sum Summary
	if !Parse(frame, &sum) || sum.Proto != ProtoUDP || sum.L4Off == 0 {
		return Stamp{}, false
	}
	return ReadStamp(frame[int(sum.L4Off)+UDPHdrLen:])
}

// BuildStampedUDP is BuildUDP with s written at StampOffset, the rest of the
// payload filled as c says (Fill, or Pattern) and the UDP checksum covering
// the stamp. c.Size must leave room for the stamp.
func BuildStampedUDP(buf []byte, c UDPConfig, s Stamp) (int, error) {
	if err := c.ValidateUDP(); err != nil {
		return 0, fmt.Errorf("build frame: %w", err)
	}
	off := StampOffset(&c)
	if c.Size < off+StampLen {
		return 0, fmt.Errorf("build frame: %w", &FieldError{Field: "Size", Msg: fmt.Sprintf(
			"Size %d is too small for a stamp: this frame needs at least %d bytes (%d of headers, %d of stamp)",
			c.Size, off+StampLen, off, StampLen)})
	}
	n, err := BuildUDP(buf, c)
	if err != nil {
		return 0, err
	}
	PutStamp(buf[off:], s)
	seg := buf[c.L4Offset():c.Size]
	binary.BigEndian.PutUint16(seg[6:], 0)
	sum := l4Checksum(buf, &c, ProtoUDP, seg)
	if sum == 0 {
		sum = 0xffff // as BuildUDP: zero would mean "no checksum"
	}
	binary.BigEndian.PutUint16(seg[6:], sum)
	return n, nil
}

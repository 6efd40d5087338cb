// Package stamp is the stamp the lab's senders write at the start of a UDP
// payload so that a receiver can tell how long each frame took and which
// frames went missing (bpf/stamp.h is its C twin, which the latency
// receiver and the live-frame generator read and write):
//
//	offset  size  field
//	0       4     magic, Magic
//	4       4     run id: the run that sent the frame
//	8       4     sequence number within the run
//	12      8     send time in ns, CLOCK_MONOTONIC (bpf_ktime_get_ns)
//
// All fields are big-endian. The stamp starts right after the UDP header,
// at Offset, which is even, so every field lies on 16-bit words of the UDP
// checksum.
package stamp

import (
	"encoding/binary"
	"fmt"

	"github.com/xdpeng/xdpeng/engine/packet"
)

const (
	// Len is the length of a stamp.
	Len = 20
	// Magic starts every stamp: "xdlt".
	Magic = 0x78646c74
)

// Stamp is the content of a stamp, without its magic.
type Stamp struct {
	RunID  uint32
	Seq    uint32
	TimeNS uint64
}

// Offset is where the stamp of a frame described by c starts: the first
// byte of its UDP payload.
func Offset(c *packet.UDPConfig) int { return c.L4Offset() + packet.UDPHdrLen }

// Put writes s, with the magic, into the first Len bytes of b.
func Put(b []byte, s Stamp) {
	_ = b[Len-1]
	binary.BigEndian.PutUint32(b[0:], Magic)
	binary.BigEndian.PutUint32(b[4:], s.RunID)
	binary.BigEndian.PutUint32(b[8:], s.Seq)
	binary.BigEndian.PutUint64(b[12:], s.TimeNS)
}

// Read reads a stamp from the start of b; ok is false when b is shorter
// than a stamp or does not start with the magic.
func Read(b []byte) (s Stamp, ok bool) {
	if len(b) < Len || binary.BigEndian.Uint32(b) != Magic {
		return Stamp{}, false
	}
	return Stamp{
		RunID:  binary.BigEndian.Uint32(b[4:]),
		Seq:    binary.BigEndian.Uint32(b[8:]),
		TimeNS: binary.BigEndian.Uint64(b[12:]),
	}, true
}

// Find parses frame and reads the stamp at the start of its UDP payload;
// ok is false for a frame that is not UDP (or a fragment) or carries no
// stamp.
func Find(frame []byte) (s Stamp, ok bool) {
	var sum packet.Summary
	if !packet.Parse(frame, &sum) || sum.Proto != packet.ProtoUDP || sum.L4Off == 0 {
		return Stamp{}, false
	}
	return Read(frame[int(sum.L4Off)+packet.UDPHdrLen:])
}

// BuildUDP is packet.BuildUDP with s written at Offset, the rest of the
// payload filled as c says (Fill, or Pattern) and the UDP checksum covering
// the stamp. c.Size must leave room for the stamp.
func BuildUDP(buf []byte, c packet.UDPConfig, s Stamp) (int, error) {
	if err := c.ValidateUDP(); err != nil {
		return 0, fmt.Errorf("build frame: %w", err)
	}
	off := Offset(&c)
	if c.Size < off+Len {
		return 0, fmt.Errorf("build frame: %w", &packet.FieldError{Field: "Size", Msg: fmt.Sprintf(
			"Size %d is too small for a stamp: this frame needs at least %d bytes (%d of headers, %d of stamp)",
			c.Size, off+Len, off, Len)})
	}
	n, err := packet.BuildUDP(buf, c)
	if err != nil {
		return 0, err
	}
	// The stamp replaces Len bytes of payload, word by word: the checksum
	// follows each word (RFC 1624), as the stamp starts on an even offset
	// of the segment. A sum of zero is sent as 0xffff, as BuildUDP does.
	var st [Len]byte
	Put(st[:], s)
	check := binary.BigEndian.Uint16(buf[c.L4Offset()+6:])
	for i := 0; i < Len; i += 2 {
		check = packet.UpdateChecksum(check, binary.BigEndian.Uint16(buf[off+i:]), binary.BigEndian.Uint16(st[i:]))
	}
	copy(buf[off:], st[:])
	if check == 0 {
		check = 0xffff
	}
	binary.BigEndian.PutUint16(buf[c.L4Offset()+6:], check)
	return n, nil
}

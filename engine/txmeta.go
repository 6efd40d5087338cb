package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/xsk"
)

// ErrTxMetadata: GeneratorConfig.TxChecksum where the frames, the
// configuration or the device cannot have it; the message says which.
var ErrTxMetadata = errors.New("transmit metadata not available")

// txMetaOffset is where a frame sent with TX metadata starts in its UMEM
// frame: after the xsk_tx_metadata in front of it, 8-byte aligned.
const txMetaOffset = 64

// l4Checksum returns where frame's UDP or TCP checksum is computed from
// and where the field is, relative to that start.
func l4Checksum(frame []byte) (start, offset uint16, err error) {
	var s packet.Summary
	if !packet.Parse(frame, &s) || s.L3 == 0 || s.Fragment || s.L4Off == 0 {
		return 0, 0, errors.New("not a whole UDP or TCP packet over IPv4 or IPv6")
	}
	switch s.Proto {
	case packet.ProtoUDP:
		return s.L4Off, 6, nil
	case packet.ProtoTCP:
		return s.L4Off, 16, nil
	}
	return 0, 0, fmt.Errorf("IP protocol %d: only UDP and TCP checksums are filled", s.Proto)
}

// pseudoSeed is what the checksum field of frame's L4 header must hold for
// checksum offload (CHECKSUM_PARTIAL): its pseudo-header's sum, folded,
// not complemented.
func pseudoSeed(frame []byte) uint16 {
	var s packet.Summary
	packet.Parse(frame, &s)
	var acc uint64
	var length int
	if s.L3 == 4 {
		ip := frame[s.L3Off:]
		acc = packet.Sum(0, ip[12:20])
		length = int(binary.BigEndian.Uint16(ip[2:])) - int(s.L4Off-s.L3Off)
	} else {
		ip := frame[s.L3Off:]
		acc = packet.Sum(0, ip[8:40])
		length = int(binary.BigEndian.Uint16(ip[4:])) - int(s.L4Off-s.L3Off-40)
	}
	if s.Proto == packet.ProtoUDP {
		length = int(binary.BigEndian.Uint16(frame[s.L4Off+4:]))
	}
	return ^packet.Fold(acc + uint64(s.Proto) + uint64(length))
}

// umemTxMetadata sets a generator UMEM's TX metadata: in copy mode the
// kernel fills the checksums itself, so that they are right whatever the
// device does with an skb's (veth passes them on unfilled).
func (c *GeneratorConfig) umemTxMetadata(u *xsk.UmemConfig) {
	if c.TxChecksum {
		u.TxMetadata, u.TxSoftwareChecksum = true, true
	}
}

// writeTxChecksumFrames is writeTxFrames for TxChecksum: each frame
// txMetaOffset bytes into its UMEM frame, its checksum field seeded, its
// metadata asking for the checksum.
func writeTxChecksumFrames(u *xsk.Umem, frames [][]byte, n uint32) error {
	fs := uint64(u.FrameSize())
	for j := uint32(0); j < n; j++ {
		f := frames[int(j)%len(frames)]
		addr := uint64(j)*fs + txMetaOffset
		dst := u.Frame(addr, uint32(len(f)))
		copy(dst, f)
		start, off, err := l4Checksum(f)
		if err != nil {
			return err
		}
		binary.BigEndian.PutUint16(dst[start+off:], pseudoSeed(f))
		if err := u.SetTxRequest(addr, xsk.TxChecksum, start, off, 0); err != nil {
			return err
		}
	}
	return nil
}

// setTxMeta is txBatch's descriptor loop for frames with TX metadata: got
// slots from idx, each frame at metaOff into its UMEM frame, with
// metaOpts. It returns the next frame and variant.
func (g *txGen) setTxMeta(tx *xsk.TxRing, idx, got uint32) (next, v uint32) {
	next, v, k := g.next, g.variant, uint32(len(g.lens))
	for i := uint32(0); i < got; i++ {
		tx.SetOptions(idx+i, uint64(next)<<g.shift+g.metaOff, g.lens[v], g.metaOpts)
		if next++; next == g.frames {
			next = 0
		}
		if v++; v == k {
			v = 0
		}
	}
	return next, v
}

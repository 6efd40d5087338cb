package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/xsk"
)

// ErrTxMetadata: GeneratorConfig.TxChecksum, TxTimestamp or LaunchDelay
// where the frames, the configuration, the kernel or the device cannot
// have it; the message says which.
var ErrTxMetadata = errors.New("transmit metadata not available")

// txMetaOffset is where a frame sent with TX metadata starts in its UMEM
// frame: after the xsk_tx_metadata in front of it, 8-byte aligned.
const txMetaOffset = 64

// l4Checksum returns where frame's UDP or TCP checksum is computed from
// and where the field is, relative to that start.
func l4Checksum(frame []byte) (start, offset uint16, err error) {
	var s packet.Summary
	if !packet.Parse(frame, &s) || s.L3 == 0 || s.Fragment || s.L4Off == 0 {
		return 0, 0, errNotL4
	}
	switch s.Proto {
	case packet.ProtoUDP:
		return s.L4Off, 6, nil
	case packet.ProtoTCP:
		return s.L4Off, 16, nil
	}
	return 0, 0, errNotUDPOrTCP
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

// txMetadata reports whether the generator's frames carry TX metadata.
func (c *GeneratorConfig) txMetadata() bool {
	return c.TxChecksum || c.TxTimestamp || c.LaunchDelay != 0
}

// txRequest is what each frame asks in its TX metadata.
func (c *GeneratorConfig) txRequest() xsk.TxRequest {
	var r xsk.TxRequest
	if c.TxChecksum {
		r |= xsk.TxChecksum
	}
	if c.TxTimestamp {
		r |= xsk.TxTimestamp
	}
	if c.LaunchDelay != 0 {
		r |= xsk.TxLaunchTime
	}
	return r
}

// umemTxMetadata sets a generator UMEM's TX metadata: in copy mode the
// kernel fills the checksums itself, so that they are right whatever the
// device does with an skb's (veth passes them on unfilled).
func (c *GeneratorConfig) umemTxMetadata(u *xsk.UmemConfig) {
	u.TxMetadata = c.txMetadata()
	u.TxSoftwareChecksum = c.TxChecksum
}

// txChecksums is each frame's checksum start and offset for TxChecksum,
// zeros without.
func (c *GeneratorConfig) txChecksums() ([][2]uint16, error) {
	cs := make([][2]uint16, len(c.Frames))
	if !c.TxChecksum {
		return cs, nil
	}
	for i, f := range c.Frames {
		start, off, err := l4Checksum(f)
		if err != nil {
			return nil, err
		}
		cs[i] = [2]uint16{start, off}
	}
	return cs, nil
}

// writeTxMetaFrames is writeTxFrames for frames with TX metadata: each
// frame txMetaOffset bytes into its UMEM frame, its checksum field seeded
// for TxChecksum, its metadata asking for req.
func writeTxMetaFrames(u *xsk.Umem, frames [][]byte, csum [][2]uint16, n uint32, req xsk.TxRequest) error {
	fs := uint64(u.FrameSize())
	for j := uint32(0); j < n; j++ {
		v := int(j) % len(frames)
		f := frames[v]
		addr := uint64(j)*fs + txMetaOffset
		dst := u.Frame(addr, uint32(len(f)))
		copy(dst, f)
		start, off := csum[v][0], csum[v][1]
		if req&xsk.TxChecksum != 0 {
			binary.BigEndian.PutUint16(dst[start+off:], pseudoSeed(f))
		}
		if err := u.SetTxRequest(addr, req, start, off, 0); err != nil {
			return err
		}
	}
	return nil
}

// taiClock turns the times of time.Now into ns of CLOCK_TAI, the clock of
// copy mode's completion timestamps, from one reading of both: the
// monotonic clock does not jump, so no system call is needed per batch.
type taiClock struct {
	base time.Time
	tai  uint64
}

func (c taiClock) ns(t time.Time) uint64 { return c.tai + uint64(t.Sub(c.base)) }

// stamps counts the completion timestamps of the n completions from idx,
// and asks again in each frame's metadata for the checksum, over which the
// kernel wrote the timestamp.
func (g *txGen) stamps(c *xsk.CompletionRing, idx, n uint32) {
	k := uint32(len(g.lens))
	for i := uint32(0); i < n; i++ {
		addr := c.Addr(idx + i)
		f := uint32(addr >> g.shift)
		cs := g.csum[f%k]
		ts, ok := g.umem.TakeTxCompletionTimestamp(addr, cs[0], cs[1])
		g.timer.record(ts, ok, g.sentAt[f])
	}
}

// setTxMeta is txBatch's descriptor loop for frames with TX metadata: got
// slots from idx, each frame at metaOff into its UMEM frame, with
// metaOpts, sent at at (ns of CLOCK_TAI; with TxTimestamp or LaunchDelay).
// It returns the next frame and variant.
func (g *txGen) setTxMeta(tx *xsk.TxRing, idx, got uint32, at uint64) (next, v uint32) {
	next, v, k := g.next, g.variant, uint32(len(g.lens))
	for i := uint32(0); i < got; i++ {
		addr := uint64(next)<<g.shift + g.metaOff
		if g.sentAt != nil {
			g.sentAt[next] = at
		}
		if g.launch != 0 {
			cs := g.csum[v]
			g.umem.SetTxRequest(addr, g.metaReq, cs[0], cs[1], at+g.launch) // checked when the frames were written
		}
		tx.SetOptions(idx+i, addr, g.lens[v], g.metaOpts)
		if next++; next == g.frames {
			next = 0
		}
		if v++; v == k {
			v = 0
		}
	}
	return next, v
}

// ErrNoTxChecksum is what Batch.SetTxChecksum's errors wrap: the frame's
// checksum cannot be asked for (an engine made without Config.TxChecksum,
// or a frame that is not a whole UDP or TCP packet over IP).
var ErrNoTxChecksum = errors.New("no TX checksum")

// The errors of SetTxChecksum, made once: a refusal allocates nothing.
var (
	errTxChecksumOff = fmt.Errorf("%w: the engine was made without Config.TxChecksum", ErrNoTxChecksum)
	errNotL4         = fmt.Errorf("%w: not a whole UDP or TCP packet over IPv4 or IPv6", ErrNoTxChecksum)
	errNotUDPOrTCP   = fmt.Errorf("%w: only UDP and TCP checksums are filled", ErrNoTxChecksum)
)

// SetTxChecksum asks that frame i's UDP or TCP checksum be filled as the
// frame is sent, by its next Transmit or Forward of this batch (see
// Config.TxChecksum). It seeds the checksum field with the sum of the
// pseudo-header and writes the request into the TX metadata in front of
// the frame, which overwrites the frame's receive metadata: read RxHash
// and the others first, and call it after the last change to the frame's
// headers and length. It fails, leaving the frame as it was, with an error
// that wraps ErrNoTxChecksum, on an engine made without Config.TxChecksum
// and for a frame that is not a whole UDP or TCP packet over IPv4 or IPv6;
// such a refusal allocates nothing.
func (b *Batch) SetTxChecksum(i int) error {
	if b.txMeta == nil {
		return errTxChecksumOff
	}
	f := b.Frame(i)
	start, off, err := l4Checksum(f)
	if err != nil {
		return err
	}
	if err := b.umem.SetTxRequest(b.addrs[i], xsk.TxChecksum, start, off, 0); err != nil {
		// AdjustHead keeps the metadata's room: not reached from a handler.
		return fmt.Errorf("frame %d: %w: %w", i, ErrNoTxChecksum, err)
	}
	binary.BigEndian.PutUint16(f[start+off:], pseudoSeed(f))
	b.txMeta[i], b.anyTxMeta = true, true
	return nil
}

// clearTxMeta forgets the requests of the last batch.
func (b *Batch) clearTxMeta() {
	if b.anyTxMeta {
		clear(b.txMeta)
		b.anyTxMeta = false
	}
}

// markTxMeta sets the TX metadata option on the descriptors that queueDest
// (back false, dest d) or queueBack (back true) put on tx from idx, n of
// them, for the frames SetTxChecksum marked.
func markTxMeta(tx []xsk.Desc, mask, idx, n uint32, dests []dest, marked []bool, d dest, back bool) {
	var j uint32
	for i, di := range dests {
		if j == n {
			return
		}
		if back && di.back() || !back && di == d {
			if marked[i] {
				tx[(idx+j)&mask].Options |= xsk.TxMetadataOption
			}
			j++
		}
	}
}

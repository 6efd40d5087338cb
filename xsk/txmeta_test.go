package xsk_test

import (
	"encoding/binary"
	"errors"
	"testing"

	. "github.com/xdpeng/xdpeng/xsk"
)

func TestTxMetadataLayout(t *testing.T) {
	plain, err := NewMemUmem(UmemConfig{FrameSize: 2048, NumFrames: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.TxMetadata(256); !errors.Is(err, ErrNoTxMetadata) {
		t.Errorf("TX metadata of a UMEM without it: %v, want ErrNoTxMetadata", err)
	}
	u, err := NewMemUmem(UmemConfig{FrameSize: 2048, NumFrames: 4, TxMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.TxMetadata(2048 + TxMetadataLen - 1); !errors.Is(err, ErrNoTxMetadata) {
		t.Errorf("TX metadata of data %d bytes into its frame: %v, want ErrNoTxMetadata", TxMetadataLen-1, err)
	}
	addr := uint64(2048 + 256)
	// The launch time is written whatever the requests (TxLaunchTime
	// itself needs Linux 6.14).
	if err := u.SetTxRequest(addr, TxChecksum|TxTimestamp, 34, 6, 0x1122334455667788); err != nil {
		t.Fatal(err)
	}
	m := u.Mem()[addr-TxMetadataLen : addr]
	// struct xsk_tx_metadata: flags, then request.csum_start,
	// request.csum_offset and (8-aligned) request.launch_time.
	if f := binary.NativeEndian.Uint64(m); f != uint64(TxChecksum|TxTimestamp) {
		t.Errorf("flags %#x", f)
	}
	if s, o, l := binary.NativeEndian.Uint16(m[8:]), binary.NativeEndian.Uint16(m[10:]), binary.NativeEndian.Uint64(m[16:]); s != 34 || o != 6 || l != 0x1122334455667788 {
		t.Errorf("request: csum_start %d, csum_offset %d, launch_time %#x", s, o, l)
	}
	if err := u.SetTxRequest(addr, 1<<7, 0, 0, 0); err == nil {
		t.Error("an unknown request was taken")
	}
	if _, ok := u.TxCompletionTimestamp(addr); !ok {
		// The completion union overlays the request: csum_start and
		// csum_offset read as a non-zero timestamp.
		t.Error("no completion timestamp where the request's bytes are")
	}
	binary.NativeEndian.PutUint64(m[8:], 0)
	if _, ok := u.TxCompletionTimestamp(addr); ok {
		t.Error("a zero completion timestamp reads ok")
	}
	// A launch time is taken where the kernel's struct xsk_tx_metadata
	// has one, and refused with ErrNoTxLaunchTime elsewhere.
	if err := u.SetTxRequest(addr, TxLaunchTime, 0, 0, 1); err != nil && !errors.Is(err, ErrNoTxLaunchTime) {
		t.Errorf("launch time: %v", err)
	}
}

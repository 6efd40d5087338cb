package packet

import (
	"bytes"
	"errors"
	"testing"
)

func TestBuildStampedUDPTooSmall(t *testing.T) {
	c := udpConfig(true, 0, 64) // IPv6: 62 bytes of headers
	_, err := BuildStampedUDP(make([]byte, 128), c, Stamp{})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Size" {
		t.Fatalf("err = %v, want a FieldError on Size", err)
	}
	if want := "at least 82 bytes"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
}

func TestReadStampRefuses(t *testing.T) {
	b := make([]byte, StampLen)
	PutStamp(b, Stamp{RunID: 1, Seq: 2, TimeNS: 3})
	if s, ok := ReadStamp(b); !ok || s != (Stamp{1, 2, 3}) {
		t.Fatalf("ReadStamp = %+v, %v", s, ok)
	}
	if _, ok := ReadStamp(b[:StampLen-1]); ok {
		t.Error("ReadStamp of a short buffer: ok")
	}
	b[0] ^= 1
	if _, ok := ReadStamp(b); ok {
		t.Error("ReadStamp without the magic: ok")
	}
	// A frame that is not UDP has no stamp, whatever its bytes.
	c := udpConfig(false, 0, 128)
	f := make([]byte, 128)
	if _, err := BuildTCP(f, c, TCPAck); err != nil {
		t.Fatal(err)
	}
	PutStamp(f[StampOffset(&c):], Stamp{})
	if _, ok := FindStamp(f); ok {
		t.Error("FindStamp found a stamp in a TCP frame")
	}
}

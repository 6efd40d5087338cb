package engine

import "testing"

// TestKickLateTxConsumer: l2fwd at full load against a kernel that
// transmits 32 frames a sendto, as copy mode does, and writes the tx
// consumer index as Linux 6.17 does (at once) and as kernels before it do
// (late: a call that stops at its budget shows none of what it took).
// Either way every frame goes out and none finds the tx ring full.
func TestKickLateTxConsumer(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "at once", true: "late"}[late], func(t *testing.T) {
			sw := transmitAll(t)
			k, w := sw.kernels[0], sw.w
			k.AutoTransmit, k.TxBudget, k.TxConsumerLate = true, copyTxBudget, late
			k.SetNeedWakeup(false, true)
			const rounds = 200
			for range rounds {
				if k.Receive(sw.batch, 64, nil) == 0 {
					t.Fatalf("the fill ring ran dry: %d in flight, %d parked", w.txOutstanding, w.sock.Frames.Len())
				}
				w.step()
			}
			w.drain()
			t.Logf("received %d, sent %d, tx ring full %d, kicks %d", w.c.rxPackets, w.c.txPackets, w.c.txRingFull, w.c.txWakeups)
			if w.c.txRingFull != 0 || w.c.txPackets != w.c.rxPackets {
				t.Errorf("received %d: sent %d, tx ring full %d; want every frame sent", w.c.rxPackets, w.c.txPackets, w.c.txRingFull)
			}
		})
	}
}

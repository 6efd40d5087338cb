package main

import (
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/irqstat"
)

func TestIRQText(t *testing.T) {
	r := irqstat.Rates{
		Interval: time.Second,
		NetRx:    []irqstat.CPURate{{CPU: 0, PerSec: 9925}, {CPU: 1, PerSec: 0}},
		Device:   irqstat.DeviceRates{Name: "dut0"},
	}
	if got, want := irqText(r), "NET_RX cpu0 9925 cpu1 0; dut0 has no interrupts"; got != want {
		t.Errorf("veth: %q, want %q", got, want)
	}
	r.Device = irqstat.DeviceRates{Name: "eth1", Lines: []irqstat.IRQRate{
		{IRQ: "45", Desc: "eth1-TxRx-0", Total: 4000}, {IRQ: "46", Desc: "eth1-TxRx-1", Total: 121}}}
	if got, want := irqText(r), "NET_RX cpu0 9925 cpu1 0; eth1 4121 (irq 45 4000, irq 46 121)"; got != want {
		t.Errorf("NIC: %q, want %q", got, want)
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/irqstat"
)

func TestCheckListenAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9100": "",
		":9100":          "",
		"[::1]:9100":     "",
		"9100":           "want HOST:PORT",
		"127.0.0.1":      "want HOST:PORT",
		"127.0.0.1:http": `port "http" is not a number`,
		"127.0.0.1:":     `port "" is not a number`,
		"127.0.0.1:0":    "port 0 would pick a port nobody knows",
		"[::1]:65536":    `port "65536" is not a number`,
	} {
		err := checkListenAddr(addr)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q refused: %v", addr, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want an error with %q", addr, err, want)
		}
	}
}

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
	j := irqJSONOf(irqstat.Rates{Interval: 1500 * time.Millisecond, Device: irqstat.DeviceRates{Name: "dut0"}})
	if !j.NoIRQ || j.Lines == nil || j.IntervalS != 1.5 {
		t.Errorf("JSON of a device without interrupts: %+v", j)
	}
}

package gen

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
)

func validConfig() Config {
	return Config{
		Ifindex: 1,
		Frame: packet.UDPConfig{
			SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
			SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
			SrcPort: 1234, DstPort: 9, Size: 64,
		},
		Count: 1000,
	}
}

func TestValidate(t *testing.T) {
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		field  string // "" = valid
		msg    string
	}{
		{"valid", func(*Config) {}, "", ""},
		{"ifindex", func(c *Config) { c.Ifindex = 0 }, "Ifindex", "not an interface index"},
		{"size", func(c *Config) { c.Frame.Size = 20 }, "Frame.Size", "60..65549"},
		{"jumbo", func(c *Config) { c.Frame.Size = 9000 }, "Frame.Size", "the generator's frames take at most"},
		{"largest live frame", func(c *Config) { c.Frame.Size = MaxFrameSize() }, "", ""},
		{"beyond the largest live frame", func(c *Config) { c.Frame.Size = MaxFrameSize() + 1 }, "Frame.Size", "the AF_XDP generator"},
		{"dst mac", func(c *Config) { c.Frame.DstMAC = nil }, "Frame.DstMAC", "6-byte"},
		{"ports past 65535", func(c *Config) { c.Frame.DstPort = 65530; c.Ports = 7 }, "Ports", "7 ports counted up from destination port 65530 go past port 65535: at most 6 fit"},
		{"ports negative", func(c *Config) { c.Ports = -1 }, "Ports", ""},
		{"threads negative", func(c *Config) { c.Threads = -2 }, "Threads", "at least 1"},
		{"too many threads", func(c *Config) { c.Threads = len(online) + 1 }, "Threads", "CPUs online"},
		{"cpus vs threads", func(c *Config) { c.Threads = 2; c.CPUs = []int{online[0]} }, "CPUs", "1 CPU for 2 threads: give one CPU per thread"},
		{"offline cpu", func(c *Config) { c.CPUs = []int{cpuset.MaxID} }, "CPUs", "not online"},
		{"rate below threads", func(c *Config) { c.CPUs = online; c.Rate = uint64(len(online)) - 1 }, "Rate", "less than 1 pps per thread"},
		{"negative duration", func(c *Config) { c.Duration = -1 }, "Duration", "negative"},
		{"copies beyond the devmap", func(c *Config) { c.Method = Packet; c.Copies = MaxCopies + 1 }, "Copies", "use 1..64"},
		{"copies without the relay", func(c *Config) { c.Method = Live; c.Copies = 2 }, "Copies", "only the xsk and packet methods"},
		{"copies, the method chosen by the probe", func(c *Config) { c.Copies = 2 }, "", ""},
		{"copies of a stamp", func(c *Config) { c.Method = XSK; c.Copies = 2; c.Stamp = true; c.Count = 10; c.RunID = 1 }, "Copies", "sequence number"},
		{"copies", func(c *Config) { c.Method = XSK; c.Copies = MaxCopies }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.modify(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("Validate = %v, want a FieldError on %s containing %q", err, tc.field, tc.msg)
			}
		})
	}
}

func TestValidateDefaults(t *testing.T) {
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Threads != 1 || len(c.CPUs) != 1 || c.CPUs[0] != online[0] || c.Ports != 1 {
		t.Errorf("defaults: Threads %d CPUs %v Ports %d, want 1 [%d] 1", c.Threads, c.CPUs, c.Ports, online[0])
	}
	c = validConfig()
	c.CPUs = online
	if err := c.Validate(); err != nil || c.Threads != len(online) {
		t.Errorf("Threads from CPUs: %d, %v", c.Threads, err)
	}
}

func TestRunRefusesUnbounded(t *testing.T) {
	c := validConfig()
	c.Count = 0
	if _, err := Run(context.Background(), c, nil); !errors.Is(err, ErrUnbounded) {
		t.Fatalf("Run without bound = %v, want ErrUnbounded", err)
	}
}

func TestShareAddsUp(t *testing.T) {
	for _, total := range []uint64{0, 1, 2, 3, 1000003, 1 << 40} {
		for n := 1; n <= 5; n++ {
			var sum uint64
			for i := range n {
				p := share(total, n, i)
				if p != total/uint64(n) && p != total/uint64(n)+1 {
					t.Errorf("share(%d, %d, %d) = %d", total, n, i, p)
				}
				sum += p
			}
			if sum != total {
				t.Errorf("shares of %d over %d threads add up to %d", total, n, sum)
			}
		}
	}
}

package observe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/irqstat"
)

// TestMetricsAddr: a port alone listens on the loopback; any other
// address is taken as given, and what is not an address is refused.
func TestMetricsAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9100": "127.0.0.1:9100",
		":9100":          "127.0.0.1:9100",
		"9100":           "127.0.0.1:9100",
		"[::1]:9100":     "[::1]:9100",
		"0.0.0.0:9100":   "0.0.0.0:9100",
		"[::]:9100":      "[::]:9100",
		"127.0.0.1":      "error: want HOST:PORT or a port",
		"127.0.0.1:http": `error: port "http" is not a number`,
		"127.0.0.1:":     `error: port "" is not a number`,
		"127.0.0.1:0":    "error: port 0 would pick a port nobody knows",
		"0":              "error: port 0 would pick a port nobody knows",
		"[::1]:65536":    `error: port "65536" is not a number`,
		"65536":          "error: want HOST:PORT or a port",
	} {
		got, err := MetricsAddr(addr)
		if refusal, ok := strings.CutPrefix(want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), refusal) {
				t.Errorf("%q: %q, %v; want an error with %q", addr, got, err, refusal)
			}
		} else if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", addr, got, err, want)
		}
	}
}

// TestIRQOf: the JSON of a device without interrupts says so, with an
// empty list of lines, and the interval in seconds.
func TestIRQOf(t *testing.T) {
	j := IRQOf(irqstat.Rates{Interval: 1500 * time.Millisecond, Device: irqstat.DeviceRates{Name: "dut0"}})
	if !j.NoIRQ || j.Lines == nil || j.IntervalS != 1.5 {
		t.Errorf("JSON of a device without interrupts: %+v", j)
	}
}

// TestCaptureFile: the capture file is refused at open when it cannot be written,
// and left as it was until the run starts: a file the open created goes
// again, an existing one keeps its contents, unless the run started.
func TestCaptureFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A link planted where the capture goes, to a file it must not touch.
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	link, hard := filepath.Join(dir, "link.pcap"), filepath.Join(dir, "hard.pcap")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
			t.Errorf("the file the links name holds %q (%v)", b, err)
		}
	}()
	for path, want := range map[string]string{
		dir: "is a directory: give a file to write, such as " + filepath.Join(dir, "capture.pcap"),
		filepath.Join(dir, "nosuchdir", "x.pcap"): "directory " + filepath.Join(dir, "nosuchdir") + " does not exist",
		"/proc/nope.pcap":                         "cannot create or write it: no such file or directory",
		fifo:                                      "is not a regular file",
		link:                                      "is a symbolic link: a capture is not written through one",
		hard:                                      "has 2 hard links",
	} {
		if c, err := openCaptureFile(path); err == nil || !strings.Contains(err.Error(), want) {
			if c != nil {
				c.close()
			}
			t.Errorf("openCaptureFile(%s): %v, want an error with %q", path, err, want)
		}
	}

	if os.Geteuid() == 0 {
		// Another user's file, in a directory others may write (/tmp).
		theirs := filepath.Join(dir, "theirs.pcap")
		if err := os.WriteFile(theirs, []byte("theirs"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if c, err := openCaptureFile(theirs); err == nil || !strings.Contains(err.Error(), "another user's file (uid 65534)") {
			if c != nil {
				c.close()
			}
			t.Errorf("openCaptureFile of another user's file: %v", err)
		}
	}
	t.Run("created 0600", func(t *testing.T) {
		path := filepath.Join(dir, "mode.pcap")
		c, err := openCaptureFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c.start()
		c.close()
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("a new capture file: %v, %v; want mode 0600", fi, err)
		}
	})
	t.Run("created, never started", func(t *testing.T) {
		path := filepath.Join(dir, "new.pcap")
		c, err := openCaptureFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("header")); err != nil {
			t.Fatal(err)
		}
		if err := c.close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("a capture that never started left %s (%v)", path, err)
		}
	})
	t.Run("existing, never started", func(t *testing.T) {
		path := filepath.Join(dir, "old.pcap")
		if err := os.WriteFile(path, []byte("an older capture"), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := openCaptureFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("header"))
		if err := c.close(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "an older capture" {
			t.Errorf("a capture that never started changed %s to %q (%v)", path, b, err)
		}
	})
	t.Run("existing, started", func(t *testing.T) {
		path := filepath.Join(dir, "old.pcap")
		c, err := openCaptureFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("head"))
		if err := c.start(); err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("er"))
		if err := c.close(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "header" {
			t.Errorf("%s holds %q (%v), want the capture alone, %q", path, b, err, "header")
		}
	})
	t.Run("a character device", func(t *testing.T) {
		c, err := openCaptureFile(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("header"))
		if err := c.start(); err != nil {
			t.Error(err)
		}
		if err := c.close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(os.DevNull); err != nil {
			t.Errorf("%s: %v", os.DevNull, err)
		}
	})
}

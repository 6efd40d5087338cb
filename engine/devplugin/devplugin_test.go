//go:build linux

package devplugin

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// serve runs srv on a socket in a temporary directory until the test ends,
// and returns the socket's path and what srv logged.
func serve(t *testing.T, srv *Server) (string, func() []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "afxdp.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		logs []string
	)
	srv.Log = func(l string) { mu.Lock(); logs = append(logs, l); mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		ln.Close()
	})
	return path, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), logs...) }
}

// raw sends each request on a fresh connection's turn and returns the
// answers, as a client that speaks the protocol by hand.
func raw(t *testing.T, path string, reqs ...string) []string {
	t.Helper()
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []string
	for _, r := range reqs {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(r)); err != nil {
			out = append(out, "(closed)")
			break
		}
		msg, fd, err := readMessage(conn)
		if err != nil {
			out = append(out, "(closed)")
			break
		}
		if fd >= 0 {
			unix.Close(fd)
		}
		out = append(out, msg)
	}
	return out
}

func TestProtocol(t *testing.T) {
	path, logs := serve(t, &Server{Pods: []string{"web-0"}})
	for _, c := range []struct {
		reqs, want []string
	}{
		{[]string{"/connect,web-0", "/version", "/xsk_map_fd,eth0", "/what", "/fin"}, []string{"/host_ok", "0.1", "/fd_nak", "/nak", "/fin_ack"}},
		// Spaces are ignored, as the plugin ignores them (DPDK's
		// older driver sent "/connect, NAME").
		{[]string{"/connect, web-0", "/fin"}, []string{"/host_ok", "/fin_ack"}},
		{[]string{"/connect,web-1", "/version"}, []string{"/host_nak", "(closed)"}},
		{[]string{"/version"}, []string{"/host_nak"}},
		{[]string{"/connect,web-0", "/config_busy_poll,20,64"}, []string{"/host_ok", "/config_busy_poll_nak"}},
	} {
		if got := raw(t, path, c.reqs...); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q: answered %q, want %q", c.reqs, got, c.want)
		}
	}
	if l := logs(); len(l) == 0 || l[0] != `pod "web-0": /connect,web-0 -> /host_ok` {
		t.Errorf("log: %q", l)
	}
}

func TestClientRefused(t *testing.T) {
	path, _ := serve(t, &Server{Pods: []string{"web-0"}})
	ctx := context.Background()
	// A connection that says nothing holds up no other.
	idle, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := Dial(ctx, path, "web-1", time.Second); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "/host_nak") {
		t.Errorf("Dial as an unknown pod: %v, want ErrRefused saying /host_nak", err)
	}
	c, err := Dial(ctx, path, "web-0", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Version(); err != nil || v != Version {
		t.Errorf("Version: %q, %v", v, err)
	}
	if _, err := c.XSKMap("eth0"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "/fd_nak") {
		t.Errorf("XSKMap of a device the server has none of: %v, want ErrRefused saying /fd_nak", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := RequestXSKMap(ctx, filepath.Join(t.TempDir(), "none.sock"), "web-0", "eth0"); err == nil || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("RequestXSKMap of a socket that is not there: %v", err)
	}
}

// TestClientNoDescriptor: an /fd_ack without a descriptor is an error, not
// a map.
func TestClientNoDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer conn.Close()
		for _, a := range []string{ResponseHostOK, ResponseFDAck, ResponseFinAck} {
			if _, _, err := readMessage(conn); err != nil {
				return
			}
			conn.Write([]byte(a))
		}
	}()
	if _, err := RequestXSKMap(context.Background(), path, "p", "eth0"); err == nil || !strings.Contains(err.Error(), "without a file descriptor") {
		t.Errorf("an /fd_ack without a descriptor: %v", err)
	}
}

// TestHandOver: the map a client receives is the server's (the same map
// ID), and a map of another type is refused.
func TestHandOver(t *testing.T) {
	privtest.Root(t)
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the server stops (cleanups run last first).
	t.Cleanup(func() { xsks.Close() })
	arr, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arr.Close() })
	srv := &Server{}
	srv.Add("eth0", xsks)
	srv.Add("eth1", arr)
	path, _ := serve(t, srv)
	m, err := RequestXSKMap(context.Background(), path, "p", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want, _ := xsks.Info()
	got, _ := m.Info()
	wantID, _ := want.ID()
	gotID, _ := got.ID()
	if gotID != wantID || m.FD() == xsks.FD() {
		t.Errorf("received map ID %d (fd %d), want the server's %d in a descriptor of its own", gotID, m.FD(), wantID)
	}
	if _, err := RequestXSKMap(context.Background(), path, "p", "eth1"); err == nil || !strings.Contains(err.Error(), "type") {
		t.Errorf("a map that is not an XSKMAP: %v", err)
	}
}

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

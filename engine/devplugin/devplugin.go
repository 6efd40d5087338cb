//go:build linux

// Package devplugin speaks the Unix socket protocol of the AF_XDP device
// plugin for Kubernetes (intel/afxdp-plugins-for-kubernetes), on both
// sides: a worker in a pod asks for a device's XSKMAP and gets its file
// descriptor, and a privileged process that attached the steering program
// serves it. A worker so needs no root: CAP_NET_RAW for its AF_XDP sockets,
// CAP_IPC_LOCK or a memlock limit that holds its UMEM, and on kernels that
// refuse every bpf() call of a process without CAP_BPF while
// kernel.unprivileged_bpf_disabled is set (Debian's 5.10; not its 6.1 and
// later), CAP_BPF to update the map.
//
// The protocol, as the plugin's server and DPDK's af_xdp driver speak it:
// a SOCK_SEQPACKET socket, one request or response per message, in ASCII.
//
//	/connect,POD        -> /host_ok, /host_nak (POD unknown) or /error
//	/version            -> 0.1
//	/xsk_map_fd,DEVICE  -> /fd_ack with the map's descriptor (SCM_RIGHTS), or /fd_nak
//	/config_busy_poll,TIMEOUT,BUDGET with a socket's descriptor
//	                    -> /config_busy_poll_ack or /config_busy_poll_nak
//	/fin                -> /fin_ack, and the connection ends
//	anything else       -> /nak
//
// Spaces in a request are ignored. The plugin mounts its socket in a pod
// at /tmp/afxdp.sock.
package devplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The protocol's messages.
const (
	Version             = "0.1"
	RequestVersion      = "/version"
	RequestConnect      = "/connect"
	ResponseHostOK      = "/host_ok"
	ResponseHostNak     = "/host_nak"
	RequestFD           = "/xsk_map_fd"
	ResponseFDAck       = "/fd_ack"
	ResponseFDNak       = "/fd_nak"
	RequestBusyPoll     = "/config_busy_poll"
	ResponseBusyPollAck = "/config_busy_poll_ack"
	ResponseBusyPollNak = "/config_busy_poll_nak"
	RequestFin          = "/fin"
	ResponseFinAck      = "/fin_ack"
	ResponseBadRequest  = "/nak"
	ResponseError       = "/error"
)

// PodPath is where the plugin puts its socket in a pod.
const PodPath = "/tmp/afxdp.sock"

// maxMessage is the longest message either side reads: the plugin's
// buffer.
const maxMessage = 64

// ErrRefused is wrapped by the errors of a request the server answered
// with a refusal (/host_nak, /fd_nak, /config_busy_poll_nak, /nak or
// /error).
var ErrRefused = errors.New("refused by the device plugin")

// Client is a connection to a device plugin's socket, after /connect was
// answered /host_ok. Its methods are not safe for concurrent use.
type Client struct {
	conn    *net.UnixConn
	path    string
	timeout time.Duration
}

// Dial connects to the socket at path and introduces the worker as pod
// (the plugin checks the name against the pods it gave devices to; DPDK
// sends the pod's hostname). Each request waits at most timeout for its
// answer (0: 10 seconds).
func Dial(ctx context.Context, path, pod string, timeout time.Duration) (*Client, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unixpacket", path)
	if err != nil {
		return nil, fmt.Errorf("device plugin socket %s: %w", path, err)
	}
	c := &Client{conn: conn.(*net.UnixConn), path: path, timeout: timeout}
	if _, err := c.ask(RequestConnect+","+pod, ResponseHostOK, nil); err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("pod %s: %w", pod, err)
	}
	return c, nil
}

// Version asks for the protocol's version.
func (c *Client) Version() (string, error) {
	if err := c.send(RequestVersion, nil); err != nil {
		return "", err
	}
	resp, _, err := c.read()
	return resp, err
}

// XSKMap asks for the XSKMAP of device. The caller owns the map.
func (c *Client) XSKMap(device string) (*ebpf.Map, error) {
	fd, err := c.ask(RequestFD+","+device, ResponseFDAck, nil)
	if err != nil {
		return nil, fmt.Errorf("the XSKMAP of %s: %w", device, err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("the XSKMAP of %s: %s came without a file descriptor", device, ResponseFDAck)
	}
	m, err := ebpf.NewMapFromFD(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the XSKMAP of %s: %w", device, err)
	}
	if m.Type() != ebpf.XSKMap {
		m.Close()
		return nil, fmt.Errorf("the XSKMAP of %s: the plugin gave a map of type %v", device, m.Type())
	}
	return m, nil
}

// ConfigBusyPoll asks the plugin to set busy polling on the AF_XDP socket
// sock (SO_PREFER_BUSY_POLL, SO_BUSY_POLL of timeout microseconds,
// SO_BUSY_POLL_BUDGET of budget), which raising needs CAP_NET_ADMIN.
func (c *Client) ConfigBusyPoll(sock, timeout, budget int) error {
	_, err := c.ask(fmt.Sprintf("%s,%d,%d", RequestBusyPoll, timeout, budget), ResponseBusyPollAck, syscall.UnixRights(sock))
	if err != nil {
		return fmt.Errorf("busy polling on socket %d: %w", sock, err)
	}
	return nil
}

// Close says /fin, waits for /fin_ack and closes the connection.
func (c *Client) Close() error {
	_, err := c.ask(RequestFin, ResponseFinAck, nil)
	return errors.Join(err, c.conn.Close())
}

// RequestXSKMap dials path as pod, asks for device's XSKMAP and says /fin.
func RequestXSKMap(ctx context.Context, path, pod, device string) (*ebpf.Map, error) {
	c, err := Dial(ctx, path, pod, 0)
	if err != nil {
		return nil, err
	}
	m, err := c.XSKMap(device)
	if cerr := c.Close(); err == nil && cerr != nil {
		m.Close()
		return nil, cerr
	}
	return m, err
}

// ask sends req (with oob) and expects want; it returns the descriptor
// the answer carried, or -1.
func (c *Client) ask(req, want string, oob []byte) (int, error) {
	if err := c.send(req, oob); err != nil {
		return -1, err
	}
	resp, fd, err := c.read()
	if err != nil {
		return -1, err
	}
	if resp != want {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("%s answered %q: %w", req, resp, ErrRefused)
	}
	return fd, nil
}

func (c *Client) send(req string, oob []byte) error {
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	if _, _, err := c.conn.WriteMsgUnix([]byte(req), oob, nil); err != nil {
		return fmt.Errorf("device plugin socket %s: %w", c.path, err)
	}
	return nil
}

func (c *Client) read() (string, int, error) {
	msg, fd, err := readMessage(c.conn)
	if err != nil {
		return "", -1, fmt.Errorf("device plugin socket %s: %w", c.path, err)
	}
	return msg, fd, nil
}

// readMessage reads one message and the first descriptor it carried (-1:
// none); it closes any other descriptor.
func readMessage(conn *net.UnixConn) (string, int, error) {
	buf := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return "", -1, err
	}
	if n == 0 && oobn == 0 {
		return "", -1, errors.New("the connection was closed")
	}
	fd := -1
	if oobn > 0 {
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return "", -1, err
		}
		for _, cm := range cmsgs {
			fds, err := unix.ParseUnixRights(&cm)
			if err != nil {
				continue
			}
			for _, f := range fds {
				if fd < 0 {
					fd = f
				} else {
					unix.Close(f)
				}
			}
		}
	}
	if flags&unix.MSG_TRUNC != 0 {
		if fd >= 0 {
			unix.Close(fd)
		}
		return "", -1, fmt.Errorf("a message longer than %d bytes", maxMessage)
	}
	return string(buf[:n]), fd, nil
}

// Server answers workers as the device plugin does, for the devices in
// Maps: each connection on a goroutine of its own (the plugin serves each
// pod on a socket of its own, once), for as long as Serve runs. Log may
// be called from several goroutines at once.
type Server struct {
	// Maps are the XSKMAPs it hands out, by device name; they must stay
	// open, and Maps unchanged, while Serve runs.
	Maps map[string]*ebpf.Map
	// Pods are the names a worker may introduce itself by; empty: any.
	Pods []string
	// Timeout ends a connection that sends nothing for this long (0: 30
	// seconds, the plugin's least).
	Timeout time.Duration
	// Log, if not nil, is told each request and what it was answered.
	Log func(string)
}

// Add hands m out for device: Maps[device] = m.
func (s *Server) Add(device string, m *ebpf.Map) {
	if s.Maps == nil {
		s.Maps = map[string]*ebpf.Map{}
	}
	s.Maps[device] = m
}

// Listen makes the SOCK_SEQPACKET socket at path (which must not exist)
// for Serve; the caller closes it, which removes the file.
func Listen(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// Serve answers connections on ln until ctx is done or ln is closed; it
// returns nil when ctx ended it, after every connection's goroutine has
// ended.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	stop := context.AfterFunc(ctx, func() { ln.SetDeadline(time.Now()) })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cstop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
			s.serve(conn)
			cstop()
			conn.Close()
		}()
	}
}

func (s *Server) log(format string, a ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, a...))
	}
}

// serve answers one connection until /fin, an error or the timeout.
func (s *Server) serve(conn *net.UnixConn) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	pod := ""
	write := func(resp string, fd int) bool {
		var oob []byte
		if fd >= 0 {
			oob = syscall.UnixRights(fd)
		}
		conn.SetWriteDeadline(time.Now().Add(timeout))
		_, _, err := conn.WriteMsgUnix([]byte(resp), oob, nil)
		return err == nil
	}
	for {
		conn.SetReadDeadline(time.Now().Add(timeout))
		req, fd, err := readMessage(conn)
		if err != nil {
			return
		}
		resp, out := s.answer(&pod, req, fd)
		if fd >= 0 {
			unix.Close(fd)
		}
		s.log("pod %q: %s -> %s", pod, req, resp)
		if !write(resp, out) || resp == ResponseFinAck || resp == ResponseHostNak || resp == ResponseError {
			return
		}
	}
}

// answer is the response to req (with fd, or -1) and the descriptor to
// send with it (-1: none); pod is set by /connect.
func (s *Server) answer(pod *string, req string, fd int) (string, int) {
	words := strings.Split(strings.ReplaceAll(req, " ", ""), ",")
	if *pod == "" {
		if words[0] != RequestConnect || len(words) != 2 || words[1] == "" {
			return ResponseHostNak, -1
		}
		if len(s.Pods) > 0 && !slices.Contains(s.Pods, words[1]) {
			return ResponseHostNak, -1
		}
		*pod = words[1]
		return ResponseHostOK, -1
	}
	switch {
	case words[0] == RequestVersion && len(words) == 1:
		return Version, -1
	case words[0] == RequestFD && len(words) == 2:
		m, ok := s.Maps[words[1]]
		if !ok {
			return ResponseFDNak, -1
		}
		return ResponseFDAck, m.FD()
	case words[0] == RequestBusyPoll && len(words) == 3:
		timeout, err1 := strconv.Atoi(words[1])
		budget, err2 := strconv.Atoi(words[2])
		if fd < 0 || err1 != nil || err2 != nil || configBusyPoll(fd, timeout, budget) != nil {
			return ResponseBusyPollNak, -1
		}
		return ResponseBusyPollAck, -1
	case words[0] == RequestFin && len(words) == 1:
		return ResponseFinAck, -1
	}
	return ResponseBadRequest, -1
}

// configBusyPoll sets preferred busy polling on the AF_XDP socket fd, as
// the plugin does.
func configBusyPoll(fd, timeout, budget int) error {
	if dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || dom != unix.AF_XDP {
		return errors.New("not an AF_XDP socket")
	}
	for _, o := range []struct{ opt, v int }{{unix.SO_PREFER_BUSY_POLL, 1}, {unix.SO_BUSY_POLL, timeout}, {unix.SO_BUSY_POLL_BUDGET, budget}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o.opt, o.v); err != nil {
			return err
		}
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/devplugin"
)

func init() { addCommand(newSteerCmd()) }

// steerFlags are steer's flags.
type steerFlags struct {
	iface, pin, socket, owner string
	pods                      []string
	udpPort                   uint16
	match                     string
	native, generic           bool
	force                     int // --force given once, twice
	frags                     bool
	duration                  time.Duration
}

func newSteerCmd() *cobra.Command {
	var f steerFlags
	c := &cobra.Command{
		Use:   "steer -i DEV (--pin PATH | --socket PATH) [flags]",
		Short: "Attach the steering program and hand its XSKMAP to workers that run without root",
		Long: `steer is the privileged side of workers that run without root: it attaches
xdpeng's steering program to DEV, with an XSKMAP and no socket in it, and hands
the map to workers, which put their sockets in it by queue (rxdrop, count,
l2fwd and fwd with --xsk-map, or engine.Config.XSKMap). Each queue's frames go
to the socket at its index; what finds no socket, or is not --udp-port's, goes
to the kernel's stack. A worker needs only CAP_NET_RAW for its sockets, and
CAP_IPC_LOCK or a memlock limit that holds its UMEM; on kernels that refuse
every bpf() call of a process without CAP_BPF while
kernel.unprivileged_bpf_disabled is set (Debian's 5.10; not its 6.1 and
later), CAP_BPF too.

Two ways to hand the map over, together or alone:
  --pin PATH     pin it in a bpffs (mode 0600, owned by --owner); the worker
                 opens it by path, and its directory must let the worker in
  --socket PATH  serve it on a Unix socket (owned by --owner) in the protocol
                 of the AF_XDP device plugin for Kubernetes: /connect,POD,
                 /xsk_map_fd,DEV, /config_busy_poll, /fin; the worker asks for
                 DEV's map, as DPDK's af_xdp driver does with the plugin

steer stays until Ctrl-C, SIGTERM or -d, then detaches the program, removes the
pin and the socket. After kill -9 the kernel detaches the program (bpf_link);
the pin stays until removed (rm PATH), and the socket file until the next steer
on that path takes it over (it removes a socket file nothing listens on).`,
		Example: `  # the map pinned for uid 65534, a worker without root
  sudo xdpeng steer -i dut0 --pin /sys/fs/bpf/xdpeng-dut0 --owner 65534
  setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps +net_raw,+ipc_lock \
    --ambient-caps +net_raw,+ipc_lock xdpeng rxdrop -i dut0 --xsk-map /sys/fs/bpf/xdpeng-dut0
  # the device plugin's protocol on a socket, only for pod web-0
  sudo xdpeng steer -i dut0 --socket /run/xdpeng/dut0.sock --owner 65534 --pod web-0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSteer(cmd, &f) },
	}
	fs := c.Flags()
	fs.StringVarP(&f.iface, "interface", "i", "", "device to attach the steering program to")
	fs.StringVar(&f.pin, "pin", "", "pin the XSKMAP at this path in a bpffs (it must not exist)")
	fs.StringVar(&f.socket, "socket", "", "serve the XSKMAP on a Unix socket at this path (it must not exist), in the AF_XDP device plugin's protocol")
	fs.StringVar(&f.owner, "owner", "", "give the pin and the socket to this user: NAME, UID or UID:GID (default: root's only)")
	fs.StringSliceVar(&f.pods, "pod", nil, "names a worker may introduce itself by on --socket (/connect,NAME; xdpeng's workers send their hostname); default: any")
	fs.Uint16Var(&f.udpPort, "udp-port", 0, "steer only UDP to this destination port to the sockets; the rest goes to the stack (--match proto=udp,port=N)")
	fs.StringVar(&f.match, "match", "", matchUsage)
	fs.BoolVarP(&f.native, "native", "N", false, "attach XDP in native (driver) mode (default: native where the device has it, else generic)")
	fs.BoolVarP(&f.generic, "generic", "S", false, "attach XDP in generic (SKB) mode")
	fs.BoolVarP(&f.frags, "frags", "F", false, "load the program multi-buffer aware, for workers run with -F")
	forceFlag(fs, &f.force)
	secondsVarP(fs, &f.duration, "duration", "d", 0, "stay this long, then detach (seconds, or a duration like 500ms; default: until Ctrl-C)")
	return c
}

// parseOwner reads --owner: NAME, UID or UID:GID; a user's group is its
// primary one.
func parseOwner(s string) (uid, gid int, err error) {
	u, g, hasGroup := strings.Cut(s, ":")
	if n, err := strconv.Atoi(u); err == nil && n >= 0 {
		uid, gid = n, n
	} else {
		pw, err := user.Lookup(u)
		if err != nil {
			return 0, 0, fmt.Errorf("--owner %s: no such user (a name, a uid, or uid:gid)", s)
		}
		uid, _ = strconv.Atoi(pw.Uid)
		gid, _ = strconv.Atoi(pw.Gid)
	}
	if hasGroup {
		n, err := strconv.Atoi(g)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("--owner %s: the group must be a number", s)
		}
		gid = n
	}
	return uid, gid, nil
}

// staleSocket removes a socket file at path that nothing listens on (left
// by a steer killed with -9), and refuses anything else there.
func staleSocket(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--socket %s: %w", path, err)
	}
	if st.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("--socket %s exists and is not a socket: name another path", path)
	}
	conn, err := net.Dial("unixpacket", path)
	if err == nil {
		conn.Close()
		return fmt.Errorf("--socket %s is served by another process (another steer?): stop it, or name another path", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("--socket %s exists: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("--socket %s: remove the socket file nothing listens on: %w", path, err)
	}
	return nil
}

func runSteer(cmd *cobra.Command, f *steerFlags) error {
	if f.iface == "" {
		return cliFlagError{errors.New("no interface given: use -i DEV")}
	}
	if f.pin == "" && f.socket == "" {
		return cliFlagError{errors.New("nothing hands the map over: use --pin PATH, --socket PATH, or both")}
	}
	if len(f.pods) > 0 && f.socket == "" {
		return cliFlagError{errors.New("--pod is for --socket's workers")}
	}
	var match engine.Match
	switch {
	case f.match != "" && f.udpPort != 0:
		return cliFlagError{errors.New("--udp-port N is --match proto=udp,port=N: give one")}
	case f.udpPort != 0:
		match = engine.Match{IPProto: 17, DstPort: f.udpPort}
	case f.match != "":
		m, err := engine.ParseMatch(f.match)
		if err != nil {
			return cliFlagError{fmt.Errorf("--match %w", err)}
		}
		match = m
	}
	mode := engine.XDPAuto
	switch {
	case f.native && f.generic:
		return cliFlagError{errors.New("-N (native) and -S (generic) exclude each other")}
	case f.generic:
		mode = engine.XDPGeneric
	case f.native:
		mode = engine.XDPNative
	}
	uid, gid := -1, -1
	if f.owner != "" {
		var err error
		if uid, gid, err = parseOwner(f.owner); err != nil {
			return cliFlagError{err}
		}
	}
	if f.pin != "" {
		if _, err := os.Lstat(f.pin); err == nil {
			return fmt.Errorf("--pin %s exists: remove it (a pin left by a steer killed with -9?) or name another path", f.pin)
		}
	}
	if f.socket != "" {
		if err := staleSocket(f.socket); err != nil {
			return err
		}
	}
	if err := needRoot(typed(cmd), privilege.BPF); err != nil {
		return err
	}
	forceNote(cmd.ErrOrStderr(), f.iface, f.force)
	ctx, stop := signalContext()
	defer stop()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	s, err := engine.NewSteering(engine.SteeringConfig{Interface: f.iface, XDPMode: mode, Match: match, MultiBuffer: f.frags, Force: f.force > 0, ForceInUse: f.force > 1})
	if err != nil {
		return advise(err)
	}
	defer s.Close()
	out := cmd.OutOrStdout()
	what := "every frame"
	if !match.IsZero() {
		what = match.String()
	}
	fmt.Fprintf(out, "steer: xdpeng's steering program on %s (%s XDP): %s to the socket at its queue's index in the XSKMAP, the rest to the stack\n", f.iface, s.Mode(), what)
	chown := func(p string) error {
		if uid < 0 {
			return nil
		}
		if err := os.Chown(p, uid, gid); err != nil {
			return fmt.Errorf("give %s to %d:%d: %w", p, uid, gid, err)
		}
		return nil
	}
	owner := "root only"
	if uid >= 0 {
		owner = fmt.Sprintf("owner %d:%d", uid, gid)
	}
	if f.pin != "" {
		if err := s.Pin(f.pin); err != nil {
			return fmt.Errorf("%w (--pin needs a path in a mounted bpffs: mount -t bpf bpf /sys/fs/bpf)", err)
		}
		if err := chown(f.pin); err != nil {
			return err
		}
		fmt.Fprintf(out, "  pinned at %s (0600, %s)\n", f.pin, owner)
	}
	served := make(chan error, 1)
	if f.socket != "" {
		ln, err := devplugin.Listen(f.socket)
		if err != nil {
			return fmt.Errorf("--socket %s: %w", f.socket, err)
		}
		defer ln.Close()
		if err := chown(f.socket); err != nil {
			return err
		}
		pods := "any pod name"
		if len(f.pods) > 0 {
			pods = "pods " + strings.Join(f.pods, ", ")
		}
		fmt.Fprintf(out, "  served at %s (the AF_XDP device plugin's protocol, %s, %s)\n", f.socket, pods, owner)
		srv := &devplugin.Server{Pods: f.pods, Log: func(l string) { fmt.Fprintf(cmd.ErrOrStderr(), "steer: %s\n", l) }}
		srv.Add(f.iface, s.XSKMap())
		go func() { served <- srv.Serve(ctx, ln) }()
	}
	at := f.pin
	if at == "" {
		at = f.socket
	}
	fmt.Fprintf(out, "workers: xdpeng rxdrop -i %s --xsk-map %s (CAP_NET_RAW and CAP_IPC_LOCK, no root)\n", f.iface, at)
	fmt.Fprintln(out, "until Ctrl-C or SIGTERM: then the program is detached and the pin and socket removed")
	select {
	case <-ctx.Done():
	case err := <-served:
		if err != nil {
			return fmt.Errorf("--socket %s: %w", f.socket, err)
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	fmt.Fprintf(out, "steer: detached from %s\n", f.iface)
	return nil
}

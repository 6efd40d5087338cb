package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces are bind-mounted, as iproute2
// does, so that `ip netns exec NAME ...` finds them.
const NetnsDir = "/var/run/netns"

// Do runs fn on a goroutine locked to an OS thread that has been switched into
// the named network namespace (a name under /var/run/netns), waits for it and
// returns its error; a panic in fn is re-raised in the caller.
//
// Only that thread is in the namespace: goroutines started by fn do NOT inherit
// it, they run in the process's namespace. File descriptors opened inside fn
// (netlink, ethtool, AF_PACKET and AF_XDP sockets) stay bound to the namespace
// for their whole life, so create sockets inside fn and then use them from any
// goroutine. If the thread cannot be switched back, it stays locked so that Go
// ends it rather than run other goroutines in the wrong namespace.
func Do(nsName string, fn func() error) error {
	target, err := netns.GetFromPath(filepath.Join(NetnsDir, nsName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("network namespace %q does not exist (list them with: ip netns list)", nsName)
		}
		return fmt.Errorf("open network namespace %s: %w", nsName, err)
	}
	defer target.Close()
	if err := doIn(target, fn); err != nil {
		return fmt.Errorf("in network namespace %s: %w", nsName, err)
	}
	return nil
}

// outcome carries fn's result from the locked goroutine to the caller.
type outcome struct {
	err      error
	panicked bool
	panicVal any
}

func doIn(target netns.NsHandle, fn func() error) error {
	res := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread()
		// Sent exactly once; the deferred send also covers fn calling
		// runtime.Goexit (t.FailNow, t.Skip), which skips everything below it.
		o := outcome{err: errors.New("function called runtime.Goexit (t.FailNow or t.Skip from a namespace callback?)")}
		defer func() { res <- o }()

		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			o.err = fmt.Errorf("get current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			o.err = fmt.Errorf("enter network namespace: %w", err)
			return
		}
		var r outcome
		func() {
			defer func() {
				if v := recover(); v != nil {
					r = outcome{panicked: true, panicVal: v}
				}
			}()
			r.err = fn()
		}()
		if err := netns.Set(orig); err != nil {
			// Stay locked: the thread dies with this goroutine.
			r.err = errors.Join(r.err, fmt.Errorf("return to the original network namespace: %w", err))
			o = r
			return
		}
		runtime.UnlockOSThread()
		o = r
	}()
	o := <-res
	if o.panicked {
		panic(o.panicVal)
	}
	return o.err
}

// nsExists reports whether a named network namespace is mounted.
func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(NetnsDir, name))
	return err == nil
}

// errNSExists is returned by createNamed when the name is taken.
var errNSExists = errors.New("network namespace exists")

// createNamed makes a new network namespace and bind-mounts it at
// /var/run/netns/name, like `ip netns add`. The calling thread is untouched:
// the namespace is made on a throwaway thread.
func createNamed(name string) error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", NetnsDir, err)
	}
	shareNetnsDir()
	path := filepath.Join(NetnsDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errNSExists
		}
		return fmt.Errorf("create %s: %w", path, err)
	}
	f.Close()

	errc := make(chan error, 1)
	go func() {
		// The thread goes back to its namespace when done. Left in the new
		// one it would hold it alive after `ip netns del` (Go does not end
		// a locked thread that is the process's main thread, it parks it):
		// where going back fails, it stays locked and Go ends it with this
		// goroutine.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("get current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		err = unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, "")
		if err == nil && netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		if err != nil {
			errc <- fmt.Errorf("bind-mount network namespace at %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// shareNetnsDir makes /var/run/netns a shared mount point, as iproute2 does,
// so that namespaces mounted there later are seen by processes that already
// run in other mount namespaces (e.g. inside `ip netns exec`). Best effort: a
// failure only affects such processes.
func shareNetnsDir() {
	err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: bind it onto itself first.
		if unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, "") == nil {
			unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
}

// deleteNamed unmounts and removes a named network namespace, like
// `ip netns del`. A missing namespace is not an error. The namespace itself
// lives on while a process or file descriptor still refers to it.
func deleteNamed(name string) error {
	path := filepath.Join(NetnsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// inSysfs runs fn with a sysfs mounted at /sys that shows the network
// namespace ns. sysfs shows the network devices of the namespace of whoever
// mounted it, so fn runs on a throwaway thread with its own mount namespace
// (like `ip netns exec`), where sysfs is mounted afresh.
func inSysfs(ns netns.NsHandle, fn func(sys string) error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's mount and network namespaces are
		// private to it, and Go ends it with this goroutine.
		runtime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare mount namespace: %w", err)
			}
			// Keep the sysfs mount below from propagating to the host.
			if err := unix.Mount("", "/", "none", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("make mounts private: %w", err)
			}
			if err := netns.Set(ns); err != nil {
				return fmt.Errorf("enter network namespace: %w", err)
			}
			if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
				return fmt.Errorf("mount sysfs: %w", err)
			}
			return fn("/sys")
		}()
	}()
	return <-errc
}

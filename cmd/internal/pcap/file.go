//go:build unix

package pcap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenFile opens path to write a capture to, as a program run by root
// should: the last component of path is never followed if it is a
// symbolic link (a link planted in /tmp would otherwise make root write
// where it points); a new file is created exclusively with mode 0600 (a
// capture holds the traffic); an existing one must be a regular file of
// the caller's own with no other hard link (else root would write into
// another user's file, or into the file a link points to), or a character
// device such as /dev/null. An existing file is left as it is: the caller
// truncates it when it starts writing. created says whether the open made
// the file.
func OpenFile(path string) (f *os.File, created bool, err error) {
	const flags = os.O_WRONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	f, err = os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		created = true
	} else if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, flags, 0)
	}
	if err != nil {
		return nil, false, openError(path, err)
	}
	if err := checkOpened(path, f, created); err != nil {
		f.Close()
		return nil, false, err
	}
	// O_NONBLOCK kept a FIFO from blocking the open; writes block.
	if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return f, created, nil
}

// checkOpened refuses what OpenFile opened if it is not a file to write a
// capture into.
func checkOpened(path string, f *os.File, created bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		return nil
	case unix.S_IFREG:
	case unix.S_IFIFO:
		return fmt.Errorf("%s is not a regular file (a FIFO): give a file to write", path)
	default:
		return fmt.Errorf("%s is not a regular file (mode %#o): give a file to write", path, st.Mode)
	}
	if created {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s is another user's file (uid %d): a capture is not written into it; remove it or give another name", path, st.Uid)
	}
	if st.Nlink > 1 {
		return fmt.Errorf("%s has %d hard links: a capture is not written into a file that is also elsewhere; remove it or give another name", path, st.Nlink)
	}
	return nil
}

// openError says why path could not be opened, without repeating the
// operation.
func openError(path string, err error) error {
	var pe *fs.PathError
	errno := err
	if errors.As(err, &pe) {
		errno = pe.Err
	}
	switch {
	case errors.Is(errno, unix.ELOOP):
		return fmt.Errorf("%s is a symbolic link: a capture is not written through one; give the file it points to", path)
	case errors.Is(errno, unix.EISDIR):
		return fmt.Errorf("%s is a directory: give a file to write, such as %s", path, filepath.Join(path, "capture.pcap"))
	case errors.Is(errno, unix.ENXIO):
		return fmt.Errorf("%s is not a regular file (a FIFO with no reader, or a socket): give a file to write", path)
	case errors.Is(errno, fs.ErrNotExist):
		if dir := filepath.Dir(path); !exists(dir) {
			return fmt.Errorf("directory %s does not exist", dir)
		}
	}
	return fmt.Errorf("cannot create or write it: %w", errno)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

package remote

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kinds of failure, checked with errors.Is. The ssh ones come wrapped in an
// *SSHError that carries ssh's own message.
var (
	// ErrUnreachable: no ssh connection could be made (name not resolved,
	// connection refused or timed out, no route, closed before login).
	ErrUnreachable = errors.New("DUT unreachable")
	// ErrAuth: the DUT refused every key ssh offered (Permission denied).
	ErrAuth = errors.New("ssh authentication failed")
	// ErrHostKey: the DUT's host key is unknown or differs from the one in
	// known_hosts, and ssh, running in batch mode, does not ask.
	ErrHostKey = errors.New("ssh host key verification failed")
	// ErrConnectionLost: an established connection broke (the DUT stopped
	// answering keep-alives, or closed it).
	ErrConnectionLost = errors.New("ssh connection to the DUT lost")
	// ErrSSH: ssh failed for another reason (exit status 255), e.g. a bad
	// option in its configuration.
	ErrSSH = errors.New("ssh failed")
	// ErrNotFound: the xdpeng binary (or the program started) is missing on
	// the DUT.
	ErrNotFound = errors.New("no such program on the DUT")
	// ErrMismatch: the DUT's xdpeng is not the same build as the local one.
	ErrMismatch = errors.New("xdpeng on the DUT differs from the local one")
	// ErrUnsafe: the DUT's xdpeng, or a directory above it, could be
	// changed by a user other than the ssh user and root, so it is not
	// run.
	ErrUnsafe = errors.New("xdpeng on the DUT could be changed by another user")
	// ErrKilled: a stopped command did not end within its grace period after
	// SIGINT and was killed.
	ErrKilled = errors.New("remote command killed")
)

// SSHError is a failure of ssh itself (exit status 255), not of the remote
// command. Kind is one of ErrUnreachable, ErrAuth, ErrHostKey,
// ErrConnectionLost and ErrSSH; errors.Is matches it.
type SSHError struct {
	Target Target
	Kind   error
	Stderr string // what ssh printed, trimmed
}

func (e *SSHError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Target, e.Kind)
	if s := lastLines(e.Stderr, 3); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *SSHError) Unwrap() error { return e.Kind }

// ExitError is a remote command that ended with a non-zero status, or by a
// signal.
type ExitError struct {
	Target Target
	Args   []string // the remote command
	// Code is the exit status, or -1 when the command was killed by a
	// signal or exited with 255: ssh reports both as its own status 255.
	Code   int
	Stderr string // what it printed on stderr, trimmed (the last 64 KiB)
}

func (e *ExitError) Error() string {
	var msg string
	if e.Code < 0 {
		msg = fmt.Sprintf("on %s: %s was killed by a signal or exited with status 255 (ssh does not tell them apart)", e.Target, QuoteCommand(e.Args))
	} else {
		msg = fmt.Sprintf("on %s: %s exited with status %d", e.Target, QuoteCommand(e.Args), e.Code)
	}
	if s := lastLines(e.Stderr, 5); s != "" {
		msg += ": " + s
	}
	return msg
}

// Is makes an exit status of 127 (the shell's "command not found") match
// ErrNotFound.
func (e *ExitError) Is(target error) bool { return target == ErrNotFound && e.Code == 127 }

// MismatchError is returned when the DUT's xdpeng is not the local build; it
// matches ErrMismatch.
type MismatchError struct {
	Target        Target
	Local, Remote Binary
	// Changed: the file was the build when it was looked up, and is not
	// when it was to run (RunBinary, StartBinary).
	Changed bool
}

func (e *MismatchError) Error() string {
	if e.Changed {
		return fmt.Sprintf("the DUT's xdpeng (%s: %s) is no longer the build that was checked (sha256 %s, now %s): it was replaced after it was looked up, and is not run",
			e.Target, e.Remote.Path, short(e.Local.SHA256), short(e.Remote.SHA256))
	}
	return fmt.Sprintf("the DUT's xdpeng (%s: %s, sha256 %s) is not the same build as this one (%s, sha256 %s): both sides must run the same binary; install this one on the DUT",
		e.Target, e.Remote.Path, short(e.Remote.SHA256), e.Local.Path, short(e.Local.SHA256))
}

func (e *MismatchError) Unwrap() error { return ErrMismatch }

// UnsafeError is an xdpeng on the DUT that is not run because a user other
// than the ssh user and root could change it: Culprit (the file itself, or
// a directory above it, symbolic links resolved) is owned by another user
// or writable by its group or by others. It matches ErrUnsafe.
type UnsafeError struct {
	Target  Target
	Path    string // the binary
	Culprit string // what failed the check
	UID     int    // Culprit's owner
	Owner   string // its name, as the DUT's stat says it
	Mode    string // its mode, as ls shows it (drwxrwxrwt)
	// Install: the refusal is Install's, of the place to install to.
	Install bool
}

func (e *UnsafeError) Error() string {
	what := "it"
	if e.Culprit != e.Path {
		what = "the directory " + e.Culprit
	}
	verb := "is not run"
	if e.Install {
		verb = "is not installed there"
	}
	return fmt.Sprintf("on %s: %s %s: %s is owned by %s (uid %d) with mode %s, so a user other than the ssh user and root could change what runs; "+
		"the binary and every directory above it must be owned by the ssh user or root and not be writable by group or others",
		e.Target, e.Path, verb, what, e.Owner, e.UID, e.Mode)
}

func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

// classifySSH names the failure in ssh's stderr (ssh exited 255). The
// messages are OpenSSH's; anything unrecognised is ErrSSH.
func classifySSH(stderr string) error {
	s := strings.ToLower(stderr)
	has := func(subs ...string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
	switch {
	case has("host key verification failed", "remote host identification has changed",
		"host key is known for", "no matching host key type"):
		return ErrHostKey
	case has("permission denied", "too many authentication failures", "no more authentication methods"):
		return ErrAuth
	case has("timeout, server", "not responding", "closed by remote host", "client_loop:",
		"broken pipe", "connection reset by"):
		// "kex_exchange_identification: Connection closed by remote host"
		// comes before login: the server would not talk to us.
		if has("kex_exchange_identification", "banner exchange") {
			return ErrUnreachable
		}
		return ErrConnectionLost
	case has("could not resolve hostname", "connection refused", "connection timed out",
		"no route to host", "network is unreachable", "host is unreachable", "operation timed out",
		"kex_exchange_identification", "banner exchange", "name or service not known"):
		return ErrUnreachable
	}
	return ErrSSH
}

// lastLines returns the last n non-empty lines of s joined by "; ", each
// cut to 500 bytes, with Printable's replacements: what the DUT printed
// goes to this host's terminal.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, cut(Printable(l), 500))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// Printable replaces in s what a terminal would take for a command (C0
// and C1 control characters, DEL: escape sequences, a carriage return
// that overwrites the line) and invalid UTF-8 with U+FFFD, so that text
// from the DUT is shown, never obeyed.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r >= 0x7f && r < 0xa0 || r == utf8.RuneError {
			return utf8.RuneError
		}
		return r
	}, s)
}

// cut shortens s to at most n bytes for a message.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// short gives the first 12 hex digits of a hash, as git does for commits.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// Package remote runs xdpeng on a device under test (DUT) that is another
// machine, through the system's OpenSSH client, so that the user's
// ~/.ssh/config, keys and agent work as they always do.
//
// A Runner builds each ssh command line: the user's ssh command (default
// "ssh", or what SplitCommand made of --ssh-command), then options that make
// it non-interactive and quick to fail (BatchMode, ConnectTimeout,
// ServerAliveInterval/CountMax, no pty, no forwarding), then the target and
// the remote command. ssh hands that command to the remote user's login
// shell as one string, so every argument is quoted (Quote); the login shell
// must be a POSIX one (sh, bash, dash, zsh). Remote paths are taken
// literally: `~` is not expanded, and a relative path is relative to the
// remote user's home directory.
//
// Both sides must run the same build: CheckBinary compares the SHA-256 of
// the local executable with the DUT's, and Install copies the local one
// over (by default to ~/.cache/xdpeng of the ssh user, made 0700).
// RunBinary and StartBinary run that binary, and check it again in the
// same remote command: it and every directory above it must be owned by
// the ssh user or root and not be writable by group or others (else an
// *UnsafeError: another user could change what runs, as root), and what
// runs is a private copy whose hash is checked on the open file that is
// then executed, so that no swap between the check and the run can
// happen. Start runs any command; StartBinary and Start hand back each
// JSON line of its stdout as it comes (a bad or endless line stops the
// command, with a *LineError); Stop ends it with SIGINT, then SIGKILL.
//
// What keeps a DUT clean when the tester dies (kill -9, a lost network) is
// not this package: it is the run's own --duration, which Start always
// passes. The remote xdpeng ends by itself when its duration is up whether
// or not anyone is still connected (sshd does not signal a session's
// command when the client goes; a write to the closed session may end it
// sooner, by SIGPIPE), and the kernel detaches its bpf_link attachments on
// any exit.
//
// The session's packets must get through the DUT's ports: a path that
// takes every frame of the port ssh uses (XDP drop, an AF_XDP socket
// without a UDP port filter) cuts the session off until the run ends. Reach
// the DUT through another port (a lab's management network), or filter the
// test traffic.
//
// Errors say which side failed: an *SSHError (ErrUnreachable, ErrAuth,
// ErrHostKey, ErrConnectionLost, ErrSSH) when ssh itself failed, an
// *ExitError with the remote's stderr when the remote command did,
// ErrNotFound, an *UnsafeError and a *MismatchError about the binary. What
// the DUT prints is shown in errors with its control characters replaced
// (Printable).
package remote

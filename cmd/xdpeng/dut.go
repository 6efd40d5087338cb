package main

// The two-host flags of compare, latency and bench: a device under test
// that is another host, driven over the system's ssh (internal/lab/remote).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/lab/compare"
	"github.com/xdpeng/xdpeng/internal/lab/remote"
)

// dutFlags are --dut and the flags that go with it.
type dutFlags struct {
	target     string
	dutIfs     []string
	genIfs     []string
	sshCommand string
	binary     string
	install    bool

	fs *pflag.FlagSet
}

// dutHelp is what the commands' --help says about two hosts.
const dutHelp = `Two hosts: with --dut ssh://[user@]host[:port] the device under test is
another host. xdpeng runs there over the system's ssh (your ~/.ssh/config,
keys and agent work as always; --ssh-command replaces "ssh", as GIT_SSH_COMMAND
does), the same build as here: one that differs is refused, --dut-install
copies this one over (to the ssh user's ~/.cache/xdpeng). A binary that a user
other than the ssh user and root could change (it, or a directory above it,
is another user's or writable by group or others) is never run; each command
checks it again, and runs a private copy whose hash it checked. Each path
runs on the DUT as xdpeng's own command for it (kern, rxdrop, l2fwd,
fwd --json, bounded by its own duration, so that it ends by itself if this
host dies), beside "xdpeng stats --cpu" on its ports;
the generator and the receivers of frames that come back run here on
--gen-if, cabled to --dut-if. Rows join both sides' counters: sent here,
received and dropped there, lost_on_wire for what the tester's port sent and
the DUT's port never counted. ssh must reach the DUT through a port the
paths do not take (a management network): XDP drop takes every frame of
--dut-if, ssh's too. The DUT's user needs root, or CAP_NET_ADMIN, CAP_BPF,
CAP_NET_RAW and CAP_PERFMON (the programs, the AF_XDP sockets, the xdp
tracepoints).
`

func (d *dutFlags) register(fs *pflag.FlagSet) {
	d.fs = fs
	fs.StringVar(&d.target, "dut", "", "run the paths on a DUT on another host: ssh://[user@]host[:port], reached through a port the paths do not take")
	fs.StringSliceVar(&d.dutIfs, "dut-if", nil, "with --dut: the DUT's port the generator sends to, then for forwarding paths the ports they send out of (dut0[,dut1])")
	fs.StringSliceVar(&d.genIfs, "gen-if", nil, "with --dut: this host's ports cabled to --dut-if, in the same order (gen0[,gen1])")
	fs.StringVar(&d.sshCommand, "ssh-command", "", `with --dut: the ssh command and its options, e.g. "ssh -F lab.conf" (default: ssh)`)
	fs.StringVar(&d.binary, "dut-xdpeng", "", "with --dut: xdpeng's path on the DUT (default: xdpeng in its PATH, then where --dut-install puts it)")
	fs.BoolVar(&d.install, "dut-install", false, "with --dut: copy this xdpeng to the DUT when it has none, another build, or one another user could change (to ~/.cache/xdpeng/xdpeng-HASH of the ssh user, or --dut-xdpeng)")
}

// given tells whether --dut is.
func (d *dutFlags) given() bool { return d.target != "" || d.fs.Changed("dut") }

// check checks the flags without reaching the DUT. Without --dut none of
// the others may be given.
func (d *dutFlags) check() error {
	if !d.given() {
		for _, n := range []string{"dut-if", "gen-if", "ssh-command", "dut-xdpeng", "dut-install"} {
			if d.fs.Changed(n) {
				return fmt.Errorf("--%s is for --dut (a DUT on another host)", n)
			}
		}
		return nil
	}
	if _, err := remote.ParseTarget(d.target); err != nil {
		return fmt.Errorf("--dut: %w", err)
	}
	if len(d.dutIfs) == 0 {
		return errors.New("--dut needs --dut-if DEV: the DUT's port the generator sends to")
	}
	if len(d.genIfs) == 0 {
		return errors.New("--dut needs --gen-if DEV: this host's port cabled to --dut-if")
	}
	if len(d.dutIfs) != len(d.genIfs) {
		return fmt.Errorf("--dut-if names %d port(s), --gen-if %d: give one of this host's ports for each DUT port, cabled to it, in the same order",
			len(d.dutIfs), len(d.genIfs))
	}
	if d.sshCommand != "" {
		if _, err := remote.SplitCommand(d.sshCommand); err != nil {
			return fmt.Errorf("--ssh-command: %w", err)
		}
	}
	return nil
}

// config makes the Remote of the flags, which are checked: a Runner that
// reaches the DUT, its ports and the tester's. It reaches nothing yet.
func (d *dutFlags) config() (*compare.Remote, error) {
	t, err := remote.ParseTarget(d.target)
	if err != nil {
		return nil, fmt.Errorf("--dut: %w", err)
	}
	r, err := remote.NewRunner(t, d.sshCommand)
	if err != nil {
		return nil, fmt.Errorf("--ssh-command: %w", err)
	}
	return &compare.Remote{Runner: r, DUTInterfaces: d.dutIfs, GenInterfaces: d.genIfs}, nil
}

// findBinary reaches the DUT of rc and checks that its xdpeng is this
// build, or with --dut-install copies this one over; it sets rc.Binary and
// says what it did on progress (if not nil).
func (d *dutFlags) findBinary(ctx context.Context, rc *compare.Remote, progress func(string)) error {
	say := func(format string, a ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, a...))
		}
	}
	local, err := remote.LocalBinary()
	if err != nil {
		return err
	}
	r := rc.Runner
	say("reaching the DUT %s over ssh: is its xdpeng this build (sha256 %.12s)?", r.Target, local.SHA256)
	bin, err := r.CheckBinary(ctx, local, d.binary)
	switch {
	case err == nil:
	case d.install && (errors.Is(err, remote.ErrNotFound) || errors.Is(err, remote.ErrMismatch) || errors.Is(err, remote.ErrUnsafe)):
		say("copying this xdpeng to the DUT (%v)", err)
		if bin, err = r.Install(ctx, local, d.binary); err != nil {
			return dutAdvice(err)
		}
		say("installed on the DUT as %s", bin.Path)
	default:
		return dutAdvice(err)
	}
	rc.Binary = bin
	return nil
}

// startMeasuring checks the privileges a measuring command needs and gives
// it a context that Ctrl-C and SIGTERM cancel (call stop when done); with a
// DUT on another host (rc not nil) it then finds, or installs, the DUT's
// xdpeng.
func (d *dutFlags) startMeasuring(cmd *cobra.Command, rc *compare.Remote, progress func(string)) (ctx context.Context, stop context.CancelFunc, err error) {
	if err := needRoot(typed(cmd), privilege.AFXDP|privilege.Namespaces); err != nil {
		return nil, nil, err
	}
	ctx, stop = signalContext()
	if rc != nil {
		if err := d.findBinary(ctx, rc, progress); err != nil {
			if ctx.Err() != nil {
				err = interrupted{err}
			} // else it has its advice
			stop()
			return nil, nil, err
		}
	}
	return ctx, stop, nil
}

// measureErr is what a measuring command returns for the error of its run:
// interrupted when Ctrl-C or SIGTERM ended it, otherwise err with advice on
// reaching the DUT where that failed.
func measureErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return interrupted{err}
	}
	return dutAdvice(err)
}

// stoppedAfter is what a measuring command returns for the error of a run
// that Ctrl-C or SIGTERM stopped after some of it finished, once it has
// printed those rows (done of them, each a what, measured of them with a
// measurement; unfinished, the rest): a note on stderr and success, as
// every long-running command ends on Ctrl-C, or interrupted when anything
// besides the cancel failed (removing a test bed) or nothing was measured.
func stoppedAfter(cmd *cobra.Command, err error, done, measured int, what string, unfinished []string) error {
	if !onlyCanceled(err) || measured == 0 {
		return interrupted{err}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "xdpeng: %s interrupted: %d %s(s) finished and printed, not finished: %s; everything the run set up has been removed\n",
		cmd.Name(), done, what, strings.Join(unfinished, ", "))
	return nil
}

// onlyCanceled reports whether err, through its wrapping and joining,
// is context.Canceled alone.
func onlyCanceled(err error) bool {
	switch e := err.(type) {
	case nil:
		return true
	case interface{ Unwrap() []error }:
		for _, sub := range e.Unwrap() {
			if !onlyCanceled(sub) {
				return false
			}
		}
		return true
	}
	if err == context.Canceled {
		return true
	}
	if u := errors.Unwrap(err); u != nil {
		return onlyCanceled(u)
	}
	return false
}

// dutAdvice adds to an error of reaching the DUT what to do about it.
func dutAdvice(err error) error {
	var me *remote.MismatchError
	var ue *remote.UnsafeError
	switch {
	case errors.As(err, &me) && me.Changed:
		return fmt.Errorf("%w: someone replaced it during the run; find out who can write there, then run again (--dut-install puts this build in the ssh user's ~/%s)", err, remote.CacheDir)
	case errors.As(err, &me):
		return fmt.Errorf("%w: pass --dut-install to copy it to ~/%s on the DUT, where later runs find it (or --dut-xdpeng PATH to put it elsewhere)",
			err, remote.DefaultInstallPath(me.Local))
	case errors.As(err, &ue) && ue.Install:
		return fmt.Errorf("%w: install into a directory of the ssh user's own (without --dut-xdpeng: ~/%s), or fix the owner or mode of %s (chmod go-w)", err, remote.CacheDir, ue.Culprit)
	case errors.As(err, &ue):
		return fmt.Errorf("%w: pass --dut-install to put this build in the ssh user's ~/%s, or fix the owner or mode of %s (chown, chmod go-w) if you trust what is there", err, remote.CacheDir, ue.Culprit)
	case errors.Is(err, remote.ErrNotFound):
		return fmt.Errorf("%w: pass --dut-install to copy this xdpeng there, or --dut-xdpeng PATH if it is elsewhere", err)
	case errors.Is(err, remote.ErrUnreachable):
		return fmt.Errorf("%w: check the address, and that sshd runs on the DUT and answers on a port the paths do not take (try: ssh HOST true)", err)
	case errors.Is(err, remote.ErrAuth):
		return fmt.Errorf("%w: the DUT took none of the keys offered: add yours to its authorized_keys (ssh-copy-id), or name the key in ~/.ssh/config or --ssh-command \"ssh -i KEY\" (ssh never asks for a password here)", err)
	case errors.Is(err, remote.ErrHostKey):
		return fmt.Errorf("%w: ssh never asks here: connect once with ssh to check and accept the DUT's host key, or fix its line in known_hosts", err)
	case errors.Is(err, remote.ErrConnectionLost):
		return fmt.Errorf("%w: a path may have taken the frames of the port ssh uses: reach the DUT through another port (a management network)", err)
	}
	return err
}

// dutNotes says which paths of a family are left out on two hosts.
func dutNote(cmd *cobra.Command, what string, left []string) {
	if len(left) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: with --dut, left out: %s (no xdpeng command runs them on the DUT, or they need more ports)\n", what, strings.Join(left, ", "))
	}
}

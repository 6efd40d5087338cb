package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Binary is an xdpeng executable on one side.
type Binary struct {
	Path   string // absolute on this side; as resolved on the DUT
	SHA256 string // of the file's contents, lower-case hex
}

// DefaultName is the program looked up in the DUT's PATH when no path is
// given.
const DefaultName = "xdpeng"

// HashFile returns path's SHA-256.
func HashFile(path string) (Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return Binary{}, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Binary{}, fmt.Errorf("hash %s: %w", path, err)
	}
	return Binary{Path: path, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// LocalBinary identifies the running executable (os.Executable) by its
// SHA-256.
func LocalBinary() (Binary, error) {
	path, err := os.Executable()
	if err != nil {
		return Binary{}, fmt.Errorf("find this executable: %w", err)
	}
	return HashFile(path)
}

// CacheDir is the directory of xdpeng's own on the DUT, relative to the ssh
// user's home directory: Install puts builds there by default (made 0700
// when missing), and RunBinary makes its private copies there.
const CacheDir = ".cache/xdpeng"

// DefaultInstallPath is where Install puts b on the DUT when given no path:
// ~/.cache/xdpeng/xdpeng-<first 12 hex digits of its hash> in the ssh
// user's home directory (the path is relative to it). A build never
// overwrites a system binary, nor another build, and a later run finds it
// again (and so does CheckBinary). Nobody but that user and root can write
// there.
func DefaultInstallPath(b Binary) string { return CacheDir + "/xdpeng-" + short(b.SHA256) }

// checkRemotePath refuses a remote path that the scripts below cannot carry
// (a newline) or that a shell would take for an option.
func checkRemotePath(p string) error {
	switch {
	case p == "":
		return errors.New("empty remote path")
	case strings.ContainsAny(p, "\n\x00"):
		return fmt.Errorf("remote path %q contains a newline or NUL", p)
	case strings.HasPrefix(p, "-"):
		return fmt.Errorf("remote path %q starts with '-'", p)
	}
	return nil
}

// safeFunc begins every script that checks or runs a binary. It keeps the
// ssh user's PATH in upath and runs the scripts' own tools (id, stat,
// readlink, sha256sum, cp, mktemp) from the system's directories only, so
// that a directory of the user's PATH that others can write cannot stand
// in for them. It defines the shell function safe: `safe PATH` succeeds
// if PATH (made absolute, its symbolic links resolved) and every directory
// above it are owned by root or by the ssh user and are not writable by
// group or others; otherwise it prints "xdpeng-unsafe UID MODE OWNER PATH"
// about the first that is not and fails. Exit 99: id or stat is missing.
const safeFunc = `upath=$PATH
PATH=/usr/sbin:/usr/bin:/sbin:/bin
me=$(id -u) || exit 99
safe() {
	f=$(readlink -f "$1") || return 1
	while :; do
		s=$(stat -c '%u %a %A %U' "$f") || exit 99
		set -- $s
		bad=
		[ "$1" = 0 ] || [ "$1" = "$me" ] || bad=1
		case $2 in *[2367]? | *[2367]) bad=1 ;; esac
		if [ -n "$bad" ]; then
			echo "xdpeng-unsafe $1 $3 $4 $f"
			return 1
		fi
		[ "$f" = / ] && return 0
		f=${f%/*}
		[ -n "$f" ] || f=/
	done
}
`

// findScript prints, for each candidate (a path, or a name looked up in
// PATH), "xdpeng-binary HASH PATH" (PATH absolute, its links resolved),
// followed by safe's line if it fails, or "xdpeng-missing CANDIDATE"; it
// exits 98 when sha256sum is missing. Lines before the first marker (a
// noisy login shell) are ignored by the reader.
const findScript = safeFunc + `for p in "$@"; do
	case $p in
	*/*) r=$p ;;
	*) r=$(PATH=$upath; command -v "$p" 2>/dev/null) || r= ;;
	esac
	if [ -n "$r" ] && [ -f "$r" ] && [ -x "$r" ]; then
		h=$(sha256sum < "$r") || exit 98
		a=$(readlink -f "$r") || a=$r
		u=$(safe "$r") || [ -n "$u" ] || exit 99
		echo "xdpeng-binary ${h%% *} $a"
		[ -z "$u" ] || echo "$u"
	else
		echo "xdpeng-missing $p"
	fi
done`

// Exit statuses of the remote scripts, each with a line on stderr that
// says why (see binaryError).
const (
	exitChanged   = 92 // the private copy's SHA-256 is not the build's
	exitUnsafe    = 93 // safe failed: "xdpeng-unsafe ..."
	exitNoPrivate = 94 // the private directory or the copy could not be made
	exitNoProc    = 95 // /proc/self/fd is missing
	exitHashDiff  = 96 // Install: the copied file's SHA-256 differs
	exitMissing   = 97 // the binary is not there
	exitNoSHA     = 98 // sha256sum is missing
	exitNoTools   = 99 // id, stat or readlink is missing
)

// runScript runs a binary only if it is one of the build: $1 is the
// build's SHA-256, $2 the binary, the rest its arguments. It refuses a
// binary that safe refuses, copies it into a new private directory (mktemp
// -d, 0700, in the cache directory, itself checked by safe), opens the
// copy, removes the directory, hashes the open copy and executes that same
// open file through /proc/self/fd: what runs is what was hashed, a file no
// other user could open for writing, and nothing is left on the disk.
// markerHere is replaced by what runs just before the exec (Start's
// marker).
const runScript = safeFunc + `want=$1 bin=$2
shift 2
if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then echo "xdpeng-missing $bin" >&2; exit 97; fi
safe "$bin" >&2 || exit 93
d=${HOME:-.}/` + CacheDir + `
[ -d "$d" ] || mkdir -p -m 700 "$d" || exit 94
safe "$d" >&2 || exit 93
t=$(mktemp -d "$d/run.XXXXXX") || exit 94
trap 'rm -rf "$t"' EXIT
trap 'exit 1' HUP INT TERM
cp "$bin" "$t/xdpeng" && chmod 700 "$t/xdpeng" || exit 94
exec 3< "$t/xdpeng"
rm -rf "$t"
trap - EXIT HUP INT TERM
[ -e /proc/self/fd/3 ] || { echo "xdpeng-noproc" >&2; exit 95; }
h=$(sha256sum <&3) || exit 98
h=${h%% *}
if [ "$h" != "$want" ]; then echo "xdpeng-changed $h $bin" >&2; exit 92; fi
` + markerHere + `
PATH=$upath
exec /proc/self/fd/3 "$@"`

// markerHere stands in runScript for the command run just before the exec.
const markerHere = "#xdpeng-marker"

// RemoteBinary resolves path on the DUT (a name without '/' is looked up in
// the remote PATH; "" means DefaultName) and returns its SHA-256. A missing
// or non-executable file is ErrNotFound; one that another user could
// change is an *UnsafeError.
func (r *Runner) RemoteBinary(ctx context.Context, path string) (Binary, error) {
	if path == "" {
		path = DefaultName
	}
	found, err := r.find(ctx, []string{path})
	if err != nil {
		return Binary{}, err
	}
	if found[0].Path == "" {
		return Binary{}, r.notFound([]string{path})
	}
	if found[0].unsafe != nil {
		return Binary{}, found[0].unsafe
	}
	return found[0].Binary, nil
}

// foundBinary is a candidate of find: no Path if it is missing, unsafe if
// safe refused it.
type foundBinary struct {
	Binary
	unsafe *UnsafeError
}

// find runs findScript.
func (r *Runner) find(ctx context.Context, candidates []string) ([]foundBinary, error) {
	for _, c := range candidates {
		if err := checkRemotePath(c); err != nil {
			return nil, err
		}
	}
	out, err := r.Run(ctx, append([]string{"sh", "-c", findScript, "sh"}, candidates...)...)
	if err := r.toolError(err); err != nil {
		return nil, err
	}
	var found []foundBinary
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case len(found) == len(candidates) && !strings.HasPrefix(line, "xdpeng-unsafe "):
		case strings.HasPrefix(line, "xdpeng-missing "):
			found = append(found, foundBinary{})
		case strings.HasPrefix(line, "xdpeng-binary "):
			hash, p, ok := strings.Cut(strings.TrimPrefix(line, "xdpeng-binary "), " ")
			if !ok || len(hash) != sha256.Size*2 {
				return nil, fmt.Errorf("on %s: unexpected output of the binary lookup: %q", r.Target, line)
			}
			found = append(found, foundBinary{Binary: Binary{Path: p, SHA256: hash}})
		case strings.HasPrefix(line, "xdpeng-unsafe "):
			if len(found) == 0 || found[len(found)-1].Path == "" || found[len(found)-1].unsafe != nil {
				return nil, fmt.Errorf("on %s: unexpected output of the binary lookup: %q", r.Target, line)
			}
			last := &found[len(found)-1]
			if last.unsafe = parseUnsafe(r.Target, last.Path, line); last.unsafe == nil {
				return nil, fmt.Errorf("on %s: unexpected output of the binary lookup: %q", r.Target, line)
			}
		}
	}
	if len(found) != len(candidates) {
		return nil, fmt.Errorf("on %s: the binary lookup printed %d results for %d paths: %q", r.Target, len(found), len(candidates), cut(string(out), 500))
	}
	return found, nil
}

// toolError names the tool a remote script missed.
func (r *Runner) toolError(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		switch ee.Code {
		case exitNoSHA:
			return fmt.Errorf("on %s: sha256sum is missing (it is in coreutils or busybox): %w", r.Target, err)
		case exitNoTools:
			return fmt.Errorf("on %s: id, stat or readlink -f is missing (they are in coreutils or busybox): %w", r.Target, err)
		}
	}
	return err
}

// parseUnsafe reads safe's line "xdpeng-unsafe UID MODE OWNER PATH" about
// binary bin; nil if it is not one.
func parseUnsafe(t Target, bin, line string) *UnsafeError {
	f := strings.SplitN(strings.TrimPrefix(line, "xdpeng-unsafe "), " ", 4)
	if len(f) != 4 {
		return nil
	}
	uid, err := strconv.Atoi(f[0])
	if err != nil {
		return nil
	}
	return &UnsafeError{Target: t, Path: bin, Culprit: f[3], UID: uid, Mode: f[1], Owner: f[2]}
}

func (r *Runner) notFound(candidates []string) error {
	var where []string
	for _, c := range candidates {
		switch {
		case strings.HasPrefix(c, "/"):
			where = append(where, c)
		case strings.Contains(c, "/"):
			where = append(where, "~/"+strings.TrimPrefix(c, "./")) // relative to the home directory
		default:
			where = append(where, c+" in PATH")
		}
	}
	return fmt.Errorf("%w: %s has no executable %s", ErrNotFound, r.Target, strings.Join(where, " nor "))
}

// CheckBinary finds the DUT's xdpeng and checks that it is the same build
// as local and that no user but the ssh user and root can change it. With
// path "", it looks for DefaultName in the DUT's PATH and then at
// DefaultInstallPath(local), where an earlier Install put it, and takes the
// first that matches and is safe. It returns the DUT's binary (its path
// absolute, links resolved); ErrNotFound if there is none; an
// *UnsafeError (ErrUnsafe) if the one of this build is refused; a
// *MismatchError (ErrMismatch) naming both if it differs.
//
// The check is what CheckBinary says now; RunBinary and StartBinary check
// again, in the command that runs the binary.
func (r *Runner) CheckBinary(ctx context.Context, local Binary, path string) (Binary, error) {
	candidates := []string{path}
	if path == "" {
		candidates = []string{DefaultName, DefaultInstallPath(local)}
	}
	found, err := r.find(ctx, candidates)
	if err != nil {
		return Binary{}, err
	}
	var first *Binary
	var unsafe *UnsafeError
	for i := range found {
		if found[i].Path == "" {
			continue
		}
		if found[i].SHA256 == local.SHA256 {
			if found[i].unsafe == nil {
				return found[i].Binary, nil
			}
			if unsafe == nil {
				unsafe = found[i].unsafe
			}
		}
		if first == nil {
			first = &found[i].Binary
		}
	}
	switch {
	case unsafe != nil:
		return Binary{}, unsafe
	case first == nil:
		return Binary{}, r.notFound(candidates)
	}
	return Binary{}, &MismatchError{Target: r.Target, Local: local, Remote: *first}
}

// installScript writes stdin to a temporary file beside $1, checks that
// its SHA-256 is $2, makes it executable and renames it to $1, so that $1
// is either the old file or the whole new one. With $3 = 1 it first makes
// $1's directory (0700) if it is missing. The directory must pass safe.
const installScript = safeFunc + `set -e
dst=$1
dir=${dst%/*}
[ "$3" != 1 ] || [ -d "$dir" ] || mkdir -p -m 700 "$dir"
if [ ! -d "$dir" ]; then echo "directory $dir does not exist" >&2; exit 1; fi
safe "$dir" >&2 || exit 93
if [ -d "$dst" ]; then echo "$dst is a directory" >&2; exit 1; fi
tmp=$(mktemp "$dir/.xdpeng-install.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cat > "$tmp"
h=$(sha256sum < "$tmp")
if [ "${h%% *}" != "$2" ]; then
	echo "copied file's sha256 is ${h%% *}, not $2" >&2
	exit 96
fi
chmod 755 "$tmp"
mv -f "$tmp" "$dst"
trap - EXIT`

// Install copies the local binary to the DUT at path ("" means
// DefaultInstallPath(local), whose directory is made 0700 if missing),
// streaming it over ssh's stdin into a temporary file in the same
// directory, which is checked, made executable (0755) and renamed into
// place. A directory that another user could change (see CheckBinary) is
// refused with an *UnsafeError. It then looks the installed file up again
// and returns it; a hash that differs is a *MismatchError.
func (r *Runner) Install(ctx context.Context, local Binary, path string) (Binary, error) {
	mkdir := "0"
	if path == "" {
		path, mkdir = DefaultInstallPath(local), "1"
	}
	if err := checkRemotePath(path); err != nil {
		return Binary{}, err
	}
	if !strings.Contains(path, "/") {
		path = "./" + path // in the home directory, not looked up in PATH
	}
	f, err := os.Open(local.Path)
	if err != nil {
		return Binary{}, fmt.Errorf("install xdpeng on %s: %w", r.Target, err)
	}
	defer f.Close()
	if _, err := r.run(ctx, f, []string{"sh", "-c", installScript, "sh", path, local.SHA256, mkdir}, nil); err != nil {
		err = r.binaryError(err, Binary{Path: path})
		if ue := (*UnsafeError)(nil); errors.As(err, &ue) {
			ue.Install = true
			return Binary{}, ue
		}
		return Binary{}, fmt.Errorf("install %s on %s at %s: %w", local.Path, r.Target, path, err)
	}
	got, err := r.RemoteBinary(ctx, path)
	if err != nil {
		return Binary{}, fmt.Errorf("install xdpeng on %s: check %s: %w", r.Target, path, err)
	}
	if got.SHA256 != local.SHA256 {
		return Binary{}, &MismatchError{Target: r.Target, Local: local, Remote: got}
	}
	return got, nil
}

// checkBinary refuses a Binary that RunBinary cannot check.
func checkBinary(b Binary) error {
	if err := checkRemotePath(b.Path); err != nil {
		return err
	}
	if _, err := hex.DecodeString(b.SHA256); err != nil || len(b.SHA256) != sha256.Size*2 {
		return fmt.Errorf("binary %s: %q is not a SHA-256 (find the binary with CheckBinary)", b.Path, b.SHA256)
	}
	return nil
}

// binaryCommand is the remote command that runs b with args through
// runScript, with marker before the exec.
func binaryCommand(b Binary, marker string, args []string) []string {
	return append([]string{"sh", "-c", strings.Replace(runScript, markerHere, marker, 1), "sh", strings.ToLower(b.SHA256), b.Path}, args...)
}

// binaryError turns runScript's (and installScript's) refusals into this
// package's errors: an *UnsafeError, a *MismatchError for a file that is
// not b's build (any more), ErrNotFound for a missing one.
func (r *Runner) binaryError(err error, b Binary) error {
	var ee *ExitError
	if !errors.As(err, &ee) {
		return err
	}
	line := func(prefix string) string {
		for _, l := range strings.Split(ee.Stderr, "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		return ""
	}
	switch ee.Code {
	case exitUnsafe:
		if u := parseUnsafe(r.Target, b.Path, line("xdpeng-unsafe ")); u != nil {
			return u
		}
	case exitChanged:
		if f := strings.Fields(line("xdpeng-changed ")); len(f) >= 2 {
			return &MismatchError{Target: r.Target, Local: Binary{Path: "this build", SHA256: b.SHA256},
				Remote: Binary{Path: b.Path, SHA256: f[1]}, Changed: true}
		}
	case exitMissing:
		if line("xdpeng-missing ") != "" {
			return fmt.Errorf("%w: %s has no %s", ErrNotFound, r.Target, b.Path)
		}
	case exitNoPrivate:
		return fmt.Errorf("on %s: could not make a private copy of %s in ~/%s: %w", r.Target, b.Path, CacheDir, err)
	case exitNoProc:
		return fmt.Errorf("on %s: /proc/self/fd is missing (is /proc mounted?): %w", r.Target, err)
	case 126:
		if strings.Contains(ee.Stderr, "/proc/self/fd/3") {
			return fmt.Errorf("on %s: the checked copy of %s in ~/%s could not be executed (is the home directory on a noexec mount?): %w", r.Target, b.Path, CacheDir, err)
		}
	}
	return r.toolError(err)
}

// RunBinary runs b (as CheckBinary or Install returned it) with args on the
// DUT, as Run does, checked in the same remote command: b.Path and every
// directory above it must be owned by the ssh user or root and not
// writable by group or others (else an *UnsafeError, and nothing runs),
// and what runs is a private copy whose SHA-256 is b.SHA256 (else a
// *MismatchError): there is no moment between the check and the run at
// which the file could be swapped. The copy is made in a new directory
// (0700) under ~/.cache/xdpeng, which is removed before the program
// starts; the program sees its own executable as an open descriptor (3)
// and argv[0] "/proc/self/fd/3".
func (r *Runner) RunBinary(ctx context.Context, b Binary, args ...string) ([]byte, error) {
	if err := checkBinary(b); err != nil {
		return nil, err
	}
	shown := append([]string{b.Path}, args...)
	out, err := r.run(ctx, nil, binaryCommand(b, ":", args), shown)
	return out, r.binaryError(err, b)
}

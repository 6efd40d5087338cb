package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
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

// DefaultInstallPath is where Install puts b on the DUT when given no path:
// /tmp/xdpeng-<first 12 hex digits of its hash>. A build never overwrites a
// system binary, nor another build, and a later run finds it again (and
// so does CheckBinary). On a DUT whose /tmp is mounted noexec, install
// elsewhere: the binary would be there but not run (exit status 126).
func DefaultInstallPath(b Binary) string { return "/tmp/xdpeng-" + short(b.SHA256) }

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

// findScript prints, for each candidate (a path, or a name looked up in
// PATH), "xdpeng-binary HASH PATH" or "xdpeng-missing CANDIDATE"; it exits
// 98 when sha256sum is missing. Lines before the first marker (a noisy
// login shell) are ignored by the reader.
const findScript = `for p in "$@"; do
	case $p in
	*/*) r=$p ;;
	*) r=$(command -v "$p" 2>/dev/null) || r= ;;
	esac
	if [ -n "$r" ] && [ -f "$r" ] && [ -x "$r" ]; then
		h=$(sha256sum < "$r") || exit 98
		echo "xdpeng-binary ${h%% *} $r"
	else
		echo "xdpeng-missing $p"
	fi
done`

// RemoteBinary resolves path on the DUT (a name without '/' is looked up in
// the remote PATH; "" means DefaultName) and returns its SHA-256. A missing
// or non-executable file is ErrNotFound.
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
	return found[0], nil
}

// find runs findScript; a candidate not found gives a Binary with no Path.
func (r *Runner) find(ctx context.Context, candidates []string) ([]Binary, error) {
	for _, c := range candidates {
		if err := checkRemotePath(c); err != nil {
			return nil, err
		}
	}
	out, err := r.Run(ctx, append([]string{"sh", "-c", findScript, "sh"}, candidates...)...)
	if ee := (*ExitError)(nil); errors.As(err, &ee) && ee.Code == 98 {
		return nil, fmt.Errorf("on %s: sha256sum is missing (it is in coreutils or busybox): %w", r.Target, err)
	}
	if err != nil {
		return nil, err
	}
	var found []Binary
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "xdpeng-missing ") && len(found) < len(candidates) {
			found = append(found, Binary{})
		} else if rest, ok := strings.CutPrefix(line, "xdpeng-binary "); ok && len(found) < len(candidates) {
			hash, p, ok := strings.Cut(rest, " ")
			if !ok || len(hash) != sha256.Size*2 {
				return nil, fmt.Errorf("on %s: unexpected output of the binary lookup: %q", r.Target, line)
			}
			found = append(found, Binary{Path: p, SHA256: hash})
		}
	}
	if len(found) != len(candidates) {
		return nil, fmt.Errorf("on %s: the binary lookup printed %d results for %d paths: %q", r.Target, len(found), len(candidates), out)
	}
	return found, nil
}

func (r *Runner) notFound(candidates []string) error {
	var where []string
	for _, c := range candidates {
		if strings.Contains(c, "/") {
			where = append(where, c)
		} else {
			where = append(where, c+" in PATH")
		}
	}
	return fmt.Errorf("%w: %s has no executable %s", ErrNotFound, r.Target, strings.Join(where, " nor "))
}

// CheckBinary finds the DUT's xdpeng and checks that it is the same build
// as local. With path "", it looks for DefaultName in the DUT's PATH and
// then at DefaultInstallPath(local), where an earlier Install put it, and
// takes the first that matches. It returns the DUT's binary; ErrNotFound if
// there is none; a *MismatchError (ErrMismatch) naming both if it differs.
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
	for i := range found {
		if found[i].Path == "" {
			continue
		}
		if found[i].SHA256 == local.SHA256 {
			return found[i], nil
		}
		if first == nil {
			first = &found[i]
		}
	}
	if first == nil {
		return Binary{}, r.notFound(candidates)
	}
	return Binary{}, &MismatchError{Target: r.Target, Local: local, Remote: *first}
}

// installScript writes stdin to a temporary file beside $1, checks that
// its SHA-256 is $2, makes it executable and renames it to $1, so that $1
// is either the old file or the whole new one. Exit 96: the hash differs.
const installScript = `set -e
dst=$1
dir=$(dirname "$dst")
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
// DefaultInstallPath(local)), streaming it over ssh's stdin into a
// temporary file in the same directory, which is checked, made executable
// (0755) and renamed into place. It then looks the installed file up again
// and returns it; a hash that differs is a *MismatchError.
func (r *Runner) Install(ctx context.Context, local Binary, path string) (Binary, error) {
	if path == "" {
		path = DefaultInstallPath(local)
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
	if _, err := r.run(ctx, f, []string{"sh", "-c", installScript, "sh", path, local.SHA256}); err != nil {
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

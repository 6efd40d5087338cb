package remote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// safeDir makes a directory that passes the DUT's check of a binary's
// place (it and every directory above it owned by this user or root, none
// writable by group or others), and makes it the fake DUT's home. t.TempDir
// will not do: it is under /tmp, which every user may write. The
// directory is under this user's home, and removed when the test ends.
func safeDir(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("no home directory to make a safe directory in: %v", err)
	}
	d, err := os.MkdirTemp(home, ".xdpeng-test-")
	if err != nil {
		t.Skipf("cannot make a directory in the home directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	me := os.Getuid()
	for p := d; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		if (st.Uid != 0 && int(st.Uid) != me) || st.Mode&0o022 != 0 {
			t.Skipf("%s (uid %d, mode %o) is writable by others or another user's: every path under it is refused", p, st.Uid, st.Mode&0o7777)
		}
		if p == "/" {
			break
		}
	}
	t.Setenv("HOME", d)
	return d
}

// noRunDirs fails the test if a private copy was left in the cache
// directory of the fake DUT's home.
func noRunDirs(t *testing.T, home string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(home, CacheDir, "run.*"))
	if len(left) > 0 {
		t.Errorf("private copies left behind: %v", left)
	}
}

func TestBinaries(t *testing.T) {
	ctx := context.Background()
	dir := safeDir(t)
	r := fakeRunner(t)
	a := writeExe(t, dir, "a", "echo a")
	b := writeExe(t, dir, "b", "echo b")
	localA, err := HashFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(localA.SHA256) != 64 || localA.Path != a {
		t.Fatalf("HashFile = %+v", localA)
	}
	if _, err := HashFile(filepath.Join(dir, "none")); err == nil {
		t.Error("HashFile of a missing file: no error")
	}
	self, err := LocalBinary()
	if err != nil || self.SHA256 == "" {
		t.Fatalf("LocalBinary = %+v, %v", self, err)
	}
	if got := DefaultInstallPath(localA); got != ".cache/xdpeng/xdpeng-"+localA.SHA256[:12] {
		t.Errorf("DefaultInstallPath = %s", got)
	}

	got, err := r.RemoteBinary(ctx, a)
	if err != nil || got != localA {
		t.Errorf("RemoteBinary(%s) = %+v, %v; want %+v", a, got, err, localA)
	}
	if got, err := r.CheckBinary(ctx, localA, a); err != nil || got != localA {
		t.Errorf("CheckBinary of the same file = %+v, %v", got, err)
	}
	// A link to it is the file it names.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if got, err := r.CheckBinary(ctx, localA, link); err != nil || got != localA {
		t.Errorf("CheckBinary of a link = %+v, %v; want %+v", got, err, localA)
	}
	_, err = r.CheckBinary(ctx, localA, b)
	var me *MismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) || me.Remote.Path != b || me.Local != localA {
		t.Fatalf("CheckBinary of another file: %#v", err)
	}
	for _, part := range []string{b, a, localA.SHA256[:12], "install this one"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("mismatch message %q does not name %q", err, part)
		}
	}
	for _, p := range []string{filepath.Join(dir, "none"), dir, filepath.Join(dir, "plain")} {
		if p == filepath.Join(dir, "plain") {
			os.WriteFile(p, []byte("not executable"), 0o644)
		}
		_, err := r.CheckBinary(ctx, localA, p)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), p) {
			t.Errorf("CheckBinary(%s): %v, want ErrNotFound naming it", p, err)
		}
	}
	if _, err := r.RemoteBinary(ctx, "-x"); err == nil {
		t.Error("RemoteBinary(-x): no error")
	}

	// No path: DefaultName in PATH, then the default install path (in the
	// fake DUT's home, its working directory).
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	_, err = r.CheckBinary(ctx, localA, "")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "xdpeng in PATH nor ~/"+DefaultInstallPath(localA)) {
		t.Errorf("CheckBinary with no xdpeng: %v", err)
	}
	writeExe(t, bin, DefaultName, "echo b")
	_, err = r.CheckBinary(ctx, localA, "")
	if !errors.As(err, &me) || me.Remote.Path != filepath.Join(bin, DefaultName) {
		t.Errorf("CheckBinary with another xdpeng in PATH: %v", err)
	}
	os.MkdirAll(filepath.Join(dir, CacheDir), 0o700)
	installed := filepath.Join(dir, DefaultInstallPath(localA))
	writeExe(t, filepath.Dir(installed), filepath.Base(installed), "echo a")
	if got, err := r.CheckBinary(ctx, localA, ""); err != nil || got.Path != installed {
		t.Errorf("CheckBinary with another xdpeng in PATH and this one installed = %+v, %v; want %s", got, err, installed)
	}
	writeExe(t, bin, DefaultName, "echo a")
	if got, err := r.CheckBinary(ctx, localA, ""); err != nil || got.Path != filepath.Join(bin, DefaultName) {
		t.Errorf("CheckBinary with the same xdpeng in PATH = %+v, %v", got, err)
	}
}

// TestBinaryUnsafe: a binary that another user could change (group- or
// other-writable, in such a directory, or owned by another user) is
// refused by the look-up and by the run, and the run runs nothing.
func TestBinaryUnsafe(t *testing.T) {
	ctx := context.Background()
	home := safeDir(t)
	r := fakeRunner(t)
	ran := filepath.Join(home, "ran")
	type planted struct {
		name    string
		culprit func(bin string) string // what the error names
		plant   func(t *testing.T, bin string)
	}
	cases := []planted{
		{"group-writable file", func(bin string) string { return bin }, func(t *testing.T, bin string) { os.Chmod(bin, 0o775) }},
		{"world-writable file", func(bin string) string { return bin }, func(t *testing.T, bin string) { os.Chmod(bin, 0o757) }},
		{"group-writable directory", filepath.Dir, func(t *testing.T, bin string) { os.Chmod(filepath.Dir(bin), 0o775) }},
		{"sticky world-writable directory", filepath.Dir, func(t *testing.T, bin string) { os.Chmod(filepath.Dir(bin), 0o1777) }},
	}
	if os.Getuid() == 0 {
		// nobody (65534) owns the file: the tests run as root, who may
		// give it away.
		cases = append(cases,
			planted{"file of another user", func(bin string) string { return bin }, func(t *testing.T, bin string) {
				if err := os.Chown(bin, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}},
			planted{"directory of another user", filepath.Dir, func(t *testing.T, bin string) {
				if err := os.Chown(filepath.Dir(bin), 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(home, "d"+string(rune('0'+i)))
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			bin := writeExe(t, d, "xdpeng", "touch "+ran)
			local, err := HashFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			tc.plant(t, bin)
			var ue *UnsafeError
			_, err = r.CheckBinary(ctx, local, bin)
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) || ue.Path != bin || ue.Culprit != tc.culprit(bin) {
				t.Errorf("CheckBinary: %v, want an UnsafeError naming %s", err, tc.culprit(bin))
			}
			_, err = r.RunBinary(ctx, local, "run")
			if !errors.As(err, &ue) || ue.Culprit != tc.culprit(bin) {
				t.Errorf("RunBinary: %v, want an UnsafeError naming %s", err, tc.culprit(bin))
			} else {
				t.Logf("refused: %v", err)
				for _, part := range []string{bin, tc.culprit(bin), ue.Mode, "owned by " + ue.Owner, "not be writable by group or others"} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("message %q does not name %q", err, part)
					}
				}
			}
			if _, err := r.StartBinary(ctx, local, []string{"run"}, time.Second, nil); !errors.As(err, &ue) {
				t.Errorf("StartBinary: %v, want an UnsafeError", err)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the refused binary ran")
			}
			os.Chmod(d, 0o755)
		})
	}
	noRunDirs(t, home)
}

func TestRunBinary(t *testing.T) {
	ctx := context.Background()
	home := safeDir(t)
	r := fakeRunner(t)
	bin := writeExe(t, home, "xdpeng", `printf '%s\n' "$0" "$@"; ls -l /proc/$$/fd/3 >&2`)
	b, err := HashFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.RunBinary(ctx, b, "a b", "$HOME", "it's")
	if err != nil {
		t.Fatal(err)
	}
	// A script's interpreter gets the path it was executed by.
	if got, want := string(out), "/proc/self/fd/3\na b\n$HOME\nit's\n"; got != want {
		t.Errorf("RunBinary printed %q, want %q", got, want)
	}
	noRunDirs(t, home)
	if fi, err := os.Stat(filepath.Join(home, CacheDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v, %v; want it made 0700", fi, err)
	}

	// Not the build asked for: refused at the run, not run.
	other := b
	other.SHA256 = strings.Repeat("ab", 32)
	_, err = r.RunBinary(ctx, other, "x")
	var me *MismatchError
	if !errors.As(err, &me) || !me.Changed || me.Remote.SHA256 != b.SHA256 {
		t.Errorf("RunBinary of another hash: %v, want a MismatchError", err)
	}
	if _, err := r.RunBinary(ctx, Binary{Path: bin}); err == nil {
		t.Error("RunBinary with no hash: no error")
	}
	if _, err := r.RunBinary(ctx, Binary{Path: filepath.Join(home, "none"), SHA256: b.SHA256}); !errors.Is(err, ErrNotFound) {
		t.Errorf("RunBinary of a missing file: %v, want ErrNotFound", err)
	}
	// Under a umask that would make a plain copy unexecutable.
	masked := fakeRunner(t)
	masked.SSH = []string{"sh", "-c", "umask 177; " + fakeSSH, "fakessh"}
	out, err = masked.RunBinary(ctx, b, "masked")
	if err != nil || !strings.HasSuffix(string(out), "masked\n") {
		t.Errorf("RunBinary: %q, %v", out, err)
	}
	plain := writeExe(t, home, "plain", "echo plain")
	os.Chmod(plain, 0o644)
	if _, err := r.RunBinary(ctx, mustHash(t, plain)); !errors.Is(err, ErrNotFound) {
		t.Errorf("RunBinary of a file that is not executable: %v, want ErrNotFound", err)
	}
	noRunDirs(t, home)
}

// TestBinarySwap: a file swapped after the look-up is refused by the run;
// and while another file is swapped in and out of the path as fast as
// renames go, every run runs the build or nothing, never the other file:
// what runs is the copy that was hashed.
func TestBinarySwap(t *testing.T) {
	ctx := context.Background()
	home := safeDir(t)
	r := fakeRunner(t)
	evilRan := filepath.Join(home, "evil-ran")
	good := []byte("#!/bin/sh\necho good\n")
	evil := []byte("#!/bin/sh\ntouch " + evilRan + "\necho evil\n")
	bin := filepath.Join(home, "xdpeng")
	if err := os.WriteFile(bin, good, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := r.CheckBinary(ctx, mustHash(t, bin), bin)
	if err != nil {
		t.Fatal(err)
	}
	// Swapped between the look-up and the run.
	put(t, bin, evil)
	var me *MismatchError
	if _, err := r.RunBinary(ctx, b); !errors.As(err, &me) || !me.Changed {
		t.Errorf("run after a swap: %v, want a MismatchError", err)
	}
	if _, err := r.StartBinary(ctx, b, nil, time.Second, nil); !errors.As(err, &me) {
		t.Errorf("start after a swap: %v, want a MismatchError", err)
	}
	if _, err := os.Stat(evilRan); err == nil {
		t.Fatal("the swapped-in file ran")
	}

	// Swapped all the time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				put(t, bin, good)
			} else {
				put(t, bin, evil)
			}
		}
	})
	var ran, refused int
	for range 40 {
		out, err := r.RunBinary(ctx, b)
		switch {
		case err == nil && string(out) == "good\n":
			ran++
		case errors.As(err, &me), err != nil && strings.Contains(err.Error(), "could not make a private copy"):
			// The hash differs, or cp saw the file replaced under it.
			refused++
		default:
			t.Errorf("run while swapping: %q, %v", out, err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("while swapping: %d runs of the build, %d refused", ran, refused)
	if _, err := os.Stat(evilRan); err == nil {
		t.Fatal("the swapped-in file ran")
	}
	noRunDirs(t, home)
}

func mustHash(t *testing.T, p string) Binary {
	t.Helper()
	b, err := HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// put replaces path with a file of contents, in one rename.
func put(t *testing.T, path string, contents []byte) {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, contents, 0o755); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Error(err)
	}
}

func TestInstall(t *testing.T) {
	ctx := context.Background()
	dir := safeDir(t)
	r := fakeRunner(t)
	local, err := HashFile(writeExe(t, dir, "local", "echo local"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dut", "xdpeng")
	if err := os.Mkdir(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	writeExe(t, filepath.Dir(dst), "xdpeng", "echo old")
	got, err := r.Install(ctx, local, dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != dst || got.SHA256 != local.SHA256 {
		t.Errorf("Install = %+v, want %s with %s", got, dst, local.SHA256)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("installed file: %v, %v", fi, err)
	}
	if out, err := exec.Command(dst).Output(); err != nil || string(out) != "local\n" {
		t.Errorf("installed file runs: %q, %v", out, err)
	}
	if _, err := r.CheckBinary(ctx, local, dst); err != nil {
		t.Errorf("CheckBinary after Install: %v", err)
	}

	// The default place: the home's cache directory, made 0700.
	got, err = r.Install(ctx, local, "")
	if want := filepath.Join(dir, DefaultInstallPath(local)); err != nil || got.Path != want {
		t.Errorf("Install to the default place = %+v, %v; want %s", got, err, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, CacheDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v, %v; want it made 0700", fi, err)
	}
	if got, err := r.CheckBinary(ctx, local, ""); err != nil || got.Path != filepath.Join(dir, DefaultInstallPath(local)) {
		t.Errorf("CheckBinary after Install to the default place = %+v, %v", got, err)
	}

	// A directory another user could write is refused, and nothing is
	// written there.
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	var ue *UnsafeError
	if _, err := r.Install(ctx, local, filepath.Join(open, "xdpeng")); !errors.As(err, &ue) || ue.Culprit != open {
		t.Errorf("Install into a world-writable directory: %v, want an UnsafeError naming it", err)
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Errorf("Install into a world-writable directory wrote %v", entries)
	}

	// A copy that arrives different is not put in place.
	wrong := local
	wrong.SHA256 = strings.Repeat("0", 64)
	_, err = r.Install(ctx, wrong, filepath.Join(dir, "dut", "other"))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 96 || !strings.Contains(err.Error(), "not "+wrong.SHA256) {
		t.Errorf("Install with a wrong hash: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "dut")); len(entries) != 1 {
		t.Errorf("Install with a wrong hash left files: %v", entries)
	}
	if _, err := r.Install(ctx, local, filepath.Join(dir, "missing-dir", "xdpeng")); err == nil {
		t.Error("Install into a missing directory: no error")
	}
}

package selftest

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/xdpeng/xdpeng/internal/lab/guardproc"
)

// A guard puts back the ring sizes a test changes if the process is killed
// before the test can (package guardproc): before a test changes a
// device's rings it tells the guard the sizes to put back, keyed
// "rings/NS/INDEX" (NS "-" for the caller's namespace), valued "NAME RX
// TX"; once it has put them back itself it says so.
type guard struct{ g guardproc.Guard }

// guardEnv, set in a process's environment, makes GuardMain run the guard.
const guardEnv = "XDPENG_SELFTEST_GUARD"

// GuardMain runs the guard and exits if this process was started as one,
// and returns at once otherwise. A program whose commands call Run calls
// GuardMain first in main: Run starts the guard as the program itself.
func GuardMain() {
	guardproc.Main(guardEnv, "the ring sizes of a killed selftest", func(key, value string) error {
		rr, err := parseRingRestore(key, value)
		if err != nil {
			return err
		}
		return setRingsByIndex(rr)
	})
}

func newGuard() *guard { return &guard{guardproc.Guard{Env: guardEnv, What: "ring sizes"}} }

// ringRestore is what the guard puts back on one device.
type ringRestore struct {
	ns, name string
	index    int
	rx, tx   uint32
}

func ringKey(e End) string { return "rings/" + nsField(e) + "/" + strconv.Itoa(e.Index) }

// parseRingRestore reads a key and a value of the guard's.
func parseRingRestore(key, value string) (ringRestore, error) {
	k := strings.Split(key, "/")
	v := strings.Fields(value)
	bad := fmt.Errorf("%q %q: not a device and its ring sizes", key, value)
	if len(k) != 3 || k[0] != "rings" || len(v) != 3 {
		return ringRestore{}, bad
	}
	index, err1 := strconv.Atoi(k[2])
	rx, err2 := strconv.ParseUint(v[1], 10, 32)
	tx, err3 := strconv.ParseUint(v[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return ringRestore{}, bad
	}
	return ringRestore{ns: k[1], index: index, name: v[0], rx: uint32(rx), tx: uint32(tx)}, nil
}

// setRingsByIndex sets the rings of the device with rr's index in rr's
// namespace (its name may have changed since).
func setRingsByIndex(rr ringRestore) error {
	e := End{Name: rr.name, Index: rr.index}
	if rr.ns != "-" {
		e.NS = rr.ns
	}
	if err := e.do(func() error {
		ifi, err := net.InterfaceByIndex(rr.index)
		if err != nil {
			return fmt.Errorf("device %s (index %d) to put its rings back to rx %d tx %d: %w", rr.name, rr.index, rr.rx, rr.tx, err)
		}
		e.Name = ifi.Name
		return nil
	}); err != nil {
		return err
	}
	return setRings(e, rr.rx, rr.tx)
}

// rings tells the guard e's own ring sizes, before a test changes them.
func (g *guard) rings(e End, rx, tx uint32) error {
	return g.g.Change(ringKey(e), fmt.Sprintf("%s %d %d", e.Name, rx, tx))
}

// restored tells the guard the test put e's rings back.
func (g *guard) restored(e End) error { return g.g.Restored(ringKey(e)) }

// close ends the guard's input and waits for it to exit.
func (g *guard) close() error { return g.g.Close() }

func nsField(e End) string {
	if e.NS == "" {
		return "-"
	}
	return e.NS
}

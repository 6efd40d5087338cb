package main

// --cpus pairs with the queue list in the order the user wrote it, and the
// worker threads really run where the summary says.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// workerAffinity reads the CPUs each worker thread of pid may run on, by
// thread name ("xdpeng-q0" -> Cpus_allowed_list), from /proc/PID/task.
func workerAffinity(pid int) (map[string]string, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, task := range tasks {
		comm, err := os.ReadFile(filepath.Join(task, "comm"))
		if err != nil {
			continue // the thread has ended
		}
		name := strings.TrimSpace(string(comm))
		if !strings.HasPrefix(name, "xdpeng-q") {
			continue
		}
		status, err := os.ReadFile(filepath.Join(task, "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[name] = strings.TrimSpace(v)
			}
		}
	}
	return out, nil
}

// TestCLICPUOrder runs `rxdrop -q 0-1 --cpus 1,0 --json`: queue 0 must be
// on CPU 1 and queue 1 on CPU 0, in the summary and in the affinity of the
// worker threads while they run.
func TestCLICPUOrder(t *testing.T) {
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 {
		privtest.Unsupported(t, "needs 2 CPUs, this process may use %s", cpuset.Format(online))
	}
	a, b := online[0], online[1]
	bed := testbedtest.New(t, 2, 1)
	bin := buildCLI(t)
	p := startIn(t, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-q", "0-1", "--cpus", fmt.Sprintf("%d,%d", b, a), "--json")
	want := map[string]string{"xdpeng-q0": fmt.Sprint(b), "xdpeng-q1": fmt.Sprint(a)}
	var got map[string]string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = workerAffinity(p.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if len(got) == len(want) {
			break
		}
	}
	p.signal(t, syscall.SIGINT)
	r := p.wait(t)
	if r.code != 0 {
		t.Fatalf("rxdrop:\n%s", r)
	}
	for name, cpu := range want {
		if got[name] != cpu {
			t.Errorf("thread %s may run on CPUs %q, want %s (all worker threads: %v)", name, got[name], cpu, got)
		}
	}
	var s xskSummary
	summaryLine(t, r.stdout, &s)
	if len(s.PerQueue) != 2 {
		t.Fatalf("per_queue has %d entries, want 2: %s", len(s.PerQueue), r.stdout)
	}
	for i, cpu := range []int{b, a} {
		if q := s.PerQueue[i]; q.Queue != i || q.CPU != cpu {
			t.Errorf("per_queue[%d] is queue %d on CPU %d, want queue %d on CPU %d", i, q.Queue, q.CPU, i, cpu)
		}
	}
}

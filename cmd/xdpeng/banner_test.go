package main

import "testing"

func TestQueuesOnCPUs(t *testing.T) {
	for _, c := range []struct {
		queues, cpus []int
		want         string
	}{
		{[]int{0}, []int{1}, "queue 0 on CPU 1"},
		{[]int{0, 1}, []int{1, 0}, "queues 0-1 on CPUs 1,0"},
		{[]int{0, 2}, []int{1, 3}, "queues 0,2 on CPUs 1,3"},
	} {
		if got := queuesOnCPUs(c.queues, c.cpus); got != c.want {
			t.Errorf("queuesOnCPUs(%v, %v) = %q, want %q", c.queues, c.cpus, got, c.want)
		}
	}
}

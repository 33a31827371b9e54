package report

import (
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

// workersCell is baseCell run by three loadgen workers, each on a CPU of
// its own, none near its limits.
func workersCell() Cell {
	c := baseCell()
	for i := range 3 {
		c.Workers = append(c.Workers, manifest.Worker{Index: i, Status: manifest.WorkerOK, Concurrency: 3, Requests: 3333,
			Loadgen: &manifest.LoadgenCPU{CapacityCores: 1, CPUSeconds: 3, RunDelaySeconds: 0.1}})
		c.Contention = append(c.Contention, RoleContention{Role: manifest.RoleLoadgen, Worker: &i, CPUs: []string{"2", "3", "4"}[i]})
	}
	return c
}

// A cell several loadgens ran is judged once, on the merge, and is
// loadgen_bound when any worker is; the reason names the worker.
func TestJudgeWorkers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mut  func(*Cell)
		want []string // the loadgen_bound reasons
	}{
		{"all within their limits", func(*Cell) {}, nil},
		{"one worker out of CPU", func(c *Cell) { c.Workers[1].Loadgen.CPUSeconds = 9.5 },
			[]string{"loadgen worker 1: loadgen CPU mean 0.95 of 1 cores of capacity (95 %, >= 90 %)"}},
		{"one worker throttled", func(c *Cell) { c.Workers[2].Loadgen.Periods, c.Workers[2].Loadgen.ThrottledPeriods = 100, 30 },
			[]string{"loadgen worker 2: loadgen cgroup throttled in 30.0 % of its CPU periods"}},
		{"one worker behind its open-loop schedule", func(c *Cell) {
			c.TargetRateRPS = 1000
			for i := range c.Workers {
				w := &c.Workers[i]
				w.Rate, w.Scheduled, w.Sent = 333.3, 3333, 3333
			}
			w := &c.Workers[0]
			w.Sent, w.Missed, w.Requests = 3000, 333, 3000
		}, []string{"loadgen worker 0: open loop sent 3000 of 3333 scheduled requests (90.0 %", "loadgen worker 0: open loop missed 333 of 3333 scheduled sends"}},
		{"three workers that share one CPU and used it up", func(c *Cell) {
			for i := range c.Contention {
				c.Contention[i].CPUs = "0"
				c.Workers[i].Loadgen.CPUSeconds = 3.1
			}
		}, []string{"loadgen workers 0, 1 and 2 share CPU 0: together 0.93 of its 1 cores on average (93 %, >= 90 %)"}},
		{"workers of two hosts do not share a CPU", func(c *Cell) {
			for i := range c.Contention {
				c.Contention[i].CPUs = "0"
				c.Workers[i].Loadgen.CPUSeconds = 3.1
			}
			c.Contention[2].Host = "other"
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := workersCell()
			tc.mut(&c)
			Judge(&c, DefaultThresholds, false)
			var got []string
			for _, f := range c.Validity.Flags {
				if f.Code == FlagLoadgenBound {
					got = append(got, f.Reason)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("loadgen_bound %q, want %q (flags %+v)", got, tc.want, c.Validity.Flags)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("reason %q lacks %q", got[i], w)
				}
			}
			if len(tc.want) > 0 && c.Validity.Verdict != Invalid {
				t.Errorf("verdict %s", c.Validity.Verdict)
			}
		})
	}
}

// A starved worker's contention names it.
func TestContendedWorkerIsNamed(t *testing.T) {
	t.Parallel()
	c := workersCell()
	c.Contention[1].ForeignShare, c.Contention[1].RunDelayPerS = 0.5, 0.3
	Judge(&c, DefaultThresholds, false)
	for _, f := range c.Validity.Flags {
		if f.Code == FlagContended && strings.HasPrefix(f.Reason, "loadgen worker 1: 50 % of its CPU 3's time went to other processes") {
			return
		}
	}
	t.Errorf("flags %+v, want contended naming loadgen worker 1", c.Validity.Flags)
}

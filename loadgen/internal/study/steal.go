package study

import (
	"context"
	"fmt"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
)

// A study's sample is a measurement of the lab, not of the host's
// neighbours: a hypervisor that steals the CPUs a sample runs on for a
// second or more (bursts of 30-80 % lasting seconds are seen on shared
// hosts) moves a short sample's ceiling, knee or rate by as much, and a
// check judged on it would fail for the host's sake. RetakeOnSteal runs a
// sample while watching the steal of its CPUs and runs it again, after a
// quiet gap, when some second of it lost manifest.StealStarvedShare or
// more; the last attempt stands whatever it lost, with its worst second
// recorded, and every retake is logged and noted in the record.

const StealAttempts = 3 // a sample is run at most this often

// RetakeOnSteal runs sample until an attempt's worst second of steal on
// cpus (nil: every CPU) is under manifest.StealStarvedShare, at most
// StealAttempts times, waiting gap before each retake. It returns the
// worst steal share of the attempt that stands (0 when /proc/stat cannot
// be read: steal is then not judged) and the error of that attempt.
func RetakeOnSteal(ctx context.Context, e *Env, what string, cpus []int, gap time.Duration, sample func() error) (float64, error) {
	for attempt := 1; ; attempt++ {
		w := cputime.WatchSteal(cpus)
		err := sample()
		worst, werr := w.Stop()
		if werr != nil {
			e.Log.Warn("steal not watched", "sample", what, "err", werr)
			return 0, err
		}
		if err != nil || worst < manifest.StealStarvedShare || attempt == StealAttempts || ctx.Err() != nil {
			if err == nil && worst >= manifest.StealStarvedShare {
				e.Note("%s: every one of %d attempts lost %.0f %% or more of a second of CPUs %s to the hypervisor; the last stands (worst second %.0f %%).",
					what, attempt, 100*manifest.StealStarvedShare, CPUsOrAll(cputime.FormatList(cpus)), 100*worst)
			}
			return worst, err
		}
		e.Log.Warn("sample retaken: the hypervisor stole its CPUs", "sample", what, "attempt", attempt,
			"worst_second_steal_share", fmt.Sprintf("%.2f", worst), "limit", manifest.StealStarvedShare)
		e.Note("%s: attempt %d retaken: the hypervisor stole %.0f %% of a second of CPUs %s (>= %.0f %%).",
			what, attempt, 100*worst, CPUsOrAll(cputime.FormatList(cpus)), 100*manifest.StealStarvedShare)
		select {
		case <-time.After(gap):
		case <-ctx.Done():
		}
	}
}

// CPUsOrAll is a CPU list for the record's words: "all" for none.
func CPUsOrAll(s string) string {
	if s == "" {
		return "all"
	}
	return s
}

package study

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
)

// A study's sample is a measurement of the lab, not of the host's
// neighbours: a hypervisor that steals the CPUs a sample runs on for a
// second or more (bursts of 30-80 % lasting seconds are seen on shared
// hosts) moves a short sample's ceiling, knee or rate by as much, and a
// check judged on it would fail for the host's sake. retakeOnSteal runs a
// sample while watching the steal of its CPUs and runs it again, after a
// quiet gap, when some second of it lost manifest.StealStarvedShare or
// more; the last attempt stands whatever it lost, with its worst second
// recorded, and every retake is logged and noted in the record.

const (
	stealAttempts = 3                      // a sample is run at most this often
	stealSpan     = time.Second            // the steal share is judged over any span this long
	stealEvery    = 100 * time.Millisecond // /proc/stat is read this often during a sample
)

// retakeOnSteal runs sample until an attempt's worst second of steal on
// cpus (nil: every CPU) is under manifest.StealStarvedShare, at most
// stealAttempts times, waiting gap before each retake. It returns the
// worst steal share of the attempt that stands (0 when /proc/stat cannot
// be read: steal is then not judged) and the error of that attempt.
func retakeOnSteal(ctx context.Context, e *Env, what string, cpus []int, gap time.Duration, sample func() error) (float64, error) {
	for attempt := 1; ; attempt++ {
		w := watchSteal(cpus)
		err := sample()
		worst, werr := w.stop()
		if werr != nil {
			e.Log.Warn("steal not watched", "sample", what, "err", werr)
			return 0, err
		}
		if err != nil || worst < manifest.StealStarvedShare || attempt == stealAttempts || ctx.Err() != nil {
			if err == nil && worst >= manifest.StealStarvedShare {
				e.Note("%s: every one of %d attempts lost %.0f %% or more of a second of CPUs %s to the hypervisor; the last stands (worst second %.0f %%).",
					what, attempt, 100*manifest.StealStarvedShare, cpuList(cputime.FormatList(cpus)), 100*worst)
			}
			return worst, err
		}
		e.Log.Warn("sample retaken: the hypervisor stole its CPUs", "sample", what, "attempt", attempt,
			"worst_second_steal_share", fmt.Sprintf("%.2f", worst), "limit", manifest.StealStarvedShare)
		e.Note("%s: attempt %d retaken: the hypervisor stole %.0f %% of a second of CPUs %s (>= %.0f %%).",
			what, attempt, 100*worst, cpuList(cputime.FormatList(cpus)), 100*manifest.StealStarvedShare)
		select {
		case <-time.After(gap):
		case <-ctx.Done():
		}
	}
}

// stealWatch reads /proc/stat every stealEvery until stopped and keeps the
// worst steal share of its CPUs over any stealSpan.
type stealWatch struct {
	cpus  []int
	quit  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	worst float64
	err   error
}

// stealReading is one reading of /proc/stat.
type stealReading struct {
	at   time.Time
	stat cputime.Stat
}

func watchSteal(cpus []int) *stealWatch {
	w := &stealWatch{quit: make(chan struct{}), done: make(chan struct{})}
	first, err := readSteal()
	if err != nil {
		w.err = err
		close(w.done)
		return w
	}
	w.cpus = cpus
	if len(w.cpus) == 0 {
		w.cpus = slices.Sorted(maps.Keys(first.stat))
	}
	go w.loop(first)
	return w
}

func (w *stealWatch) loop(first stealReading) {
	defer close(w.done)
	t := time.NewTicker(stealEvery)
	defer t.Stop()
	readings := []stealReading{first}
	for stopping := false; !stopping; {
		select {
		case <-w.quit:
			stopping = true // one last reading, up to the stop
		case <-t.C:
		}
		r, err := readSteal()
		if err == nil {
			readings, err = w.judge(readings, r)
		}
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
	}
}

// judge adds r to readings, takes the steal share of the span from the
// latest reading at least stealSpan older than r, and returns the readings
// still needed.
func (w *stealWatch) judge(readings []stealReading, r stealReading) ([]stealReading, error) {
	readings = append(readings, r)
	i := -1
	for j, old := range readings {
		if r.at.Sub(old.at) >= stealSpan {
			i = j
		}
	}
	if i < 0 {
		return readings, nil
	}
	d, err := r.stat.Since(readings[i].stat, w.cpus)
	if err != nil {
		return nil, err
	}
	share := stealShare(d.Steal, r.at.Sub(readings[i].at), len(w.cpus))
	w.mu.Lock()
	w.worst = max(w.worst, share)
	w.mu.Unlock()
	return readings[i:], nil
}

// stealShare is steal over n CPUs' capacity in wall.
func stealShare(steal, wall time.Duration, n int) float64 {
	if wall <= 0 || n <= 0 {
		return 0
	}
	return steal.Seconds() / (wall.Seconds() * float64(n))
}

func readSteal() (stealReading, error) {
	st, err := cputime.ReadStat("/proc")
	return stealReading{at: time.Now(), stat: st}, err
}

// stop ends the watch: the worst share over any stealSpan, or why steal
// could not be read.
func (w *stealWatch) stop() (float64, error) {
	select {
	case <-w.done:
	default:
		close(w.quit)
		<-w.done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.worst, w.err
}

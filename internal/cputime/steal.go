package cputime

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// The hypervisor's steal, judged per second: a burst that takes a CPU for
// a few seconds owns a short measurement's tail while its average over
// the whole measurement stays small, so the worst share over any second
// is what says whether a measurement was the host's or the lab's. The
// same watch times its own wake-ups: a wake-up that came late means the
// watching process could not run (the host stalled it, whatever took the
// CPU), which steal alone does not show.
const (
	StealSpan  = time.Second            // the steal share is judged over any span this long
	StealEvery = 100 * time.Millisecond // /proc/stat is read this often during a watch
	StallEvery = 10 * time.Millisecond  // the watch wakes this often: a stall is timed to within this
)

// StealWatch reads /proc/stat every StealEvery until stopped and keeps the
// worst steal share of its CPUs over any StealSpan, and the longest one of
// its wake-ups (every StallEvery) came late (its stall).
type StealWatch struct {
	cpus    []int
	quit    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	worst   float64
	stall   time.Duration
	stallAt time.Time
	err     error
}

// stealReading is one reading of /proc/stat.
type stealReading struct {
	at   time.Time
	stat Stat
}

// WatchSteal starts watching the steal of cpus (nil: every CPU) until
// Stop; it never slows the caller (its own goroutine reads /proc/stat).
func WatchSteal(cpus []int) *StealWatch {
	w := &StealWatch{quit: make(chan struct{}), done: make(chan struct{})}
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

func (w *StealWatch) loop(first stealReading) {
	defer close(w.done)
	t := time.NewTicker(StallEvery)
	defer t.Stop()
	readings := []stealReading{first}
	for stopping := false; !stopping; {
		select {
		case <-w.quit:
			stopping = true // one last reading, up to the stop
		case due := <-t.C:
			// The tick waiting in the channel is the first one the
			// watch missed: how late it is read is how long the process
			// could not run, to within StallEvery.
			if late := time.Since(due); late > w.stall {
				w.mu.Lock()
				w.stall, w.stallAt = late, due
				w.mu.Unlock()
			}
			if time.Since(readings[len(readings)-1].at) < StealEvery-StallEvery/2 {
				continue
			}
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
// latest reading at least StealSpan older than r, and returns the readings
// still needed.
func (w *StealWatch) judge(readings []stealReading, r stealReading) ([]stealReading, error) {
	readings = append(readings, r)
	i := -1
	for j, old := range readings {
		if r.at.Sub(old.at) >= StealSpan {
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
	share := StealShare(d.Steal, r.at.Sub(readings[i].at), len(w.cpus))
	w.mu.Lock()
	w.worst = max(w.worst, share)
	w.mu.Unlock()
	return readings[i:], nil
}

// stealShare is steal over n CPUs' capacity in wall.
func StealShare(steal, wall time.Duration, n int) float64 {
	if wall <= 0 || n <= 0 {
		return 0
	}
	return steal.Seconds() / (wall.Seconds() * float64(n))
}

func readSteal() (stealReading, error) {
	st, err := ReadStat("/proc")
	return stealReading{at: time.Now(), stat: st}, err
}

// Stop ends the watch: the worst share over any StealSpan, or why steal
// could not be read.
func (w *StealWatch) Stop() (float64, error) {
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

// Stall is, after Stop, the longest the watch's wake-up came late and
// when it was due: how long the watching process could not run. Go's
// scheduler alone delays a wake-up by up to a few milliseconds on a busy
// process; a stall of tens of milliseconds is the host's.
func (w *StealWatch) Stall() (time.Duration, time.Time) {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stall, w.stallAt
}

package cputime

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Wait sums the run-queue wait of a set of threads: the second field of
// each one's schedstat, the time it was runnable but waiting for a CPU.
// A thread's counter is remembered by thread id; when the thread is gone
// (or its id was reused by a newer thread with a smaller counter) its last
// value moves to the gone total, so Total never decreases. A thread that
// exits between two readings therefore loses what it waited since the
// first: Exited counts such threads so a reader can say so. The zero value
// is not ready: use NewWait.
type Wait struct {
	last   map[int]int64 // tid -> ns at the last reading
	gone   int64         // ns of threads no longer listed
	exited int           // threads listed once and gone since
}

// NewWait is an empty sum.
func NewWait() *Wait { return &Wait{last: map[int]int64{}} }

// ReadTaskDir reads every thread listed in a /proc/<pid>/task directory.
func (w *Wait) ReadTaskDir(taskDir string) error {
	ents, err := os.ReadDir(taskDir)
	if err != nil {
		return err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return w.read(func(tid int) string { return filepath.Join(taskDir, strconv.Itoa(tid), "schedstat") }, tids)
}

// ReadThreads reads <proc>/<tid>/schedstat of each thread id (a cgroup's
// tasks).
func (w *Wait) ReadThreads(proc string, tids []int) error {
	return w.read(func(tid int) string { return filepath.Join(proc, strconv.Itoa(tid), "schedstat") }, tids)
}

func (w *Wait) read(file func(tid int) string, tids []int) error {
	seen := make(map[int]int64, len(tids))
	var firstErr error
	for _, tid := range tids {
		b, err := os.ReadFile(file(tid))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // exited while listed
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			if prev, ok := w.last[tid]; ok {
				seen[tid] = prev // unread this time, not gone
			}
			continue
		}
		if ns, ok := parseWait(b); ok {
			seen[tid] = ns
		}
	}
	w.update(seen)
	return firstErr
}

// parseWait reads "on-CPU ns, run-queue wait ns, timeslices".
func parseWait(b []byte) (int64, bool) {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	return ns, err == nil && ns >= 0
}

func (w *Wait) update(seen map[int]int64) {
	for tid, ns := range seen {
		if prev, ok := w.last[tid]; ok && ns < prev { // a new thread under an old id
			w.gone += prev
			w.exited++
		}
		w.last[tid] = ns
	}
	for tid, ns := range w.last {
		if _, ok := seen[tid]; !ok {
			w.gone += ns
			w.exited++
			delete(w.last, tid)
		}
	}
}

// Total is the wait summed over every thread read so far, gone ones
// included.
func (w *Wait) Total() time.Duration {
	t := w.gone
	for _, ns := range w.last {
		t += ns
	}
	return time.Duration(t)
}

// Threads is how many threads the last reading found.
func (w *Wait) Threads() int { return len(w.last) }

// Exited is how many threads read once were gone at a later reading.
func (w *Wait) Exited() int { return w.exited }

package placement

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"proxybench/internal/cputime"
)

// Pin confines this process to cpus: it sets the affinity of every thread
// (/proc/self/task; a thread created later inherits its creator's), sets
// GOMAXPROCS to their number, and checks with sched_getaffinity that every
// thread took it. The Go runtime may start a thread while the list is
// walked, so the walk repeats until a pass finds every thread pinned.
func Pin(cpus CPUSet) error {
	if len(cpus) == 0 {
		return errors.New("pin: no CPUs given")
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	runtime.GOMAXPROCS(len(cpus))
	for range 10 {
		tids, err := threads()
		if err != nil {
			return fmt.Errorf("pin: %w", err)
		}
		changed := false
		for _, tid := range tids {
			var got unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &got); err != nil {
				continue // the thread exited
			}
			if got == set {
				continue
			}
			changed = true
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pin thread %d to CPUs %s: %w", tid, cpus, err)
			}
		}
		if !changed {
			return nil
		}
	}
	a, err := SelfAffinity()
	if err != nil {
		return fmt.Errorf("pin to CPUs %s: %w", cpus, err)
	}
	if !a.CPUs.Equal(cpus) {
		return fmt.Errorf("pin to CPUs %s: the threads run on %s", cpus, a.CPUs)
	}
	return nil
}

// Affinity is what this process's threads may run on, read back.
type Affinity struct {
	CPUs       CPUSet // the mask every thread shares
	Threads    int    // threads read
	GOMAXPROCS int
}

// SelfAffinity reads the affinity of every thread of this process; an
// error when two threads differ, naming both masks.
func SelfAffinity() (Affinity, error) {
	a := Affinity{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	tids, err := threads()
	if err != nil {
		return a, err
	}
	first := true
	for _, tid := range tids {
		l, err := cputime.Affinity(tid)
		if err != nil {
			continue // the thread exited
		}
		cs := CPUSet(l)
		a.Threads++
		if first {
			a.CPUs, first = cs, false
			continue
		}
		if !cs.Equal(a.CPUs) {
			return a, fmt.Errorf("thread %d may run on CPUs %s, another on %s", tid, cs, a.CPUs)
		}
	}
	if a.Threads == 0 {
		return a, errors.New("no thread of this process could be read")
	}
	return a, nil
}

// threads lists this process's thread ids.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	slices.Sort(out)
	return out, nil
}

//go:build !linux

package placement

import (
	"errors"
	"runtime"
)

// Pin is Linux only: elsewhere a placement with a loadgen cpuset is refused.
func Pin(cpus CPUSet) error {
	return errors.New("pinning the loadgen to CPUs needs Linux (sched_setaffinity): use placement none")
}

// Affinity is what this process's threads may run on, read back.
type Affinity struct {
	CPUs       CPUSet
	Threads    int
	GOMAXPROCS int
}

// SelfAffinity knows only GOMAXPROCS outside Linux.
func SelfAffinity() (Affinity, error) {
	return Affinity{GOMAXPROCS: runtime.GOMAXPROCS(0)}, errors.ErrUnsupported
}

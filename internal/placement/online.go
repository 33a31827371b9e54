package placement

import (
	"fmt"
	"os"
	"runtime"
)

// onlineFile is where Linux lists the online CPUs.
const onlineFile = "/sys/devices/system/cpu/online"

// Online is the host's online CPUs (/sys/devices/system/cpu/online). Where
// that file cannot be read (not Linux) it falls back to CPUs 0..NumCPU-1.
// It is the host's, not this process's: a loadgen started under taskset
// still places the containers over every CPU.
func Online() (CPUSet, error) {
	b, err := os.ReadFile(onlineFile)
	if err != nil {
		out := make(CPUSet, runtime.NumCPU())
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	s, err := ParseCPUSet(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", onlineFile, err)
	}
	return s, nil
}

// ForHost resolves s for this host's online CPUs.
func ForHost(s Spec) (Placement, error) {
	online, err := Online()
	if err != nil {
		return Placement{}, err
	}
	return Resolve(s, online)
}

// PinLoadgen confines this process to p's loadgen CPUs (none: it stays
// where it is), the first thing a command that measures does; the error
// says how to run without placement.
func (p Placement) PinLoadgen() error {
	if len(p.Loadgen) == 0 {
		return nil
	}
	if err := Pin(p.Loadgen); err != nil {
		return fmt.Errorf("placement %s: %w (or run with -placement none)", p.Mode, err)
	}
	return nil
}

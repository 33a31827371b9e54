package selfcpu

import "golang.org/x/sys/unix"

// affinityCPUs counts the CPUs of the calling thread's affinity mask, which
// the cpuset cgroup bounds.
func affinityCPUs() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, err
	}
	return set.Count(), nil
}

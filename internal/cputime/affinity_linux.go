package cputime

import "golang.org/x/sys/unix"

// Affinity is the CPUs of process (thread) pid's affinity mask, 0 = the
// calling thread; the cpuset cgroup bounds it.
func Affinity(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, err
	}
	var out []int
	for n := 0; n < len(set)*64; n++ {
		if set.IsSet(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

package placement

import (
	"slices"

	"proxybench/internal/cputime"
)

// MaxCPU is the highest CPU number a cpuset list may name.
const MaxCPU = cputime.MaxCPU

// CPUSet is a set of CPU numbers, sorted and without duplicates. Its text
// is the Linux cpuset list format that compose's cpuset, taskset -c and
// /proc/<pid>/status Cpus_allowed_list use: "1", "2-3", "0,2-3".
type CPUSet []int

// ParseCPUSet reads a cpuset list (cputime.ParseList). The empty string is
// the empty set.
func ParseCPUSet(s string) (CPUSet, error) {
	l, err := cputime.ParseList(s)
	return CPUSet(l), err
}

// String is the canonical list, the kernel's own (Cpus_allowed_list):
// every run of consecutive CPUs as lo-hi, e.g. "0-2,5"; "" for the empty
// set.
func (s CPUSet) String() string { return cputime.FormatList(s) }

// Len is the number of CPUs.
func (s CPUSet) Len() int { return len(s) }

// Contains reports whether CPU c is in the set.
func (s CPUSet) Contains(c int) bool { _, ok := slices.BinarySearch(s, c); return ok }

// Minus is the CPUs of s that are not in o.
func (s CPUSet) Minus(o CPUSet) CPUSet {
	var out CPUSet
	for _, c := range s {
		if !o.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}

// Intersect is the CPUs in both s and o.
func (s CPUSet) Intersect(o CPUSet) CPUSet {
	var out CPUSet
	for _, c := range s {
		if o.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}

// Union is the CPUs in s or o, sorted, without repeats.
func (s CPUSet) Union(o CPUSet) CPUSet {
	out := append(append(CPUSet{}, s...), o...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Equal reports whether both sets hold the same CPUs.
func (s CPUSet) Equal(o CPUSet) bool { return slices.Equal(s, o) }

package placement

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the highest CPU number a cpuset list may name (the kernel's
// largest NR_CPUS is 8192).
const MaxCPU = 8191

// CPUSet is a set of CPU numbers, sorted and without duplicates. Its text
// is the Linux cpuset list format that compose's cpuset, taskset -c and
// /proc/<pid>/status Cpus_allowed_list use: "1", "2-3", "0,2-3".
type CPUSet []int

// ParseCPUSet reads a cpuset list. The empty string is the empty set.
func ParseCPUSet(s string) (CPUSet, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("%q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("%q: range %s runs backwards: write it low-high", s, part)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make(CPUSet, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}

func cpuNumber(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("want CPU numbers and ranges such as 1, 2-3 or 0,2-3, not %q", s)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("CPU %d: above %d, the most a kernel has", n, MaxCPU)
	}
	return n, nil
}

// String is the canonical list, the kernel's own (Cpus_allowed_list):
// every run of consecutive CPUs as lo-hi, e.g. "0-2,5"; "" for the empty
// set.
func (s CPUSet) String() string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

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

// Equal reports whether both sets hold the same CPUs.
func (s CPUSet) Equal(o CPUSet) bool { return slices.Equal(s, o) }

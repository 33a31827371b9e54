// Package cputime owns reading where CPU time went, from /proc: each CPU's
// time by state (/proc/stat, steal included), a process's CPU time and
// parent (/proc/<pid>/stat, and so a process tree's), the run-queue wait of
// a set of threads (/proc/<tid>/schedstat, summed so that the total never
// goes back), a thread's affinity mask, and the kernel's CPU lists ("0-1,3")
// that name a cpuset or an affinity mask. The runner reads them at a cell's window edges to tell a role
// starved of its CPUs by somebody else from one whose own threads waited
// for each other.
package cputime

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// UserHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux ABI
// whatever the kernel's tick rate.
const UserHZ = 100

// maxTicks bounds a field: sums over the states and CPUs of a reading stay
// within a time.Duration (millions of years of CPU time).
const maxTicks = int64(1<<63-1) / int64(time.Second/UserHZ) / 1024

// CPU is one CPU's (or a set of CPUs') time by state, from /proc/stat.
// Guest time is inside User and Nice, as the kernel counts it.
type CPU struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal time.Duration
}

// Busy is the time the CPU ran something: user, nice, system, irq and
// softirq. Idle and iowait are idle; steal is the hypervisor running
// another guest, counted apart. irq and softirq are in because a kernel
// built without CONFIG_IRQ_TIME_ACCOUNTING charges the interrupts it serves
// in a task's context to that task (and its cgroup), so a role's own CPU
// includes them.
func (c CPU) Busy() time.Duration { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ }

// Sub is c - o, field by field: the time from reading o to reading c.
func (c CPU) Sub(o CPU) CPU {
	return CPU{User: c.User - o.User, Nice: c.Nice - o.Nice, System: c.System - o.System, Idle: c.Idle - o.Idle,
		IOWait: c.IOWait - o.IOWait, IRQ: c.IRQ - o.IRQ, SoftIRQ: c.SoftIRQ - o.SoftIRQ, Steal: c.Steal - o.Steal}
}

// Add is c + o, field by field.
func (c CPU) Add(o CPU) CPU {
	return CPU{User: c.User + o.User, Nice: c.Nice + o.Nice, System: c.System + o.System, Idle: c.Idle + o.Idle,
		IOWait: c.IOWait + o.IOWait, IRQ: c.IRQ + o.IRQ, SoftIRQ: c.SoftIRQ + o.SoftIRQ, Steal: c.Steal + o.Steal}
}

// Stat is /proc/stat's per-CPU lines by CPU number (an offline CPU has none).
type Stat map[int]CPU

// ReadStat reads <proc>/stat.
func ReadStat(proc string) (Stat, error) {
	file := filepath.Join(proc, "stat")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (is /proc mounted?)", file, err)
	}
	s, err := ParseStat(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	return s, nil
}

// ParseStat reads the "cpuN user nice system idle iowait irq softirq steal
// ..." lines of /proc/stat; older kernels' shorter lines leave the missing
// states zero.
func ParseStat(b []byte) (Stat, error) {
	out := Stat{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the intr line is long
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("line %q: %q is not a CPU number", sc.Text(), f[0])
		}
		var v [8]time.Duration
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			ticks, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil || ticks < 0 || ticks > maxTicks {
				return nil, fmt.Errorf("line %q: field %d is not a count of ticks", sc.Text(), i+1)
			}
			v[i] = time.Duration(ticks) * (time.Second / UserHZ)
		}
		out[n] = CPU{User: v[0], Nice: v[1], System: v[2], Idle: v[3], IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cpuN lines: an unexpected kernel format")
	}
	return out, nil
}

// Since sums over cpus the time each spent per state from start to s (s
// the later reading). A CPU missing from either reading (offline) is an
// error that names it.
func (s Stat) Since(start Stat, cpus []int) (CPU, error) {
	var out CPU
	for _, n := range cpus {
		a, ok1 := start[n]
		b, ok2 := s[n]
		if !ok1 || !ok2 {
			return CPU{}, fmt.Errorf("CPU %d is not in /proc/stat at both readings (offline?)", n)
		}
		out = out.Add(b.Sub(a))
	}
	return out, nil
}

// MaxCPU is the highest CPU number a CPU list may name (the kernel's
// largest NR_CPUS is 8192).
const MaxCPU = 8191

// ParseList reads a kernel CPU list such as "0-1,3" (cpuset.cpus, the
// Cpus_allowed_list of /proc/<pid>/status, docker's --cpuset-cpus, a plan's
// placement); "" is no CPU. The result is sorted and without repeats. Its
// errors quote the list and say how to write one.
func ParseList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
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
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
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

// FormatList writes cpus as a kernel CPU list, runs folded into ranges:
// [0 1 3] is "0-1,3".
func FormatList(cpus []int) string {
	c := slices.Compact(slices.Sorted(slices.Values(cpus)))
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(c[i]))
		} else {
			parts = append(parts, strconv.Itoa(c[i])+"-"+strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Subset says whether every CPU of a is in b.
func Subset(a, b []int) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

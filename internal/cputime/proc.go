package cputime

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Process is what <proc>/<pid>/stat says of a process: its state, its
// parent and the CPU time it has used (user + system).
type Process struct {
	PID, PPID int
	State     string
	CPU       time.Duration
}

// ParseProcess reads a <proc>/<pid>/stat line. The command (field 2) may
// hold spaces and parentheses: the fields are counted from its last ')'.
func ParseProcess(b []byte) (Process, error) {
	s := string(b)
	open, i := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || i < open {
		return Process{}, fmt.Errorf("stat %q: no (command)", clip(s))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	f := strings.Fields(s[i+1:]) // [0] state (field 3), [1] ppid, [11] utime, [12] stime
	if err != nil || len(f) < 13 {
		return Process{}, fmt.Errorf("stat %q: want a pid and at least 15 fields", clip(s))
	}
	ppid, err1 := strconv.Atoi(f[1])
	u, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || u < 0 || st < 0 || u > maxTicks || st > maxTicks {
		return Process{}, fmt.Errorf("stat %q: ppid %q, utime %q, stime %q are not counts", clip(s), f[1], f[11], f[12])
	}
	return Process{PID: pid, PPID: ppid, State: f[0], CPU: time.Duration(u+st) * (time.Second / UserHZ)}, nil
}

// ReadProcess reads <proc>/<pid>/stat.
func ReadProcess(proc string, pid int) (Process, error) {
	file := filepath.Join(proc, strconv.Itoa(pid), "stat")
	b, err := os.ReadFile(file)
	if err != nil {
		return Process{}, err
	}
	p, err := ParseProcess(b)
	if err != nil {
		return Process{}, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// Children lists pid's child processes (an nginx master's workers), in
// order; processes that end while they are read are left out.
func Children(proc string, pid int) []int {
	ents, _ := os.ReadDir(proc)
	var out []int
	for _, d := range ents {
		n, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if p, err := ReadProcess(proc, n); err == nil && p.PPID == pid {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TreeCPU is the CPU time of pid and its children.
func TreeCPU(proc string, pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("no process (pid %d)", pid)
	}
	var sum time.Duration
	for _, n := range append([]int{pid}, Children(proc, pid)...) {
		p, err := ReadProcess(proc, n)
		if err != nil {
			return 0, err
		}
		sum += p.CPU
	}
	return sum, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoMemory says the process's memory cgroup is not mounted where this
// process can see it.
var ErrNoMemory = errors.New("no mounted memory cgroup")

// WorkingSet is the group's memory working set in bytes, as cAdvisor's
// container_memory_working_set_bytes counts it: the usage less the inactive
// file pages (v1 memory.usage_in_bytes and memory.stat's
// total_inactive_file; v2 memory.current and inactive_file), never below 0.
func (g *Group) WorkingSet() (int64, error) {
	if g.memory == "" {
		return 0, ErrNoMemory
	}
	usageFile, inactiveKey := "memory.current", "inactive_file"
	if g.memory != g.unified {
		usageFile, inactiveKey = "memory.usage_in_bytes", "total_inactive_file"
	}
	file := filepath.Join(g.memory, usageFile)
	s, err := read(file)
	if err != nil {
		return 0, err
	}
	usage, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %q is not a number of bytes", file, s)
	}
	statFile := filepath.Join(g.memory, "memory.stat")
	stat, err := os.ReadFile(statFile)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", statFile, err)
	}
	return max(0, usage-statValue(stat, inactiveKey)), nil
}

// statValue is key's value in a memory.stat file, 0 when absent.
func statValue(stat []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

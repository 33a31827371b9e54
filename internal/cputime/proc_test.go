package cputime

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseProcess(t *testing.T) {
	p, err := ParseProcess([]byte("1234 (nginx: worker (x)) S 1200 1200 1200 0 -1 4194624 100 0 0 0 37 12 0 0 20 0 1 0\n"))
	if err != nil || p != (Process{PID: 1234, PPID: 1200, State: "S", CPU: 490 * time.Millisecond}) {
		t.Errorf("%+v %v", p, err)
	}
	for _, bad := range []string{"garbage", "12 (x) S 1", "x (y) S 1 1 1 0 -1 0 0 0 0 0 1 2", "1 (y) S 1 1 1 0 -1 0 0 0 0 0 -1 2"} {
		if _, err := ParseProcess([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestTreeCPU: a master and its two workers in a /proc of files, and the
// live /proc for this process.
func TestTreeCPU(t *testing.T) {
	proc := t.TempDir()
	for pid, stat := range map[string]string{
		"10": "10 (nginx) S 1 10 10 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0",
		"11": "11 (nginx) S 10 10 10 0 -1 0 0 0 0 0 100 50 0 0 20 0 1 0",
		"12": "12 (nginx) S 10 10 10 0 -1 0 0 0 0 0 20 30 0 0 20 0 1 0",
		"13": "13 (other) S 1 13 13 0 -1 0 0 0 0 0 999 999 0 0 20 0 1 0",
	} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if kids := Children(proc, 10); len(kids) != 2 || kids[0] != 11 || kids[1] != 12 {
		t.Errorf("children %v", kids)
	}
	if d, err := TreeCPU(proc, 10); err != nil || d != 2100*time.Millisecond {
		t.Errorf("tree CPU %v %v, want 2.1s", d, err)
	}
	if _, err := TreeCPU(proc, 0); err == nil {
		t.Error("pid 0 accepted")
	}
	if _, err := TreeCPU("/proc", os.Getpid()); err != nil {
		t.Error(err)
	}
}

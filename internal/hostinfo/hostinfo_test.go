package hostinfo

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDescribe reads this machine: what the kernel and /proc say, never
// failing on what it cannot read.
func TestDescribe(t *testing.T) {
	h := Describe(context.Background())
	if h.CPUs != runtime.NumCPU() || !strings.HasPrefix(h.OS, runtime.GOOS) || h.Loadgen == "" {
		t.Errorf("host %+v", h)
	}
	if runtime.GOOS == "linux" && (h.Kernel == "" || h.MemBytes == 0) {
		t.Errorf("linux host without kernel or memory: %+v", h)
	}
}

func TestField(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(p, []byte("MemFree:  10 kB\nMemTotal:       24576000 kB\nmodel name\t: AMD EPYC\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]string{"MemTotal:": "24576000 kB", "model name": "AMD EPYC", "Swap:": ""} {
		if got := field(p, prefix); got != want {
			t.Errorf("field %q = %q, want %q", prefix, got, want)
		}
	}
	if got := field(filepath.Join(t.TempDir(), "none"), "x"); got != "" {
		t.Errorf("missing file gave %q", got)
	}
}

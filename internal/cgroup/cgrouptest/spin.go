package cgrouptest

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// Spin starts a busy loop (one shell thread) pinned to cpu, or unpinned
// when cpu < 0, and kills it when the test ends. A test moves it into a
// group with Add, or leaves it outside as a hog.
func Spin(t testing.TB, cpu int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if cpu >= 0 {
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(cmd.Process.Pid, &one); err != nil {
			t.Fatalf("pin the busy loop to CPU %d: %v", cpu, err)
		}
	}
	return cmd
}

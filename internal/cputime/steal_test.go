package cputime

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStealShare(t *testing.T) {
	for _, tc := range []struct {
		steal, wall time.Duration
		n           int
		want        float64
	}{
		{300 * time.Millisecond, time.Second, 1, 0.3},
		{300 * time.Millisecond, time.Second, 2, 0.15},
		{0, time.Second, 2, 0},
		{time.Second, 0, 2, 0},
		{time.Second, time.Second, 0, 0},
	} {
		if got := StealShare(tc.steal, tc.wall, tc.n); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("StealShare(%v, %v, %d) = %v, want %v", tc.steal, tc.wall, tc.n, got, tc.want)
		}
	}
}

// TestStealWatchReadsTheHost watches this host's real /proc/stat over
// 1.3 s: a share between 0 and 1, no error.
func TestStealWatchReadsTheHost(t *testing.T) {
	w := WatchSteal(nil)
	time.Sleep(1300 * time.Millisecond)
	worst, err := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if worst < 0 || worst > 1 {
		t.Errorf("worst steal share %v, want within [0, 1]", worst)
	}
	if _, err := w.Stop(); err != nil {
		t.Errorf("a second stop: %v", err)
	}
}

// TestStealWatchSeesAStall stops a process that runs a watch (this test
// binary, as a child) with SIGSTOP for 400 ms and checks the watch's stall
// says so; the same child left alone is the control: its stall stays
// under half of that.
func TestStealWatchSeesAStall(t *testing.T) {
	if os.Getenv("PROXYBENCH_STALL_CHILD") == "1" {
		w := WatchSteal(nil)
		fmt.Println("watching")
		time.Sleep(1500 * time.Millisecond)
		if _, err := w.Stop(); err != nil {
			fmt.Println("error", err)
			return
		}
		stall, at := w.Stall()
		fmt.Println("stall", stall.Microseconds(), at.UnixMicro())
		return
	}
	child := func(stop time.Duration) (stall time.Duration, at, stopped time.Time) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStealWatchSeesAStall$")
		cmd.Env = append(os.Environ(), "PROXYBENCH_STALL_CHILD=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var us, atUs int64
		for sc.Scan() {
			switch f := strings.Fields(sc.Text()); {
			case len(f) == 1 && f[0] == "watching" && stop > 0:
				time.Sleep(300 * time.Millisecond)
				stopped = time.Now()
				_ = cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(stop)
				_ = cmd.Process.Signal(syscall.SIGCONT)
			case len(f) == 3 && f[0] == "stall":
				us, _ = strconv.ParseInt(f[1], 10, 64)
				atUs, _ = strconv.ParseInt(f[2], 10, 64)
			case len(f) > 0 && f[0] == "error":
				t.Fatalf("the child's watch: %s", sc.Text())
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
		return time.Duration(us) * time.Microsecond, time.UnixMicro(atUs), stopped
	}
	const stop = 400 * time.Millisecond
	stall, at, stopped := child(stop)
	t.Logf("stopped %v: stall %v due %v after the stop", stop, stall, at.Sub(stopped))
	if stall < stop-2*StallEvery || stall > 3*stop {
		t.Errorf("stopped %v, the watch's stall is %v", stop, stall)
	}
	if d := at.Sub(stopped); d < -2*StallEvery || d > 2*StallEvery {
		t.Errorf("the stall was due %v after the stop began, want within %v of it", d, 2*StallEvery)
	}
	quiet, _, _ := child(0)
	t.Logf("control (not stopped): stall %v", quiet)
	if quiet >= stop/2 {
		t.Errorf("control: a watch nobody stopped stalled %v (>= %v)", quiet, stop/2)
	}
}

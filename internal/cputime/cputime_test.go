package cputime

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

const tick = time.Second / UserHZ

// TestReadStat reads a real host's /proc/stat: the per-CPU lines only,
// in USER_HZ ticks.
func TestReadStat(t *testing.T) {
	t.Parallel()
	s, err := ReadStat(filepath.Join("testdata", "proc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 {
		t.Fatalf("%d CPUs, want 2: %v", len(s), s)
	}
	want := CPU{User: 1069125 * tick, Nice: 1536 * tick, System: 614163 * tick, Idle: 1108001 * tick, IOWait: 35566 * tick,
		IRQ: 7 * tick, SoftIRQ: 130907 * tick, Steal: 46895 * tick}
	if s[1] != want {
		t.Errorf("cpu1 %+v, want %+v", s[1], want)
	}
	if got, want := s[1].Busy(), (1069125+1536+614163+7+130907)*tick; got != want {
		t.Errorf("busy %v, want %v (user+nice+system+irq+softirq)", got, want)
	}
}

func TestParseStatErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "intr 1 2 3\n", "cpux 1 2 3 4 5\n", "cpu0 1 2 x 4 5\n", "cpu0 1 2 -3 4 5\n"} {
		if s, err := ParseStat([]byte(in)); err == nil {
			t.Errorf("ParseStat(%q) = %v, want an error", in, s)
		}
	}
	// An old kernel's line without steal: the missing states are zero.
	s, err := ParseStat([]byte("cpu0 1 2 3 4 5\n"))
	if err != nil || s[0] != (CPU{User: tick, Nice: 2 * tick, System: 3 * tick, Idle: 4 * tick, IOWait: 5 * tick}) {
		t.Errorf("short line: %+v %v", s, err)
	}
}

func TestSince(t *testing.T) {
	t.Parallel()
	a := Stat{0: {User: 10, Steal: 1}, 1: {User: 100, Idle: 5}}
	b := Stat{0: {User: 15, Steal: 4}, 1: {User: 130, Idle: 25}}
	if got, err := b.Since(a, []int{1}); err != nil || got != (CPU{User: 30, Idle: 20}) {
		t.Errorf("cpu 1: %+v %v", got, err)
	}
	if got, err := b.Since(a, []int{0, 1}); err != nil || got != (CPU{User: 35, Idle: 20, Steal: 3}) {
		t.Errorf("cpus 0-1: %+v %v", got, err)
	}
	if _, err := b.Since(a, []int{2}); err == nil {
		t.Error("an absent CPU: no error")
	}
}

func TestCPUList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		cpus []int
		out  string
	}{
		{"0-1", []int{0, 1}, "0-1"},
		{"1", []int{1}, "1"},
		{"0-2,5,7-8\n", []int{0, 1, 2, 5, 7, 8}, "0-2,5,7-8"},
		{"3,1,1-2", []int{1, 2, 3}, "1-3"},
		{"", nil, ""},
	} {
		got, err := ParseList(c.in)
		if err != nil || !slices.Equal(got, c.cpus) {
			t.Errorf("ParseList(%q) = %v %v, want %v", c.in, got, err, c.cpus)
		}
		if s := FormatList(got); s != c.out {
			t.Errorf("FormatList(%v) = %q, want %q", got, s, c.out)
		}
	}
	for _, bad := range []string{"a", "1-", "2-1", "-1", "0,,1"} {
		if got, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) = %v, want an error", bad, got)
		}
	}
	if !Subset([]int{1}, []int{0, 1}) || Subset([]int{0, 1}, []int{1}) || !Subset(nil, []int{1}) {
		t.Error("Subset")
	}
}

// TestWaitThreads reads the fixture threads' schedstat: the second field,
// summed.
func TestWaitThreads(t *testing.T) {
	t.Parallel()
	w := NewWait()
	if err := w.ReadThreads(filepath.Join("testdata", "proc"), []int{4242, 4243, 9999}); err != nil { // 9999 exited while listed
		t.Fatal(err)
	}
	if got, want := w.Total(), time.Duration(234589042+5000000); got != want || w.Threads() != 2 {
		t.Errorf("total %v over %d threads, want %v over 2", got, w.Threads(), want)
	}
}

// TestWaitMonotonic: an exited thread keeps its wait in the total (and is
// counted as exited), and a new thread under a reused id does not take it
// away.
func TestWaitMonotonic(t *testing.T) {
	t.Parallel()
	w := NewWait()
	w.update(map[int]int64{10: 100, 11: 50})
	w.update(map[int]int64{10: 150}) // 11 exited
	if got := w.Total(); got != 200 || w.Exited() != 1 {
		t.Errorf("after an exit: %d (%d exited), want 200 (1)", got, w.Exited())
	}
	w.update(map[int]int64{10: 5, 12: 1}) // 10 is a new thread now
	if got := w.Total(); got != 206 || w.Threads() != 2 || w.Exited() != 2 {
		t.Errorf("after a reused id: %d (%d tracked, %d exited), want 206 (2, 2)", got, w.Threads(), w.Exited())
	}
}

// TestWaitTaskDir reads the calling process's own threads.
func TestWaitTaskDir(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc")
	}
	w := NewWait()
	if err := w.ReadTaskDir("/proc/self/task"); err != nil {
		t.Fatal(err)
	}
	if w.Threads() == 0 {
		t.Error("no thread of this process read")
	}
}

func TestAffinity(t *testing.T) {
	t.Parallel()
	cpus, err := Affinity(0)
	if err != nil {
		t.Skip(err)
	}
	if len(cpus) == 0 || !slices.IsSorted(cpus) {
		t.Errorf("affinity %v", cpus)
	}
}

func FuzzParseList(f *testing.F) {
	for _, s := range []string{"0-1", "0-2,5,7-8", "", "3,1", "1-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseList(s)
		if err != nil {
			return
		}
		back, err := ParseList(FormatList(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Errorf("%q: %v formats as %q, reads back %v %v", s, cpus, FormatList(cpus), back, err)
		}
	})
}

func FuzzParseStat(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "proc", "stat"))
	f.Add(b)
	f.Add([]byte("cpu0 1 2 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err == nil && len(s) == 0 {
			t.Error("no error and no CPU")
		}
		for _, c := range s {
			if c.Busy() < 0 || c.Idle < 0 || c.Steal < 0 {
				t.Errorf("negative time %+v", c)
			}
		}
	})
}

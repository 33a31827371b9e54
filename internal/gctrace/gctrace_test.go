package gctrace

import (
	"errors"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		line string
		kind Kind
		torn bool
		want Cycle
	}{
		{
			name: "go1.18+ with stacks and globals",
			line: "gc 2 @0.013s 72%: 9.3+1.4+0.003 ms clock, 18+0.027/1.4/0+0.006 ms cpu, 7->7->5 MB, 7 MB goal, 0 MB stacks, 1 MB globals, 2 P",
			kind: GC,
			want: Cycle{N: 2, At: 13 * ms, CPUPercent: 72, SweepTerm: 9300 * time.Microsecond, Mark: 1400 * time.Microsecond, MarkTerm: 3 * time.Microsecond,
				CPUSweepTerm: 18 * ms, CPUAssist: 27 * time.Microsecond, CPUBackground: 1400 * time.Microsecond, CPUIdle: 0, CPUMarkTerm: 6 * time.Microsecond,
				HeapStart: 7 << 20, HeapEnd: 7 << 20, HeapLive: 5 << 20, HeapGoal: 7 << 20, Stacks: 0, Globals: 1 << 20, HasRoots: true, Procs: 2},
		},
		{
			name: "go1.17 without stacks and globals, forced, CRLF",
			line: "gc 12 @1.234s 3%: 0.017+0.41+0.12 ms clock, 0.035+0/0.16/0.22+0.25 ms cpu, 4->4->0 MB, 5 MB goal, 4 P (forced)\r",
			kind: GC,
			want: Cycle{N: 12, At: 1234 * ms, CPUPercent: 3, SweepTerm: 17 * time.Microsecond, Mark: 410 * time.Microsecond, MarkTerm: 120 * time.Microsecond,
				CPUSweepTerm: 35 * time.Microsecond, CPUBackground: 160 * time.Microsecond, CPUIdle: 220 * time.Microsecond, CPUMarkTerm: 250 * time.Microsecond,
				HeapStart: 4 << 20, HeapEnd: 4 << 20, HeapGoal: 5 << 20, Procs: 4, ForcedMark: true},
		},
		{
			name: "go1.26 goroutine leak check",
			line: "gc 7 @10.500s 1% (checking for goroutine leaks): 0.050+2.5+0.060 ms clock, 0.10+0.5/1.2/3.0+0.12 ms cpu, 12->13->6 MB, 14 MB goal, 1 MB stacks, 0 MB globals, 2 P",
			kind: GC,
			want: Cycle{N: 7, At: 10500 * ms, CPUPercent: 1, LeakCheck: true, SweepTerm: 50 * time.Microsecond, Mark: 2500 * time.Microsecond, MarkTerm: 60 * time.Microsecond,
				CPUSweepTerm: 100 * time.Microsecond, CPUAssist: 500 * time.Microsecond, CPUBackground: 1200 * time.Microsecond, CPUIdle: 3 * ms, CPUMarkTerm: 120 * time.Microsecond,
				HeapStart: 12 << 20, HeapEnd: 13 << 20, HeapLive: 6 << 20, HeapGoal: 14 << 20, Stacks: 1 << 20, HasRoots: true, Procs: 2},
		},
		{
			name: "large values, ms without fraction",
			line: "gc 123456 @98765.432s 15%: 12+345+10 ms clock, 48+100/700/0+40 ms cpu, 1024->1100->512 MB, 1030 MB goal, 2 MB stacks, 3 MB globals, 64 P",
			kind: GC,
			want: Cycle{N: 123456, At: 98765432 * ms, CPUPercent: 15, SweepTerm: 12 * ms, Mark: 345 * ms, MarkTerm: 10 * ms,
				CPUSweepTerm: 48 * ms, CPUAssist: 100 * ms, CPUBackground: 700 * ms, CPUMarkTerm: 40 * ms,
				HeapStart: 1024 << 20, HeapEnd: 1100 << 20, HeapLive: 512 << 20, HeapGoal: 1030 << 20, Stacks: 2 << 20, Globals: 3 << 20, HasRoots: true, Procs: 64},
		},
		{
			name: "torn by another writer: cycle number kept",
			line: "gc 1 @0.005s 32%: 6.3+1.0+0.004 ms clock, 12+0app: checkpoint 0",
			kind: GC, torn: true,
			want: Cycle{N: 1, At: 5 * ms, CPUPercent: 32, SweepTerm: 6300 * time.Microsecond, Mark: 1 * ms, MarkTerm: 4 * time.Microsecond, CPUSweepTerm: 12 * ms},
		},
		{
			name: "gc line after other text on the same line",
			line: "app: checkpoint 3gc 9 @2.000s 0%: 0.010+0.20+0.030 ms clock, 0.020+0/0.1/0.2+0.060 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P",
			kind: GC,
			want: Cycle{N: 9, At: 2 * time.Second, SweepTerm: 10 * time.Microsecond, Mark: 200 * time.Microsecond, MarkTerm: 30 * time.Microsecond,
				CPUSweepTerm: 20 * time.Microsecond, CPUBackground: 100 * time.Microsecond, CPUIdle: 200 * time.Microsecond, CPUMarkTerm: 60 * time.Microsecond,
				HeapStart: 3 << 20, HeapEnd: 3 << 20, HeapLive: 1 << 20, HeapGoal: 4 << 20, HasRoots: true, Procs: 2},
		},
		{name: "cut at end of line", line: "gc 4 @0.1", kind: GC, torn: true, want: Cycle{N: 4, At: 100 * ms}},
		{name: "trailing garbage", line: "gc 5 @0.100s 1%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 1->1->1 MB, 1 MB goal, 2 P xyz", kind: GC, torn: true},
		{name: "GC forced", line: "GC forced", kind: Forced},
		{name: "GC forced CRLF", line: "GC forced\r", kind: Forced},
		{name: "scavenger", line: "scav 0 KiB work (bg), 0 KiB work (eager), 4096 KiB now, 12 KiB released", kind: Scav},
		{name: "old scavenger", line: "scvg0: inuse: 3, idle: 0, sys: 3, released: 0, consumed: 3 (MB)", kind: Scav},
		{name: "empty", line: "", kind: Other},
		{name: "app log mentioning gc", line: `{"level":"info","msg":"gc tuning","gc 5":"x"}`, kind: Other},
		{name: "gc without @", line: "gc 12 done", kind: Other},
		{name: "gc word only", line: "gc ", kind: Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c Cycle
			kind, err := Parse([]byte(tc.line), &c)
			if kind != tc.kind {
				t.Fatalf("kind = %v, want %v", kind, tc.kind)
			}
			if tc.torn != (err != nil) || (err != nil && !errors.Is(err, ErrTorn)) {
				t.Fatalf("err = %v, want torn %v", err, tc.torn)
			}
			if tc.kind != GC {
				return
			}
			if tc.name == "trailing garbage" {
				if c.N != 5 {
					t.Errorf("N = %d, want 5", c.N)
				}
				return
			}
			if c != tc.want {
				t.Errorf("got  %+v\nwant %+v", c, tc.want)
			}
		})
	}
}

func TestPauseAndCPU(t *testing.T) {
	t.Parallel()
	var c Cycle
	if _, err := Parse([]byte("gc 2 @0.013s 72%: 9.3+1.4+0.003 ms clock, 18+0.027/1.4/0+0.006 ms cpu, 7->7->5 MB, 7 MB goal, 0 MB stacks, 0 MB globals, 2 P"), &c); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Pause(), 9303*time.Microsecond; got != want {
		t.Errorf("Pause = %v, want %v (sweep termination + mark termination)", got, want)
	}
	if got, want := c.CPU(), 18*ms+27*time.Microsecond+1400*time.Microsecond+6*time.Microsecond; got != want {
		t.Errorf("CPU = %v, want %v", got, want)
	}
}

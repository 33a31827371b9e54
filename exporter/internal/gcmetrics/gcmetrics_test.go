package gcmetrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"proxybench/internal/metricdefs"
)

// vec is the collector of one row's series.
func (m *Metrics) vec(d *metricdefs.Def) prometheus.Collector {
	for _, v := range m.all {
		ch := make(chan *prometheus.Desc, 1)
		v.Describe(ch)
		if strings.Contains((<-ch).String(), `fqName: "`+d.Name+`"`) {
			return v
		}
	}
	panic("no vector of " + d.Name)
}

const (
	line1 = "gc 1 @0.005s 2%: 0.010+1.0+0.020 ms clock, 0.020+0.5/1.0/0.5+0.040 ms cpu, 4->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P"
	line2 = "gc 2 @0.010s 3%: 0.100+2.0+0.200 ms clock, 0.200+0/1.0/0+0.400 ms cpu, 5->6->2 MB, 8 MB goal, 0 MB stacks, 0 MB globals, 2 P"
	torn3 = "gc 3 @0.020s 3%: 6.3+1.0+0.004 ms clock, 12+0app: checkpoint 0"
	line5 = "gc 5 @0.050s 4%: 0.300+3.0+0.400 ms clock, 0.600+1/2/3+0.800 ms cpu, 9->9->3 MB, 10 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)"
	line6 = "gc 6 @120.5s 4%: 0.010+1.0+0.010 ms clock, 0.020+0/1/0+0.020 ms cpu, 3->3->3 MB, 6 MB goal, 0 MB stacks, 0 MB globals, 2 P"
)

func TestSourceCountsByCycleNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		lines                  []string
		resetBefore            int // index of the line before which Reset is called, -1 none
		cycles, forced, errors float64
		pauses                 uint64
	}{
		{name: "in order", lines: []string{line1, line2}, resetBefore: -1, cycles: 2, pauses: 2},
		{name: "duplicate line not counted twice", lines: []string{line1, line2, line2}, resetBefore: -1, cycles: 2, pauses: 2},
		{name: "torn line counts its cycle, no pause", lines: []string{line1, line2, torn3}, resetBefore: -1, cycles: 3, errors: 1, pauses: 2},
		{name: "lost line counted by the jump", lines: []string{line1, line2, line5}, resetBefore: -1, cycles: 5, forced: 1, pauses: 3},
		{name: "GC forced marks the next cycle", lines: []string{line5, "scav 0 KiB work", "GC forced", "other output", line6}, resetBefore: -1, cycles: 6, forced: 2, pauses: 2},
		{name: "restart noticed by lower number", lines: []string{line1, line2, line1, line2}, resetBefore: -1, cycles: 4, pauses: 4},
		{name: "after Reset the same number is a new process", lines: []string{line1, line2, line2}, resetBefore: 2, cycles: 4, pauses: 3},
		{name: "after Reset late lines of the old process still count", lines: []string{line1, line2, line5, line1}, resetBefore: 2, cycles: 6, forced: 1, pauses: 4},
		{name: "first line of a late reader counts the whole process", lines: []string{line5}, resetBefore: -1, cycles: 5, forced: 1, pauses: 1},
		{name: "other output only", lines: []string{"hello", "", "scav 1 KiB"}, resetBefore: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			m := New(reg)
			s := m.Source("proxybench-caddy", "caddy")
			ts := time.Unix(1764480000, 0)
			for i, l := range tc.lines {
				if i == tc.resetBefore {
					s.Reset()
				}
				s.Line(ts, []byte(l))
			}
			for _, c := range []struct {
				name string
				got  float64
				want float64
			}{
				{"cycles", testutil.ToFloat64(m.cycles), tc.cycles},
				{"forced", testutil.ToFloat64(m.forced), tc.forced},
				{"parse errors", testutil.ToFloat64(m.parseErrors), tc.errors},
			} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "proxybench_gc_pause_seconds" {
					if got := mf.Metric[0].GetHistogram().GetSampleCount(); got != tc.pauses {
						t.Errorf("pause observations = %d, want %d", got, tc.pauses)
					}
				}
			}
		})
	}
}

func TestSourceValues(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	s := m.Source("proxybench-traefik", "traefik")
	s.Line(time.Unix(100, 500e6), []byte(line1))
	s.Line(time.Unix(101, 0), []byte(line2))
	want := `
# HELP proxybench_gc_concurrent_mark_seconds_total Wall-clock time spent in concurrent mark and scan.
# TYPE proxybench_gc_concurrent_mark_seconds_total counter
proxybench_gc_concurrent_mark_seconds_total{container="proxybench-traefik",service="traefik"} 0.003
# HELP proxybench_gc_cpu_fraction The runtime's GC share of available CPU since the process started, as of the last cycle (gctrace P%/100).
# TYPE proxybench_gc_cpu_fraction gauge
proxybench_gc_cpu_fraction{container="proxybench-traefik",service="traefik"} 0.03
# HELP proxybench_gc_heap_live_bytes Live heap marked by the last GC cycle.
# TYPE proxybench_gc_heap_live_bytes gauge
proxybench_gc_heap_live_bytes{container="proxybench-traefik",service="traefik"} 2.097152e+06
# HELP proxybench_gc_heap_goal_bytes Heap goal of the last GC cycle.
# TYPE proxybench_gc_heap_goal_bytes gauge
proxybench_gc_heap_goal_bytes{container="proxybench-traefik",service="traefik"} 8.388608e+06
# HELP proxybench_gc_last_cycle_timestamp_seconds When the last GC cycle's line was logged, Unix time.
# TYPE proxybench_gc_last_cycle_timestamp_seconds gauge
proxybench_gc_last_cycle_timestamp_seconds{container="proxybench-traefik",service="traefik"} 101
# HELP proxybench_gc_gomaxprocs GOMAXPROCS as reported by the last GC cycle.
# TYPE proxybench_gc_gomaxprocs gauge
proxybench_gc_gomaxprocs{container="proxybench-traefik",service="traefik"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"proxybench_gc_concurrent_mark_seconds_total", "proxybench_gc_cpu_fraction", "proxybench_gc_heap_live_bytes",
		"proxybench_gc_heap_goal_bytes", "proxybench_gc_last_cycle_timestamp_seconds", "proxybench_gc_gomaxprocs"); err != nil {
		t.Error(err)
	}
	// CPU: sweep termination, assist, background and mark termination,
	// (0.020+0.5+1.0+0.040) + (0.200+0+1.0+0.400) ms; the idle mark
	// workers' 0.5 + 0 ms apart.
	if got, want := testutil.ToFloat64(m.vec(metricdefs.GCCPU)), 3.16e-3; got < want-1e-12 || got > want+1e-12 {
		t.Errorf("cpu seconds = %v, want %v", got, want)
	}
	if got, want := testutil.ToFloat64(m.vec(metricdefs.GCIdleMarkCPU)), 0.5e-3; got < want-1e-12 || got > want+1e-12 {
		t.Errorf("idle mark cpu seconds = %v, want %v", got, want)
	}
	// Compose recreates: the new container (same name) starts before the
	// old one is removed; removing the old one keeps the new one's series.
	recreated := m.Source("proxybench-traefik", "traefik")
	s.Delete()
	recreated.Line(time.Unix(102, 0), []byte(line1))
	if got := testutil.ToFloat64(m.cycles); got != 3 {
		t.Errorf("after the old source's Delete, cycles = %v, want 3 (2 + the new process's 1)", got)
	}
	recreated.Delete()
	if n := testutil.CollectAndCount(m.cycles); n != 0 {
		t.Errorf("after the last Delete %d cycle series remain", n)
	}
}

// TestLint runs client_golang's promlint (the checks of promtool check
// metrics) over every series the package exposes.
func TestLint(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	m.Source("proxybench-caddy", "caddy").Line(time.Unix(1, 0), []byte(line5))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestTornForcedMarksCount feeds a real capture of a program forcing a GC
// cycle every 20 ms while another goroutine writes to stderr without
// pause (gctrace's testdata/go1.26-torn-forced.log): the gc lines are torn
// down to one print argument per line, heads included. Every forced cycle
// is counted, read against the raw text's own count of "(forced)" marks:
// the whole lines' marks and the torn lines' marks on lines of their own.
func TestTornForcedMarksCount(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "gctrace", "testdata", "go1.26-torn-forced.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Count(string(raw), "(forced)")
	m := New(prometheus.NewPedanticRegistry())
	s := m.Source("proxybench-torn", "torn")
	at := time.Unix(100, 0)
	for _, l := range strings.Split(string(raw), "\n") {
		s.Line(at, []byte(l))
	}
	if got := int(testutil.ToFloat64(m.forced)); got != want || want < 10 {
		t.Errorf("forced cycles %d, want the capture's %d marks", got, want)
	}
}

package gctail

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"proxybench/internal/gccycles"
	"proxybench/internal/reqsample"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// req is a request at the proxy over [from, to] ms of the window (a closed
// loop: its latency is its time in flight).
func req(from, to float64) reqsample.Req {
	d := int64(ms(to - from))
	return reqsample.Req{Done: t0.Add(ms(to)).UnixNano(), Latency: d, InFlight: d, W: 1}
}

// synthetic is a 1 s window with two GC cycles of 10 ms (1 ms sweep
// termination, 8 ms mark, 1 ms mark termination) at 100 ms and 500 ms.
func synthetic() *File {
	cyc := func(at float64) gccycles.Cycle {
		return gccycles.Cycle{Start: t0.Add(ms(at)), SweepTerm: ms(1), Mark: ms(8), MarkTerm: ms(1)}
	}
	return &File{
		Cell: "c1", WindowStart: t0, WindowEnd: t0.Add(time.Second),
		Cycles: []gccycles.Cycle{cyc(100), cyc(500)},
		Requests: &reqsample.Set{
			Uniform: []reqsample.Req{
				req(0, 1), req(100.5, 100.8), req(105, 106), req(200, 201), req(300, 301),
				req(509.5, 511), req(600, 601), req(700, 701), req(800, 801), req(900, 901),
			},
			Tail: []reqsample.Req{
				req(98, 102),  // over the first sweep termination
				req(104, 108), // inside the first mark phase only
				req(300, 305), req(700, 705),
				req(0, 1),     // not slower than the p99
				req(-5, -0.5), // sent before the window
			},
			TailThreshold: int64(ms(1.1)),
		},
	}
}

func near(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func TestAnalyzeSyntheticTrace(t *testing.T) {
	f := synthetic()
	r := Analyze(f, ms(1.2))
	if r.Sampled != 10 || r.Tail != 4 || r.Cycles != 2 {
		t.Fatalf("sampled %d, tail %d, cycles %d; want 10, 4, 2", r.Sampled, r.Tail, r.Cycles)
	}
	near(t, "coverage", r.Coverage, 0.02)
	near(t, "stw coverage", r.STWCoverage, 0.004)
	near(t, "tail overlap", r.TailOverlap, 0.5)
	near(t, "tail overlap stw", r.TailOverlapSTW, 0.25)
	near(t, "all overlap", r.AllOverlap, 0.3)
	near(t, "all overlap stw", r.AllOverlapSTW, 0.2)
	near(t, "tail completeness", r.TailCompleteness, 40)
	// The tail places both p99s: its slowest overlapping request (4 ms)
	// and its slowest clear one (5 ms).
	near(t, "p99 overlap", r.P99OverlapSeconds, 0.004)
	near(t, "p99 clear", r.P99ClearSeconds, 0.005)
	if r.Overlapping != 3 || r.Clear != 7 {
		t.Errorf("overlapping %d, clear %d; want 3, 7", r.Overlapping, r.Clear)
	}

	// The chance estimate against a brute-force count: every tail request
	// against every cycle moved by k*W/(Shifts+1) modulo the window.
	tail := []reqsample.Req{f.Requests.Tail[0], f.Requests.Tail[1], f.Requests.Tail[2], f.Requests.Tail[3]}
	w := int64(time.Second)
	var sum float64
	reached := 1
	for k := 1; k <= Shifts; k++ {
		d := w * int64(k) / int64(Shifts+1)
		n := 0
		for _, q := range tail {
			s, e := q.Sent()-t0.UnixNano(), q.Done-t0.UnixNano()
			for _, c := range f.Cycles {
				a := (c.Start.UnixNano() - t0.UnixNano() + d) % w
				b := a + int64(c.End().Sub(c.Start))
				if (s < b && e > a) || (b > w && s < b-w && e > 0) {
					n++
					break
				}
			}
		}
		x := float64(n) / float64(len(tail))
		sum += x
		if x >= 0.5 {
			reached++
		}
	}
	near(t, "chance", r.Chance, sum/Shifts)
	near(t, "p value", r.PValue, float64(reached)/(Shifts+1))
	// Two 10 ms cycles in 1 s against 4-5 ms requests: about 2 x 14.5 ms / 1 s.
	if r.Chance < 0.02 || r.Chance > 0.04 {
		t.Errorf("chance %v, want about 0.029", r.Chance)
	}

	// Above the tail's threshold only the uniform sample can say.
	f.Requests.TailThreshold = int64(ms(10))
	r = Analyze(f, ms(1.2))
	near(t, "p99 overlap, uniform", r.P99OverlapSeconds, 0.0015)
	near(t, "p99 clear, uniform", r.P99ClearSeconds, 0.001)
}

func TestShiftedWraps(t *testing.T) {
	got := shifted([]span{{900, 950}}, 0, 1000, 80)
	want := []span{{0, 30}, {980, 1000}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("shifted = %v, want %v", got, want)
	}
}

func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	f := synthetic()
	rel, err := Write(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := Analyze(f, ms(1.2)), Analyze(g, ms(1.2)); a != b {
		t.Fatalf("after a round trip:\n%+v\nwant\n%+v", b, a)
	}
	if _, err := Read(filepath.Join(dir, "nope.json.gz")); err == nil {
		t.Fatal("reading a missing file: no error")
	}
}

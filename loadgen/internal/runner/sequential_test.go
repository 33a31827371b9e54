package runner

import (
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/plan"
)

// duetCells is n pairs of a closed-loop duet cell key whose candidate's
// goodput is ratio times the baseline's, with a relative noise of cv per
// cell, in ABBA order.
func duetCells(rng *rand.Rand, n int, ratio, cv float64) []manifest.Cell {
	var out []manifest.Cell
	cell := func(arm string, r int, rps float64) manifest.Cell {
		cpu := 0.9 * 5
		return manifest.Cell{Key: cellid.NewArm("traefik", "fast", "simple", "quick", arm, r), Mode: "closed", DurationS: 5, Status: manifest.CellOK,
			Codes: map[string]int64{"200": int64(rps * 5), "502": 3}, Expected: []string{"2xx"}, Requests: int64(rps * 5), ProxyCPUSeconds: &cpu}
	}
	for r := 1; r <= n; r++ {
		base := 10000 * (1 + cv*rng.NormFloat64())
		cand := 10000 * ratio * (1 + cv*rng.NormFloat64())
		out = append(out, cell("", r, base), cell(cellid.ArmCandidate, r, cand))
	}
	return out
}

func newTestSequential(budget time.Duration, maxPairs int) *sequential {
	p := &plan.Expanded{Plan: plan.Default()}
	p.DuetCPUs, p.Budget, p.Repeats = 0.9, plan.Duration(budget), maxPairs
	return newSequential(p, time.Unix(0, 0), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestSequentialStopsWhenDecided: the question is "is the candidate's
// goodput worse than the baseline's by more than 5 %?". A 20 % cut is
// decided worse within a few blocks of pairs and the run stops; an
// unchanged candidate is never called worse, and a noisy one the budget
// cannot resolve stops on the budget, not on a decision.
func TestSequentialStopsWhenDecided(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	s := newTestSequential(10*time.Minute, 60)
	cells := duetCells(rng, 60, 0.8, 0.02)
	stopped := 0
	for pairs := 2; pairs <= 60; pairs += 2 {
		if why := s.look(cells[:2*pairs], pairs, time.Unix(int64(16*pairs), 0)); why != "" {
			stopped = pairs
			break
		}
	}
	last := s.rec.Looks[len(s.rec.Looks)-1].Results
	if s.rec.Stopped != manifest.StopDecided || stopped > 8 || len(last) != 1 || last[0].Outcome != decide.Worse || last[0].Metric != decide.Goodput {
		t.Fatalf("20 %% cut: stopped %q after %d pairs, last look %+v", s.rec.Stopped, stopped, last)
	}
	if g := gatedValue(decide.Goodput, &cells[0]); g <= 0 || gatedValue(decide.CPUPerRequest, &cells[0]) <= 0 {
		t.Fatalf("gated values of a cell: goodput %g", g)
	}

	same := newTestSequential(10*time.Minute, 60)
	cells = duetCells(rng, 60, 1.0, 0.02)
	for pairs := 2; pairs <= 60; pairs += 2 {
		if same.look(cells[:2*pairs], pairs, time.Unix(int64(16*pairs), 0)) != "" {
			break
		}
	}
	if got := same.rec.Looks[len(same.rec.Looks)-1].Results[0].Outcome; got != decide.Equivalent || same.rec.Stopped != manifest.StopDecided {
		t.Fatalf("unchanged candidate, 2 %% noise: %s, stopped %q", got, same.rec.Stopped)
	}

	noisy := newTestSequential(2*time.Minute, 60)
	cells = duetCells(rng, 60, 0.97, 0.3)
	for pairs := 2; pairs <= 60; pairs += 2 {
		if noisy.look(cells[:2*pairs], pairs, time.Unix(int64(16*pairs), 0)) != "" {
			break
		}
	}
	if noisy.rec.Stopped != manifest.StopBudget {
		t.Fatalf("30 %% noise in a 2 min budget: stopped %q after %d looks", noisy.rec.Stopped, len(noisy.rec.Looks))
	}
}

func TestSequentialLooksAfterABBABlocks(t *testing.T) {
	t.Parallel()
	s := newTestSequential(time.Minute, 10)
	cells := []plan.Cell{{Key: cellid.Key{Repeat: 1}}, {Key: cellid.Key{Repeat: 1}}, {Key: cellid.Key{Repeat: 2}}, {Key: cellid.Key{Repeat: 2}}, {Key: cellid.Key{Repeat: 3}}}
	for i, want := range []bool{false, false, false, false, true} {
		if got := s.due(cells, i); got != want {
			t.Errorf("due before cell %d: %v, want %v", i, got, want)
		}
	}
	var none *sequential
	if none.due(cells, 4) {
		t.Error("a run without a budget looked")
	}
}

// TestSequentialStopsWhenWorse: at a fixed rate three metrics decide;
// the candidate's CPU per request is 50 % higher (decided worse within a
// few blocks) while its p99 is too noisy to resolve in any budget. The
// gate's answer is fixed once one metric is worse, so the duet stops
// there, not at the budget, and the unresolved p99 stays as it stood.
func TestSequentialStopsWhenWorse(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	var cells []manifest.Cell
	cell := func(arm string, r int, cpuPerReq float64) manifest.Cell {
		cpu := cpuPerReq * 10000 * (1 + 0.02*rng.NormFloat64())
		lat := manifest.Latency{Count: 10000, P50: 0.0002 * (1 + 0.01*rng.NormFloat64()), P99: 0.005 * math.Exp(rng.NormFloat64())}
		return manifest.Cell{Key: cellid.NewArm("nginx", "fast", "simple", "quick", arm, r), Mode: "open", Rate: 2000, DurationS: 5,
			Status: manifest.CellOK, Codes: map[string]int64{"200": 10000}, Expected: []string{"2xx"}, Requests: 10000, ProxyCPUSeconds: &cpu, Latency: lat}
	}
	for r := 1; r <= 60; r++ {
		cells = append(cells, cell("", r, 40e-6), cell(cellid.ArmCandidate, r, 60e-6))
	}
	s := newTestSequential(time.Hour, 60)
	stopped := 0
	for pairs := 2; pairs <= 60; pairs += 2 {
		if why := s.look(cells[:2*pairs], pairs, time.Unix(int64(10*pairs), 0)); why != "" {
			stopped = pairs
			break
		}
	}
	if s.rec.Stopped != manifest.StopWorse || stopped > 12 {
		t.Fatalf("stopped %q after %d pairs", s.rec.Stopped, stopped)
	}
	for _, r := range s.rec.Looks[len(s.rec.Looks)-1].Results {
		want := decide.Unresolved
		if r.Metric == decide.CPUPerRequest {
			want = decide.Worse
		}
		if r.Metric != decide.P50 && r.Outcome != want {
			t.Errorf("%s: %s, want %s", r.Metric, r.Outcome, want)
		}
	}
}

// TestSequentialWarnsOfShortCells: a duet of cells the report cannot judge
// (fewer than three scrapes in the window) says so when it starts; 4 s
// cells do not.
func TestSequentialWarnsOfShortCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		window time.Duration
		warns  bool
	}{{time.Second, true}, {4 * time.Second, false}} {
		var buf strings.Builder
		p := &plan.Expanded{Plan: plan.Default()}
		p.DuetCPUs, p.Budget, p.Repeats = 0.9, plan.Duration(time.Minute), 10
		p.Cells = []plan.Cell{{Key: cellid.New("nginx", "fast", "simple", "1s", 1), Duration: plan.Duration(tc.window)}}
		newSequential(p, time.Unix(0, 0), slog.New(slog.NewTextHandler(&buf, nil)))
		if got := strings.Contains(buf.String(), "too_few_samples"); got != tc.warns {
			t.Errorf("%s cells: warned %v: %q", tc.window, got, buf.String())
		}
	}
}

package runner

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/internal/manifest"
)

// recordedPairs is testdata/duet-*.json: the cells of real A/A duets on
// the lab's 2-core VM (the candidate's quota equal to the baseline's, so
// every difference is noise), as the loadgen wrote them, with the seconds
// a pair took in that run.
type recordedPairs struct {
	Command string `json:"command"`
	// Default says the recording ran make duet's default duet (sliced,
	// 8 s cells): the design whose power the bar holds.
	Default        bool            `json:"default"`
	SecondsPerPair float64         `json:"seconds_per_pair"`
	Cells          []manifest.Cell `json:"cells"`
}

// TestSequentialDuetOnRecordedPairs asks the question a duet answers, "is
// the candidate worse than the baseline by more than the 5 % margin?", of
// the lab's own recorded pairs, through the exact code the loadgen decides
// and stops with (sequential.look): 1000 duets drawn with replacement from
// the pairs of real A/A runs (a pair is kept whole: both cells, their
// disturbance and all), each looked at after every ABBA block until it is
// decided or the default budget ends, at the seconds a pair took in the
// recording. With no change, "worse" must come in at most 5 % of duets
// (the false-alarm rate the anytime intervals promise, asserted). With a
// real 10 % regression (every candidate cell's goodput, latency and CPU
// per request made 1.1 times worse) the share called worse is the duet's
// power on this host's noise: at least 90 % for a recording of make duet's
// default (sliced, 8 s cells), logged for the others (a window per arm,
// 4 s sliced cells), and written down with the recordings in
// docs/decisions.md.
func TestSequentialDuetOnRecordedPairs(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("testdata", "duet-*.json"))
	if len(files) == 0 {
		t.Fatal("no recorded pairs in testdata/duet-*.json")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			var rec recordedPairs
			b, err := os.ReadFile(f)
			if err == nil {
				err = json.Unmarshal(b, &rec)
			}
			if err != nil {
				t.Fatal(err)
			}
			pairs := pairsOf(rec.Cells)
			if len(pairs) < 10 || rec.SecondsPerPair <= 0 {
				t.Fatalf("%d pairs, %g s a pair: too few to draw from", len(pairs), rec.SecondsPerPair)
			}
			// An A/A sample's mean log ratio is its own estimation error,
			// not a change: centre every metric's pairs on zero, so that
			// "no change" is none and the regression is exactly 10 %.
			centre := centring(pairs)
			budget := 10 * time.Minute
			maxPairs := int(budget.Seconds() / rec.SecondsPerPair)
			// The default duet (make duet CPUS=: sliced, 8 s cells) must
			// catch a 10 % regression in 90 % of duets; a recording of
			// another design shows its power on the same host, logged.
			power := 0.0
			if rec.Default {
				power = 0.9
			}
			rng := rand.New(rand.NewPCG(7, 11))
			const trials = 1000
			for _, tc := range []struct {
				name     string
				worse    float64 // the candidate's cells are made this many times worse
				min, max float64 // the share of duets called worse must lie in [min, max]
			}{
				{"no change", 1, 0, 0.05},
				{"10 % regression", 1.1, power, 1},
			} {
				called, decided := 0, 0
				var took []int
				for range trials {
					s := newTestSequential(budget, maxPairs)
					var cells []manifest.Cell
					for n := 1; n <= maxPairs; n++ {
						p := pairs[rng.IntN(len(pairs))]
						cells = append(cells, renumber(p[0], n), scale(renumber(p[1], n), centre.times(tc.worse)))
						if n%2 != 0 {
							continue
						}
						now := time.Unix(0, 0).Add(time.Duration(float64(n) * rec.SecondsPerPair * float64(time.Second)))
						if s.look(cells, n, now) != "" {
							break
						}
					}
					last := s.rec.Looks[len(s.rec.Looks)-1]
					for _, r := range last.Results {
						if r.Outcome == decide.Worse {
							called++
							break
						}
					}
					if s.rec.Stopped == manifest.StopDecided {
						decided++
						took = append(took, last.Pairs)
					}
				}
				share := float64(called) / trials
				sort.Ints(took)
				med := 0
				if len(took) > 0 {
					med = took[len(took)/2]
				}
				t.Logf("%s (%s): called worse in %d of %d duets, decided in %d within %s (at most %d pairs; median %d pairs)",
					tc.name, rec.Command, called, trials, decided, budget, maxPairs, med)
				if share < tc.min || share > tc.max {
					t.Errorf("%s: worse in %.3f of duets, want within [%.2f, %.2f]", tc.name, share, tc.min, tc.max)
				}
			}
		})
	}
}

// pairsOf is the recorded cells paired by repeat: the plan's own cell and
// the candidate's, both run to their end. The A/A control's cells are
// not pairs of this question and are left out.
func pairsOf(cells []manifest.Cell) [][2]manifest.Cell {
	base, cand := map[int]manifest.Cell{}, map[int]manifest.Cell{}
	for _, c := range cells {
		if c.Status != manifest.CellOK {
			continue
		}
		switch c.Arm {
		case "":
			base[c.Repeat] = c
		case cellid.ArmCandidate:
			cand[c.Repeat] = c
		}
	}
	var reps []int
	for r := range cand {
		if _, ok := base[r]; ok {
			reps = append(reps, r)
		}
	}
	sort.Ints(reps)
	out := make([][2]manifest.Cell, 0, len(reps))
	for _, r := range reps {
		out = append(out, [2]manifest.Cell{base[r], cand[r]})
	}
	return out
}

// renumber is c as repeat n of its arm.
func renumber(c manifest.Cell, n int) manifest.Cell {
	c.Key = cellid.NewArm(c.Proxy, c.Origin, c.Scenario, c.Tier, c.Arm, n)
	c.Disturbed = c.Disturbance() // as the runner judges every cell it ends
	return c
}

// factors scale a cell's gated metrics: its goodput (every count), its
// latency percentiles and its proxy CPU per request.
type factors struct{ goodput, p50, p99, cpuPerRequest float64 }

// times is fs with a regression of f on top: f times lower goodput, f
// times higher latency and CPU per request.
func (fs factors) times(f float64) factors {
	return factors{fs.goodput / f, fs.p50 * f, fs.p99 * f, fs.cpuPerRequest * f}
}

// centring is the factors that bring the mean log ratio of every gated
// metric over the undisturbed pairs to zero.
func centring(pairs [][2]manifest.Cell) factors {
	mean := func(name string) float64 {
		sum, n := 0.0, 0
		for _, p := range pairs {
			if p[0].Disturbance() != "" || p[1].Disturbance() != "" {
				continue
			}
			// The pair's ratio as the look decides it: a sliced pair's
			// slice by slice.
			r := manifest.PairRatio(name, p[0].Slices, p[1].Slices)
			if a, b := gatedValue(name, &p[0]), gatedValue(name, &p[1]); math.IsNaN(r) && a > 0 && b > 0 {
				r = math.Log(b / a)
			}
			if !math.IsNaN(r) {
				sum, n = sum+r, n+1
			}
		}
		if n == 0 {
			return 1
		}
		return math.Exp(-sum / float64(n))
	}
	return factors{mean(decide.Goodput), mean(decide.P50), mean(decide.P99), mean(decide.CPUPerRequest)}
}

// scale is c with its gated metrics scaled by fs.
func scale(c manifest.Cell, fs factors) manifest.Cell {
	codes := make(map[string]int64, len(c.Codes))
	for k, v := range c.Codes {
		codes[k] = int64(math.Round(float64(v) * fs.goodput))
	}
	c.Codes = codes
	c.Requests = int64(math.Round(float64(c.Requests) * fs.goodput))
	c.Latency.P50 *= fs.p50
	c.Latency.P99 *= fs.p99
	if c.ProxyCPUSeconds != nil {
		cpu := *c.ProxyCPUSeconds * fs.goodput * fs.cpuPerRequest // per request: times cpuPerRequest
		c.ProxyCPUSeconds = &cpu
	}
	if c.Slices != nil { // an arm of a sliced duet: every slice alike
		sl := *c.Slices
		sl.Each = slices.Clone(sl.Each)
		for i := range sl.Each {
			e := &sl.Each[i]
			e.Good = int64(math.Round(float64(e.Good) * fs.goodput))
			e.Requests = int64(math.Round(float64(e.Requests) * fs.goodput))
			if e.CPUS != nil {
				cpu := *e.CPUS * fs.goodput * fs.cpuPerRequest
				e.CPUS = &cpu
			}
		}
		c.Slices = &sl
	}
	return c
}

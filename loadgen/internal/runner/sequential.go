package runner

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/plan"
)

// sequential is a duet with a budget: after every whole ABBA block (an
// even number of pairs) it decides every gated metric of every cell key
// (decide.Gated) from the manifest's cells, on anytime-valid intervals
// (decide.Sequence) whose family shares the false-alarm rate, and stops
// the run once all are decided, or when another block would not fit the
// budget. Stopping as soon as it is decided keeps the false-alarm rate,
// because the intervals hold at every look at once.
type sequential struct {
	opts   decide.Options
	budget time.Duration
	start  time.Time
	keep   bool            // keep the pairs the host disturbed (plan.KeepDisturbed)
	left   map[string]bool // the pairs left out so far, each logged once
	rec    *manifest.Sequential
	log    *slog.Logger
}

// reportMinWindow is the shortest window that holds the three 1 s
// Prometheus scrapes the report needs to judge a cell.
const reportMinWindow = 4 * time.Second

// newSequential is the sequential look of p's run, nil unless p is a duet
// with a budget. It warns when the duet's cells are too short for the
// report.
func newSequential(p *plan.Expanded, now time.Time, log *slog.Logger) *sequential {
	if p.Budget <= 0 || p.Treated() != cellid.ArmCandidate {
		return nil
	}
	for _, c := range p.Cells {
		if d := time.Duration(c.Duration); d < reportMinWindow {
			log.Warn("duet: cells shorter than the report can judge: the loadgen decides from its own record, but the report will call these cells too_few_samples; use 4 s or longer (make duet's default)",
				"cell", c.ID, "window", d.String(), "least", reportMinWindow.String())
			break
		}
	}
	o := decide.Options{Margin: p.Margin, ErrorMargin: decide.DefaultErrorMargin, Alpha: decide.DefaultAlpha, Anytime: true, TOpt: decide.DefaultTOpt}
	return &sequential{opts: o, budget: time.Duration(p.Budget), start: now, log: log, keep: p.KeepDisturbed, left: map[string]bool{},
		rec: &manifest.Sequential{Margin: o.Margin, Alpha: o.Alpha, BudgetS: time.Duration(p.Budget).Seconds(), MaxPair: p.Repeats}}
}

// due says whether a look comes before cells[i]: a round begins and the
// one before it closed an ABBA block.
func (s *sequential) due(cells []plan.Cell, i int) bool {
	return s != nil && i > 0 && cells[i].Repeat != cells[i-1].Repeat && cells[i-1].Repeat%2 == 0
}

// look decides every gated metric over the pairs measured so far and says
// why to stop ("" to go on).
func (s *sequential) look(done []manifest.Cell, pairs int, now time.Time) string {
	results := s.decide(done)
	s.rec.Looks = append(s.rec.Looks, manifest.Look{Pairs: pairs, At: now, Results: results})
	all, worse := len(results) > 0, false
	for _, r := range results {
		all = all && r.Outcome.Decided()
		worse = worse || r.Outcome == decide.Worse
		res := "n/a"
		if r.Resolution != nil {
			res = pct(*r.Resolution)
		}
		s.log.Info(fmt.Sprintf("duet after %d pairs: %s %s: %s (resolves ±%s)", pairs, r.Key, r.Metric, r.Text, res))
	}
	elapsed := now.Sub(s.start)
	switch {
	case all:
		s.rec.Stopped = manifest.StopDecided
	case worse:
		// The gate fails on any gated metric worse by more than the
		// margin; an anytime-valid interval stays valid when it stops
		// here, so more pairs would not change the answer.
		s.rec.Stopped = manifest.StopWorse
	case pairs >= s.rec.MaxPair:
		s.rec.Stopped = manifest.StopPairs
	case elapsed+2*elapsed/time.Duration(max(pairs, 1)) > s.budget:
		s.rec.Stopped = manifest.StopBudget
	}
	if s.rec.Stopped != "" {
		s.log.Info("duet stops", "why", s.rec.Stopped, "pairs", pairs, "elapsed", elapsed.Round(time.Second).String(), "budget", s.budget.String())
	}
	return s.rec.Stopped
}

// decide is every key's gated metrics as one family, paired by repeat
// over the cells that ran their whole window.
func (s *sequential) decide(done []manifest.Cell) []manifest.LookResult {
	type side struct{ base, cand map[int]*manifest.Cell }
	by := map[string]*side{}
	for i := range done {
		c := &done[i]
		if c.Status != manifest.CellOK || (c.Arm != "" && c.Arm != cellid.ArmCandidate) {
			continue
		}
		k := c.PlanKey()
		if by[k] == nil {
			by[k] = &side{base: map[int]*manifest.Cell{}, cand: map[int]*manifest.Cell{}}
		}
		if c.Arm == "" {
			by[k].base[c.Repeat] = c
		} else {
			by[k].cand[c.Repeat] = c
		}
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var series []decide.Series
	var at []string
	for _, k := range keys {
		sd := by[k]
		var reps []int
		for r, c := range sd.cand {
			switch b := sd.base[r]; {
			case b == nil:
			case !s.keep && (b.Disturbed != "" || c.Disturbed != ""):
				if id := fmt.Sprintf("%s r%d", k, r); !s.left[id] {
					s.left[id] = true
					s.log.Info("duet: pair left out, the host disturbed it; another pair is measured instead", "key", k, "pair", r,
						"why", strings.Join(slices.DeleteFunc([]string{b.Disturbed, c.Disturbed}, func(s string) bool { return s == "" }), "; "))
				}
			default:
				reps = append(reps, r)
			}
		}
		slices.Sort(reps)
		if len(reps) == 0 {
			continue
		}
		for _, name := range decide.Gated(sd.cand[reps[0]].Mode == "closed") {
			sr := decide.Series{Name: name, Better: -1}
			if name == decide.Goodput {
				sr.Better = +1
			}
			for _, r := range reps {
				a, b := sd.base[r], sd.cand[r]
				sr.Base = append(sr.Base, gatedValue(name, a))
				sr.Cand = append(sr.Cand, gatedValue(name, b))
				sr.Ratios = append(sr.Ratios, manifest.PairRatio(name, a.Slices, b.Slices))
			}
			series, at = append(series, sr), append(at, k)
		}
	}
	out := make([]manifest.LookResult, 0, len(series))
	for i, r := range decide.Decide(series, s.opts) {
		out = append(out, manifest.NewLookResult(at[i], r))
	}
	return out
}

// gatedValue reads a gated metric from the loadgen's own record of a
// cell: goodput from the responses with an expected status, latency from
// the exact histogram, the proxy's CPU per request from its cgroup's CPU
// time over the responses; an arm of a sliced duet's goodput and CPU per
// request in its typical slice (manifest.Slices.Typical), though a sliced
// pair is decided on its slice-by-slice ratio (manifest.PairRatio). NaN
// when unknown (the pair is left out).
func gatedValue(name string, c *manifest.Cell) float64 {
	if sl := c.Slices; sl != nil && len(sl.Each) > 0 {
		switch name {
		case decide.Goodput:
			return sl.Typical(manifest.Slice.Goodput)
		case decide.CPUPerRequest:
			return sl.Typical(manifest.Slice.CPUPerRequest)
		}
	}
	switch name {
	case decide.Goodput:
		var good int64
		for code, n := range c.Codes {
			if scenario.Matches(code, c.Expected) {
				good += n
			}
		}
		if s := c.Seconds(); s > 0 {
			return float64(good) / s
		}
	case decide.P50:
		return c.Latency.P50
	case decide.P99:
		return c.Latency.P99
	case decide.CPUPerRequest:
		if c.ProxyCPUSeconds != nil && c.Requests > 0 {
			return *c.ProxyCPUSeconds / float64(c.Requests)
		}
	}
	return math.NaN()
}

func pct(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) }

// trim ends the run's plan at cell i (a sequential duet decided or out of
// budget): the plan, plan.json and the manifest's plan then hold the
// pairs measured, as if the run had planned them.
func (r *Runner) trim(i int) error {
	p := r.Plan
	p.Cells = p.Cells[:i]
	p.Repeats = p.Cells[i-1].Repeat
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	r.m.Plan = b
	return writeAtomic(filepath.Join(r.dir, "plan.json"), append(b, '\n'))
}

package manifest

import (
	"fmt"
	"math"
	"time"

	"proxybench/internal/cputime"

	"proxybench/internal/decide"
)

// Sequential is a sequential duet's record: what it was asked, every look
// at the pairs and why it stopped. The reporter decides again from its
// own cells; this is what the loadgen saw when it chose to stop.
type Sequential struct {
	Margin  float64 `json:"margin"`
	Alpha   float64 `json:"alpha"`
	BudgetS float64 `json:"budget_seconds"`
	MaxPair int     `json:"max_pairs"`
	Looks   []Look  `json:"looks"`
	// Stopped says why no more pairs were measured: StopDecided,
	// StopWorse, StopBudget or StopPairs; "" while the run goes on.
	Stopped string `json:"stopped,omitempty"`
}

// Why a sequential duet stopped.
const (
	StopDecided = "decided"   // every gated metric of every cell key was decided
	StopWorse   = "worse"     // a gated metric was decided worse: the gate's answer cannot change
	StopBudget  = "budget"    // another block of pairs would not fit the budget
	StopPairs   = "max_pairs" // the plan's most pairs were measured
)

// Look is one look at the pairs: after an even number of them (a whole
// ABBA block).
type Look struct {
	Pairs   int          `json:"pairs"`
	At      time.Time    `json:"at"`
	Results []LookResult `json:"results"`
}

// LookResult is one cell key's gated metric at a look: its answer, the
// change and its interval (relative, absolute for the error ratio), and
// the interval's half-width; an unknown or unbounded number is null.
type LookResult struct {
	Key        string         `json:"key"` // cellid.Key.PlanKey
	Metric     string         `json:"metric"`
	Outcome    decide.Outcome `json:"outcome"`
	Pairs      int            `json:"pairs"` // pairs with the metric known on both sides
	Change     *float64       `json:"change"`
	Low        *float64       `json:"low"`
	High       *float64       `json:"high"`
	Resolution *float64       `json:"resolution"`
	Text       string         `json:"text"` // the answer in words
}

// NewLookResult records r, key's answer at a look.
func NewLookResult(key string, r decide.Result) LookResult {
	fin := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return LookResult{Key: key, Metric: r.Name, Outcome: r.Outcome, Pairs: r.Test.N, Change: fin(r.Change), Low: fin(r.Low), High: fin(r.High),
		Resolution: fin(r.Resolution), Text: r.String()}
}

// Thresholds of a disturbed window, shared with the reporter's
// contended flag: a role's CPUs gave this share of the window or more to
// processes outside the cell while its threads waited this long per
// second or more for a CPU.
const (
	ForeignStarvedShare = 0.25
	RunDelayStarvedPerS = 0.10
)

// Disturbance says what of the host disturbed c's window, "" when
// nothing did: the hypervisor stole StealStarvedShare or more of some
// second of the host's CPUs, the loadgen could not run for long enough
// to own the tail (Stall.Disturbing), or some role's CPUs spent
// ForeignStarvedShare or more of the window on other processes while its
// threads waited RunDelayStarvedPerS or more per second. Such a window
// measured the host's neighbours, not the proxy: a paired comparison
// leaves its pair out, and the sequential duet measures another.
func (c *Cell) Disturbance() string {
	if c.StealWorstSecond != nil && *c.StealWorstSecond >= StealStarvedShare {
		return fmt.Sprintf("the hypervisor stole %.0f %% of a second of the host's CPUs (>= %.0f %%)", 100**c.StealWorstSecond, 100*StealStarvedShare)
	}
	if why := c.Stall.Disturbing(c.Start, c.DurationS); why != "" {
		return why
	}
	if c.Contention == nil || c.Contention.WindowSeconds <= 0 {
		return ""
	}
	w := c.Contention.WindowSeconds
	for _, r := range c.Contention.Roles {
		cpus, err := cputime.ParseList(r.CPUs)
		if err != nil || len(cpus) == 0 || r.ForeignSeconds == nil || r.RunDelaySeconds == nil {
			continue
		}
		share, wait := *r.ForeignSeconds/(w*float64(len(cpus))), *r.RunDelaySeconds/w
		if share >= ForeignStarvedShare && wait >= RunDelayStarvedPerS {
			return fmt.Sprintf("%.0f %% of the %s's CPUs %s went to other processes (>= %.0f %%) while it waited %.2f s per s for a CPU",
				100*share, r.Name(), r.CPUs, 100*ForeignStarvedShare, wait)
		}
	}
	return ""
}

package manifest

import (
	"time"

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
	// StopBudget or StopPairs; "" while the run goes on.
	Stopped string `json:"stopped,omitempty"`
}

// Why a sequential duet stopped.
const (
	StopDecided = "decided"   // every gated metric of every cell key was decided
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

// LookResult is one cell key's gated metric at a look.
type LookResult struct {
	Key string `json:"key"` // cellid.Key.PlanKey
	decide.Result
}

// Stolen says whether the hypervisor stole StealStarvedShare or more of
// some second of c's window: such a cell measured the host's neighbours,
// and a paired comparison leaves its pair out (the sequential duet then
// measures another).
func (c *Cell) Stolen() bool {
	return c.StealWorstSecond != nil && *c.StealWorstSecond >= StealStarvedShare
}

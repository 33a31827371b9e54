package build

import (
	"fmt"
	"time"

	"proxybench/internal/manifest"
)

// sequentialNote says how a sequential duet ended: why it stopped, after
// how many pairs of its most, and in how much of its budget; "" for any
// other run.
func sequentialNote(m *manifest.Manifest) string {
	if m == nil || m.Sequential == nil || len(m.Sequential.Looks) == 0 {
		return ""
	}
	s := m.Sequential
	last := s.Looks[len(s.Looks)-1]
	why := map[string]string{
		manifest.StopDecided: "every gated metric was decided",
		manifest.StopWorse:   "a gated metric was decided worse, so the gate's answer could not change (the others as they stood)",
		manifest.StopBudget:  "another block of pairs would not have fitted the budget",
		manifest.StopPairs:   "the plan's most pairs were measured",
	}[s.Stopped]
	if why == "" {
		why = "the run ended before a decision (interrupted or failed)"
	}
	spent := last.At.Sub(m.Started).Round(time.Second)
	return fmt.Sprintf("Sequential duet at a margin of ±%.1f %%: stopped after %d pairs (of at most %d) and %s of a %s budget: %s; it looked %d times (after every ABBA block).",
		100*s.Margin, last.Pairs, s.MaxPair, spent, time.Duration(s.BudgetS*float64(time.Second)), why, len(s.Looks))
}

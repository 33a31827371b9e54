package diff

import (
	"fmt"
	"slices"
	"strings"

	"proxybench/reporter/internal/report"
)

// Statuses of one cell key.
const (
	KeyOK         = "ok"
	KeyMissing    = "missing in B"
	KeyFailed     = "failed in B"
	KeySkipped    = "skipped in B"
	KeyInvalidUp  = "more invalid repeats in B"
	KeyOnlyInB    = "only in B"
	KeyFailedInAB = "failed in A and B"
)

// Side counts the repeats of one cell key in one run.
type Side struct {
	Repeats int      // measured cells (report.cells)
	Valid   int      // cells whose verdict is not invalid (suspect counts)
	Failed  int      // cells the loadgen marked failed or aborted
	NotRun  int      // repeats listed in report.not_run
	Reasons []string // distinct reasons: invalid flags of failed/invalid cells, then not_run reasons
}

// Planned is every repeat the run knows of: measured plus not run.
func (s Side) Planned() int { return s.Repeats + s.NotRun }

// Unusable counts the planned repeats that do not measure the proxy:
// invalid cells and repeats not run.
func (s Side) Unusable() int { return s.Planned() - s.Valid }

// String is "n valid of m" with what the others were.
func (s Side) String() string {
	if s.Planned() == 0 {
		return "–"
	}
	out := fmt.Sprintf("%d valid of %d", s.Valid, s.Planned())
	var extra []string
	if inv := s.Repeats - s.Valid - s.Failed; inv > 0 {
		extra = append(extra, fmt.Sprintf("%d invalid", inv))
	}
	if s.Failed > 0 {
		extra = append(extra, fmt.Sprintf("%d failed", s.Failed))
	}
	if s.NotRun > 0 {
		extra = append(extra, fmt.Sprintf("%d not run", s.NotRun))
	}
	if len(extra) > 0 {
		out += " (" + strings.Join(extra, ", ") + ")"
	}
	return out
}

// KeyRow is the verdict on one cell key as a whole.
type KeyRow struct {
	Key    string
	A, B   Side
	Status string // one of the Key* statuses
	Reason string // the status in words, e.g. "failed in B: proxy died"
	Gate   bool   // counts as a regression for the exit code
}

// judgeKey decides the key-level status of a key that has cells in A.
func judgeKey(key string, a, b Side) KeyRow {
	kr := KeyRow{Key: key, A: a, B: b, Status: KeyOK}
	measuredA := a.Repeats > a.Failed // A measured something to lose
	why := func(s Side) string {
		if len(s.Reasons) == 0 {
			return "no reason recorded"
		}
		return strings.Join(s.Reasons, "; ")
	}
	switch {
	case b.Repeats == 0 && b.NotRun == 0:
		kr.Status, kr.Reason, kr.Gate = KeyMissing, KeyMissing, true
	case b.Repeats == 0:
		kr.Status, kr.Reason, kr.Gate = KeySkipped, KeySkipped+": "+why(b), true
	case b.Failed == b.Repeats && !measuredA:
		kr.Status, kr.Reason = KeyFailedInAB, KeyFailedInAB+": "+why(b)
	case b.Failed == b.Repeats:
		kr.Status, kr.Reason, kr.Gate = KeyFailed, KeyFailed+": "+why(b), true
	case b.Unusable()*a.Planned() > a.Unusable()*b.Planned(): // share of unusable repeats rose
		kr.Status, kr.Gate = KeyInvalidUp, true
		kr.Reason = fmt.Sprintf("invalid repeats %d/%d → %d/%d: %s", a.Unusable(), a.Planned(), b.Unusable(), b.Planned(), why(b))
	}
	if (kr.Status == KeyMissing || kr.Status == KeySkipped) && !measuredA {
		kr.Gate = false
		kr.Reason += " (failed in A too)"
	}
	return kr
}

// index groups a run's cells of the plan's own arm by cell key. Cells of
// other arms (the A/A control, a duet's candidate, the observer's arm) are
// compared inside their run (CompareRun), not across runs.
func index(r *report.Report) map[string][]*report.Cell {
	m := map[string][]*report.Cell{}
	for i := range r.Cells {
		if c := &r.Cells[i]; c.Arm == "" {
			m[c.GroupKey()] = append(m[c.GroupKey()], c)
		}
	}
	return m
}

// sides counts each key's repeats: cells from g, not-run repeats from
// r.NotRun (whose ids carry the key).
func sides(r *report.Report, g map[string][]*report.Cell) map[string]Side {
	out := map[string]Side{}
	for k, cells := range g {
		s := Side{Repeats: len(cells)}
		for _, c := range cells {
			if c.Validity.Verdict != report.Invalid {
				s.Valid++
				continue
			}
			failed := c.Failed
			for _, f := range c.Validity.Flags {
				switch {
				case f.Code == report.FlagFailed:
					failed = true
					s.addReason(f.Reason)
				case f.Severity == report.Invalid:
					s.addReason(f.Code + ": " + f.Reason)
				}
			}
			if failed {
				s.Failed++
			}
		}
		out[k] = s
	}
	for _, nr := range r.NotRun {
		k := nr.GroupKey()
		s := out[k]
		s.NotRun++
		reason := nr.Reason
		if reason == "" {
			reason = "not run"
		}
		s.addReason(reason)
		out[k] = s
	}
	return out
}

// addReason adds a reason once; empty says nothing and is left out.
func (s *Side) addReason(reason string) {
	if reason != "" && !slices.Contains(s.Reasons, reason) {
		s.Reasons = append(s.Reasons, reason)
	}
}

// values are the metric over the key's repeats: valid repeats (all when
// none is valid), except the error ratio, which counts every repeat that has
// one: errors are what an invalid repeat must not hide.
func values(cells []*report.Cell, metric string) []float64 {
	m, ok := report.Metric(metric)
	if !ok {
		return nil
	}
	get := m.Get
	pick := func(ok func(*report.Cell) bool) []float64 {
		var out []float64
		for _, c := range cells {
			if v := get(c); ok(c) && v.Known() {
				out = append(out, float64(v))
			}
		}
		return out
	}
	all := func(*report.Cell) bool { return true }
	if report.Absolute(metric) {
		return pick(all)
	}
	v := pick(func(c *report.Cell) bool { return c.Validity.Verdict != report.Invalid })
	if len(v) == 0 {
		v = pick(all)
	}
	return v
}

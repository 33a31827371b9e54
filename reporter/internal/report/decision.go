package report

import (
	"proxybench/internal/cellid"
	"proxybench/internal/decide"
)

// Question is what a run's comparisons are decided at: the margin (the
// plan's margin, 5 % unless it names one), the error ratio's absolute
// margin and the family's false-alarm rate (package decide).
type Question struct {
	Margin      float64 `json:"margin"`
	ErrorMargin float64 `json:"error_margin"`
	Alpha       float64 `json:"alpha"`
}

// DefaultQuestion is the documented default.
var DefaultQuestion = Question{Margin: decide.DefaultMargin, ErrorMargin: decide.DefaultErrorMargin, Alpha: decide.DefaultAlpha}

// Options is the question as package decide takes it, for arm: the
// duet's candidate and the A/A control are decided on anytime intervals
// (a duet stops as soon as it is decided), the observer's arm, which runs
// its planned pairs, on fixed ones.
func (q Question) Options(arm string) decide.Options {
	o := decide.Options{Margin: q.Margin, ErrorMargin: q.ErrorMargin, Alpha: q.Alpha, TOpt: decide.DefaultTOpt}
	o.Anytime = arm != cellid.ArmUnobserved
	return o
}

// QuestionOf is r's question, the default for a report built before
// reports had one.
func QuestionOf(r *Report) Question {
	if r.Question == nil {
		return DefaultQuestion
	}
	return *r.Question
}

// Closed says whether a cell ran a closed loop (no offered rate).
func (c *Cell) Closed() bool { return !c.TargetRateRPS.Known() || c.TargetRateRPS == 0 }

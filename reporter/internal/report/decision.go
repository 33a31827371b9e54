package report

import (
	"encoding/json"

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
	// KeepDisturbed pairs the cells the host disturbed like any other
	// (the plan's keep_disturbed: a host shared by design).
	KeepDisturbed bool `json:"keep_disturbed,omitempty"`
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

// Decision is a decide.Result that writes its unknown numbers (no
// interval below 2 pairs) as JSON null and reads them back as NaN:
// encoding/json refuses a NaN float, so a bare decide.Result of a
// one-repeat run would fail report.json and `diff -json`.
type Decision struct{ decide.Result }

type intervalJSON struct {
	N         int  `json:"n"`
	Mean      Num  `json:"mean"`
	Low       Num  `json:"low"`
	High      Num  `json:"high"`
	SD        Num  `json:"sd"`
	Level     Num  `json:"level"`
	Anytime   bool `json:"anytime"`
	HalfWidth Num  `json:"half_width"`
}

type decisionJSON struct {
	Name       string         `json:"metric"`
	Outcome    decide.Outcome `json:"outcome"`
	Test       intervalJSON   `json:"interval"`
	Change     Num            `json:"change"`
	Low        Num            `json:"low"`
	High       Num            `json:"high"`
	Margin     Num            `json:"margin"`
	Resolution Num            `json:"resolution"`
	Absolute   bool           `json:"absolute,omitempty"`
}

// MarshalJSON writes d with decide.Result's field names, NaN as null.
func (d Decision) MarshalJSON() ([]byte, error) {
	r, iv := d.Result, d.Test
	return json.Marshal(decisionJSON{Name: r.Name, Outcome: r.Outcome,
		Test: intervalJSON{N: iv.N, Mean: Num(iv.Mean), Low: Num(iv.Low), High: Num(iv.High), SD: Num(iv.SD), Level: Num(iv.Level),
			Anytime: iv.Anytime, HalfWidth: Num(iv.HalfWidth)},
		Change: Num(r.Change), Low: Num(r.Low), High: Num(r.High), Margin: Num(r.Margin), Resolution: Num(r.Resolution), Absolute: r.Absolute})
}

// UnmarshalJSON reads what MarshalJSON writes; a missing or null number
// is NaN.
func (d *Decision) UnmarshalJSON(b []byte) error {
	n := NaN()
	v := decisionJSON{Test: intervalJSON{Mean: n, Low: n, High: n, SD: n, Level: n, HalfWidth: n},
		Change: n, Low: n, High: n, Margin: n, Resolution: n}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	t := v.Test
	d.Result = decide.Result{Name: v.Name, Outcome: v.Outcome,
		Test: decide.Interval{N: t.N, Mean: float64(t.Mean), Low: float64(t.Low), High: float64(t.High), SD: float64(t.SD),
			Level: float64(t.Level), Anytime: t.Anytime, HalfWidth: float64(t.HalfWidth)},
		Change: float64(v.Change), Low: float64(v.Low), High: float64(v.High), Margin: float64(v.Margin),
		Resolution: float64(v.Resolution), Absolute: v.Absolute}
	return nil
}

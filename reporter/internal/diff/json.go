package diff

import (
	"encoding/json"
	"io"

	"proxybench/reporter/internal/report"
)

// JSONSchema names the layout of `reporter diff -json`; it changes when a
// field changes meaning or is removed.
const JSONSchema = "proxybench.diff/v2"

// Modes of a diff (the JSON "mode").
const (
	ModeRuns = "runs" // two separate runs, -a and -b
	ModeRun  = "run"  // one run's interleaved arms, -run
)

type jsonSide struct {
	Repeats int      `json:"repeats"`
	Valid   int      `json:"valid"`
	Failed  int      `json:"failed"`
	NotRun  int      `json:"not_run"`
	Reasons []string `json:"reasons,omitempty"`
}

type jsonKey struct {
	Key    string   `json:"key"`
	A      jsonSide `json:"a"`
	B      jsonSide `json:"b"`
	Status string   `json:"status"`
	Reason string   `json:"reason,omitempty"`
	Gate   bool     `json:"gate"`
}

type jsonRow struct {
	Key      string          `json:"key"`
	Metric   string          `json:"metric"`
	A        []report.Num    `json:"a"`
	B        []report.Num    `json:"b"`
	CentreA  report.Num      `json:"centre_a"`
	CentreB  report.Num      `json:"centre_b"`
	SpreadA  report.Num      `json:"ci95_half_width_a"`
	SpreadB  report.Num      `json:"ci95_half_width_b"`
	Change   report.Num      `json:"change"`
	CILow    report.Num      `json:"low"`
	CIHigh   report.Num      `json:"high"`
	P        report.Num      `json:"p"`
	PHolm    report.Num      `json:"p_holm"`
	Decision report.Decision `json:"decision"`
	Gated    bool            `json:"gated"`
	Verdict  string          `json:"verdict"`
	Gate     bool            `json:"gate"`
}

type jsonRuns struct {
	Schema      string            `json:"schema"`
	Mode        string            `json:"mode"`
	A           string            `json:"a"`
	B           string            `json:"b"`
	Alpha       float64           `json:"alpha"`
	Margin      float64           `json:"margin"`
	ErrorMargin float64           `json:"error_margin"`
	Regressions int               `json:"regressions"`
	Unlike      []string          `json:"unlike,omitempty"`
	FloorA      report.NoiseFloor `json:"noise_floor_a"`
	FloorB      report.NoiseFloor `json:"noise_floor_b"`
	Keys        []jsonKey         `json:"keys"`
	Rows        []jsonRow         `json:"rows"`
	OnlyInA     []string          `json:"only_in_a,omitempty"`
	OnlyInB     []string          `json:"only_in_b,omitempty"`
	Note        string            `json:"note"`
}

// JSON writes the comparison of two runs (schema JSONSchema, mode
// "runs"); unknown numbers are null.
func (res Result) JSON(w io.Writer) error {
	out := jsonRuns{Schema: JSONSchema, Mode: ModeRuns, A: res.A, B: res.B, Alpha: res.Opts.Alpha, Margin: res.Opts.Margin,
		ErrorMargin: res.Opts.ErrorMargin, Regressions: res.Regressions, Unlike: res.Unlike, FloorA: res.FloorA, FloorB: res.FloorB,
		Keys: jsonKeys(res.Keys), Rows: []jsonRow{}, OnlyInA: res.OnlyInA, OnlyInB: res.OnlyInB, Note: DriftNote}
	for _, r := range res.Rows {
		out.Rows = append(out.Rows, jsonRow{Key: r.Key, Metric: r.Metric, A: nums(r.A), B: nums(r.B), CentreA: report.Num(r.CentreA),
			CentreB: report.Num(r.CentreB), SpreadA: report.Num(r.SpreadA), SpreadB: report.Num(r.SpreadB), Change: report.Num(r.Change),
			CILow: report.Num(r.CILow), CIHigh: report.Num(r.CIHigh), P: report.Num(r.P), PHolm: report.Num(r.PHolm),
			Decision: report.Decision{Result: r.Decision}, Gated: r.Gated, Verdict: r.Verdict, Gate: r.Gate})
	}
	return encode(w, out)
}

type jsonArmRow struct {
	Key    string `json:"key"`
	Metric string `json:"metric"`
	report.Paired
	Significant bool   `json:"significant"` // p_holm < alpha
	Verdict     string `json:"verdict"`
	Gate        bool   `json:"gate"`
}

type jsonArm struct {
	Arm      string       `json:"arm"`
	Keys     []jsonKey    `json:"keys,omitempty"`
	Rows     []jsonArmRow `json:"rows"`
	Unpaired []string     `json:"unpaired,omitempty"`
}

type jsonRun struct {
	Schema      string            `json:"schema"`
	Mode        string            `json:"mode"`
	Run         string            `json:"run"`
	Alpha       float64           `json:"alpha"`
	Margin      float64           `json:"margin"`
	ErrorMargin float64           `json:"error_margin"`
	Regressions int               `json:"regressions"`
	Drifted     []string          `json:"control_drifted,omitempty"`
	Floor       report.NoiseFloor `json:"noise_floor"`
	Arms        []jsonArm         `json:"arms"`
}

// JSON writes the interleaved comparison (schema JSONSchema, mode "run"):
// per arm its rows with the paired change, its interval, p, Holm's p and
// whether it is significant; unknown numbers are null.
func (res RunResult) JSON(w io.Writer) error {
	out := jsonRun{Schema: JSONSchema, Mode: ModeRun, Run: res.Run, Alpha: res.Opts.Alpha, Margin: res.Opts.Margin,
		ErrorMargin: res.Opts.ErrorMargin, Regressions: res.Regressions, Drifted: res.Drifted, Floor: res.Floor, Arms: []jsonArm{}}
	for _, set := range res.Arms {
		a := jsonArm{Arm: set.Arm, Keys: jsonKeys(set.Keys), Rows: []jsonArmRow{}, Unpaired: set.Unpaired}
		for _, r := range set.Rows {
			a.Rows = append(a.Rows, jsonArmRow{Key: r.Key, Metric: r.Metric, Paired: r.Paired,
				Significant: r.Significant(res.Opts.Alpha), Verdict: r.Verdict, Gate: r.Gate})
		}
		out.Arms = append(out.Arms, a)
	}
	return encode(w, out)
}

func jsonKeys(keys []KeyRow) []jsonKey {
	var out []jsonKey
	for _, k := range keys {
		out = append(out, jsonKey{Key: k.Key, A: jsonSide(k.A), B: jsonSide(k.B), Status: k.Status, Reason: k.Reason, Gate: k.Gate})
	}
	return out
}

func nums(xs []float64) []report.Num {
	out := make([]report.Num, len(xs))
	for i, x := range xs {
		out[i] = report.Num(x)
	}
	return out
}

func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

package render

import (
	"bytes"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

// TestNoiseSection: a run with the A/A control and a duet states its
// noise floor and the control's result, shows the candidate in section 7
// with its answers at the margin (goodput 30 % lower: worse, and gated in
// a closed loop) and never in the winners table, and names arm cells in
// the summary. 10 pairs, not the synth default 5: the duet's
// anytime-valid interval is unbounded at 5 pairs and decides nothing.
func TestNoiseSection(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 7, Run: "duet", Repeats: 10, CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate, ArmGoodput: 0.7, ArmP99: 0.5}.Report()
	var md bytes.Buffer
	if err := Markdown(&md, Document(r)); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"## 7. Noise floor",
		"**Noise floor of this run: goodput req/s ±",
		"Margin asked: ±5 %. Decided: nginx.fast.simple.quick goodput req/s: worse by more than 5.0 % (resolves ±",
		"A/A control nginx.fast.simple.quick, 10 pairs: goodput req/s ", "equivalent or not resolved, as a control must be",
		"**A/A control: nginx.fast.simple.quick measured again next to its twin in each round (10 pairs)**",
		"**Duet: candidate against baseline, haproxy.fast.simple.quick (10 pairs)**",
		"| ● goodput req/s | ", "| ✗ worse by more than 5.0 % |", "| p99 | ", "| ⚠ better by more than 5.0 % |",
		"nginx → fast (simple, quick, candidate, r3)",
		"`reporter diff -run duet` gates on it (exit 4 on a regression).",
		"Noise floor of this run: goodput req/s ±",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The candidate halves p99: were it in the winners table, it would win.
	win := winnerTable(r)
	if len(win.Rows) != 1 || win.Rows[0][2].Text != "nginx" {
		t.Fatalf("winners %+v, want nginx from the plan's own cells", win.Rows)
	}
	for id := range winners(r) {
		if strings.Contains(id, ".candidate.") || strings.Contains(id, ".aa.") {
			t.Errorf("%s marked a winner", id)
		}
	}
}

// TestMarginVerdicts: a margin is called from the measured spread only.
func TestMarginVerdicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		n       synth.Noisy
		caveat  string // "" = clear
		verdict string
	}{
		{"one repeat", synth.Noisy{Seed: 1, Repeats: 1, P99: map[string]float64{"haproxy": 0.004}}, "spread not measured (1 repeat): no verdict on the margin", ""},
		{"overlapping CIs", synth.Noisy{Seed: 2, LatencyCV: 0.3, P99: map[string]float64{"haproxy": 0.0021}}, "not resolved at ±5 %: the winner's p99 ", ""},
		{"clear", synth.Noisy{Seed: 3, LatencyCV: 0.01, Control: true, P99: map[string]float64{"haproxy": 0.004}}, "", "✓ clear"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.n.Run = tc.name
			r := tc.n.Report()
			win := winnerTable(r)
			trust := win.Rows[0][len(win.Rows[0])-1].Text
			if tc.caveat != "" && !strings.Contains(trust, tc.caveat) || tc.verdict != "" && trust != tc.verdict {
				t.Fatalf("trust %q, want %q%q", trust, tc.caveat, tc.verdict)
			}
			// The winner is bold, and its repeats marked, only when its
			// margin is decided.
			if clear := tc.verdict != ""; win.Rows[0][2].Best != clear || (len(winners(r)) > 0) != clear {
				t.Fatalf("winner %+v bold, %d repeats marked; want marked %v", win.Rows[0][2], len(winners(r)), clear)
			}
		})
	}
	// Apart by more than their CIs but by less than the margin: resolved
	// as equivalent, so no winner is marked.
	r := synth.Noisy{Seed: 4, Run: "within", LatencyCV: 0.01, P99: map[string]float64{"haproxy": 0.00206}}.Report()
	g := map[string]*report.Group{}
	for i := range r.Groups {
		g[r.Groups[i].Proxy] = &r.Groups[i]
	}
	cav := marginCaveats(r, g["nginx"], g["haproxy"], 0.03)
	if len(cav) != 1 || !strings.HasPrefix(cav[0], "equivalent within ±5 %: the winner's p99 -") {
		t.Fatalf("caveats %q", cav)
	}
	if len(winners(r)) != 0 {
		t.Fatalf("a lead inside the margin marked winners %v", winners(r))
	}
	// The same lead at a margin of 1 %: beyond it, a winner.
	r.Question = &report.Question{Margin: 0.01, ErrorMargin: 0.005, Alpha: 0.05}
	if cav := marginCaveats(r, g["nginx"], g["haproxy"], 0.03); len(cav) != 0 || len(winners(r)) != 5 {
		t.Fatalf("at a 1 %% margin: caveats %q, winners %v", cav, winners(r))
	}
}

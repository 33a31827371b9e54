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
// and never in the winners table, and names arm cells in the summary.
func TestNoiseSection(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 7, Run: "duet", CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate, ArmGoodput: 0.7, ArmP99: 0.5}.Report()
	var md bytes.Buffer
	if err := Markdown(&md, Document(r)); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"## 7. Noise floor",
		"**Noise floor of this run: goodput req/s ±",
		"A/A control nginx.fast.simple.quick, 5 pairs: goodput req/s ",
		"**A/A control: nginx.fast.simple.quick measured again at the end of each round (5 pairs)**",
		"**Duet: candidate against baseline, haproxy.fast.simple.quick (5 pairs)**",
		"| goodput req/s | ", "✗ regressed",
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
		{"overlapping CIs", synth.Noisy{Seed: 2, LatencyCV: 0.3, P99: map[string]float64{"haproxy": 0.0021}}, "too close to call: the 95 % CIs of p99 overlap", ""},
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
		})
	}
	// Apart by more than their CIs but under the noise floor: too close.
	r := synth.Noisy{Seed: 4, Run: "floor", LatencyCV: 0.01, P99: map[string]float64{"haproxy": 0.00206}}.Report()
	g := map[string]*report.Group{}
	for i := range r.Groups {
		g[r.Groups[i].Proxy] = &r.Groups[i]
	}
	r.NoiseFloor.Metrics["p99_seconds"] = report.MetricFloor{Floor: 0.10, Source: report.FloorFromAA, AABound: 0.10, Spread: 0.01}
	cav := marginCaveats(r, g["nginx"], g["haproxy"], 0.03)
	if len(cav) != 1 || !strings.Contains(cav[0], "under the run's p99 noise floor of 10 %") {
		t.Fatalf("caveats %q", cav)
	}
}

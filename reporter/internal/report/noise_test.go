package report_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

// TestNoiseFloorFromControl: a 5-repeat run with its A/A control states a
// floor per metric from both measurements, the larger one named.
func TestNoiseFloorFromControl(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 1, Run: "aa", Proxies: []string{"nginx", "haproxy", "traefik", "caddy"}, CV: 0.04, LatencyCV: 0.08, Drift: 0.1, Control: true}.Report()
	nf := r.NoiseFloor
	if nf == nil || nf.NotMeasured != "" || nf.Repeats != 5 {
		t.Fatalf("noise floor %+v", nf)
	}
	if len(nf.AA) != 1 || nf.AA[0].Key != "nginx.fast.simple.quick" || nf.AA[0].Pairs != 5 || nf.AA[0].Arm != cellid.ArmControl {
		t.Fatalf("A/A control %+v", nf.AA)
	}
	for _, m := range []string{"goodput_rps", "rps", "p50_seconds", "p99_seconds", "proxy_cpu_cores"} {
		f := nf.Metrics[m]
		floor, ok := nf.Of(m)
		if !ok || !f.AABound.Known() || !f.Spread.Known() || f.SpreadGroups != 4 {
			t.Fatalf("%s: %+v", m, f)
		}
		if want := math.Max(float64(f.AABound), float64(f.Spread)); floor != want {
			t.Errorf("%s: floor %v, want max(aa %v, spread %v)", m, floor, f.AABound, f.Spread)
		}
		if src := map[bool]string{true: report.FloorFromAA, false: report.FloorFromSpread}[f.AABound >= f.Spread]; f.Source != src {
			t.Errorf("%s: source %q, want %q", m, f.Source, src)
		}
	}
	// The control measures no change: its interval holds 0 for goodput and
	// p99 (true here for this seed; an A/A interval misses 0 one time in 20).
	for _, m := range []string{"goodput_rps", "p99_seconds"} {
		p := nf.AA[0].Metrics[m]
		if p.N != 5 || !(p.CILow <= 0 && p.CIHigh >= 0) || p.Significant(report.Alpha) {
			t.Errorf("A/A %s: %+v, want an interval around 0", m, p)
		}
	}
	// Goodput noise of 4 % per cell: the mean of 5 has a 95 % half-width
	// of about 2.776 x 4 % / sqrt(5) = 5 %.
	if g := float64(nf.Metrics["goodput_rps"].Spread); g < 0.02 || g > 0.09 {
		t.Errorf("goodput spread floor %v, want about 0.05", g)
	}
	if _, ok := nf.Metrics["error_ratio"]; ok {
		t.Errorf("error_ratio has a relative floor: %+v", nf.Metrics["error_ratio"])
	}
	if len(r.Arms) != 0 {
		t.Errorf("arms %+v: the A/A control belongs to the noise floor", r.Arms)
	}
}

func TestNoiseFloorOneRepeat(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 2, Run: "one", Repeats: 1, CV: 0.04, LatencyCV: 0.08, Control: true}.Report()
	nf := r.NoiseFloor
	if nf.NotMeasured != report.NotMeasuredOneRepeat || nf.Repeats != 1 {
		t.Fatalf("noise floor %+v, want not measured (1 repeat)", nf)
	}
	if _, ok := nf.Of("p99_seconds"); ok {
		t.Fatalf("a floor from one repeat: %+v", nf.Metrics["p99_seconds"])
	}
	b, err := json.Marshal(nf)
	if err != nil || !strings.Contains(string(b), `"not_measured":"1 repeat"`) || !strings.Contains(string(b), `"floor":null`) {
		t.Fatalf("JSON %s, %v", b, err)
	}
	var back report.NoiseFloor
	if err := json.Unmarshal(b, &back); err != nil || back.NotMeasured != nf.NotMeasured || back.Metrics["p99_seconds"].Floor.Known() {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	// The control's single pair has no interval: no data, its unknown
	// numbers null in JSON and NaN again once read.
	d := back.AA[0].Metrics["p99_seconds"].Decision
	if d.Outcome != decide.NoData || d.Test.N != 1 || !math.IsNaN(d.Low) || !math.IsNaN(d.Test.HalfWidth) || !math.IsNaN(d.Resolution) || d.Margin != decide.DefaultMargin {
		t.Fatalf("one-pair decision read back %+v", d)
	}
}

// TestNoiseFloorSpreadOnly: repeats without a control give the spread's
// floor alone.
func TestNoiseFloorSpreadOnly(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 3, Run: "spread", Repeats: 3, CV: 0.04, LatencyCV: 0.08}.Report()
	f := r.NoiseFloor.Metrics["p99_seconds"]
	if len(r.NoiseFloor.AA) != 0 || f.AABound.Known() || f.Source != report.FloorFromSpread || f.Floor != f.Spread || f.SpreadGroups != 2 {
		t.Fatalf("p99 floor %+v, control %+v", f, r.NoiseFloor.AA)
	}
}

// TestObserverArmUsesExactNumbers: cells measured with the observability
// stack paused carry prometheus_gap (suspect: the manifest has their
// counts and exact latency), and are compared with their observed twins
// on those exact numbers, pair by repeat.
func TestObserverArmUsesExactNumbers(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 4, Run: "obs", CV: 0.03, LatencyCV: 0.06, Drift: 0.1, Control: true, Arm: cellid.ArmUnobserved}.Report()
	for _, c := range r.Cells {
		if c.Arm != cellid.ArmUnobserved {
			continue
		}
		if c.Validity.Verdict != report.Suspect || len(c.Validity.Flags) != 1 || c.Validity.Flags[0].Code != report.FlagPrometheusGap {
			t.Fatalf("%s: %+v, want suspect for prometheus_gap alone", c.ID, c.Validity)
		}
	}
	if len(r.Arms) != 2 {
		t.Fatalf("%d arm results, want one per proxy", len(r.Arms))
	}
	for _, a := range r.Arms {
		if a.Arm != cellid.ArmUnobserved || a.Pairs != 5 || len(a.Unpaired) != 0 {
			t.Fatalf("%+v", a)
		}
		for _, m := range []string{"goodput_rps", "p99_seconds", "p50_seconds", "proxy_cpu_cores"} {
			p := a.Metrics[m]
			if p.N != 5 || !p.P.Known() || !p.PHolm.Known() || p.PHolm < p.P {
				t.Errorf("%s %s: %+v, want 5 pairs tested", a.Key, m, p)
			}
		}
		// The exact p99 on both sides: the estimate is 3 % above it.
		var exact []float64
		for _, c := range r.Cells {
			if c.PlanKey() == a.Key && c.Arm == "" {
				exact = append(exact, float64(c.Latency.Exact.P99))
			}
		}
		want := 1.0
		for _, v := range exact {
			want *= v
		}
		want = math.Pow(want, 1/float64(len(exact)))
		if got := float64(a.Metrics["p99_seconds"].Base); math.Abs(got/want-1) > 1e-9 {
			t.Errorf("%s: observed p99 %v, want the geometric mean of the exact values %v", a.Key, got, want)
		}
	}
}

// TestCandidateArmFindsChange: a duet's candidate with 25 % less goodput
// and 40 % more p99 is measured near its truth, significant after Holm,
// while the host drifts 20 % across the run.
func TestCandidateArmFindsChange(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 5, Run: "duet", CV: 0.03, LatencyCV: 0.06, Drift: 0.2, Control: true,
		Arm: cellid.ArmCandidate, ArmGoodput: 0.75, ArmP99: 1.4}.Report()
	for _, a := range r.Arms {
		g, p := a.Metrics["goodput_rps"], a.Metrics["p99_seconds"]
		if math.Abs(float64(g.Change)+0.25) > 0.05 || !g.Significant(report.Alpha) || !(g.CILow < -0.25 && g.CIHigh > -0.25) {
			t.Errorf("%s goodput: %+v, want about -25 %% and significant", a.Key, g)
		}
		if math.Abs(float64(p.Change)-0.4) > 0.1 || !p.Significant(report.Alpha) {
			t.Errorf("%s p99: %+v, want about +40 %% and significant", a.Key, p)
		}
		if e := a.Metrics["error_ratio"]; e.Change != 0 || e.P != 1 {
			t.Errorf("%s error ratio: %+v, want no change", a.Key, e)
		}
	}
}

// TestCandidateArmDecision: 10 pairs of a duet whose candidate has 30 %
// less goodput and 50 % more p99: goodput, the closed loop's gated metric,
// is worse by more than 5 % on an anytime-valid interval; p99 is worse
// too but not gated; the error ratio is equivalent; the A/A control is
// not beyond the margin; and the decisions survive report.json.
func TestCandidateArmDecision(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 5, Run: "duet", Repeats: 10, CV: 0.03, LatencyCV: 0.06, Drift: 0.2, Control: true,
		Arm: cellid.ArmCandidate, ArmGoodput: 0.7, ArmP99: 1.5}.Report()
	if len(r.Arms) != 2 || r.Question == nil || *r.Question != report.DefaultQuestion {
		t.Fatalf("arms %d, question %+v", len(r.Arms), r.Question)
	}
	for _, a := range r.Arms {
		g, p, e := a.Metrics["goodput_rps"], a.Metrics["p99_seconds"], a.Metrics["error_ratio"]
		if g.Decision.Outcome != decide.Worse || !g.Gated || !g.Decision.Test.Anytime || g.Decision.Test.N != 10 || !(g.Decision.High < -0.05) {
			t.Errorf("%s goodput: %+v gated %v, want worse by more than 5 %% and gated", a.Key, g.Decision, g.Gated)
		}
		if p.Decision.Outcome != decide.Worse || p.Gated {
			t.Errorf("%s p99: %+v gated %v, want worse, not gated in a closed loop", a.Key, p.Decision, p.Gated)
		}
		if e.Decision.Outcome != decide.Equivalent || !e.Decision.Absolute || e.Decision.Margin != decide.DefaultErrorMargin {
			t.Errorf("%s error ratio: %+v, want equivalent within the error margin", a.Key, e.Decision)
		}
	}
	for name, p := range r.NoiseFloor.AA[0].Metrics {
		if o := p.Decision.Outcome; o == decide.Worse || o == decide.Better {
			t.Errorf("A/A control %s: %s", name, p.Decision)
		}
	}
	b, err := json.Marshal(r.Arms)
	if err != nil {
		t.Fatal(err)
	}
	var back []report.ArmResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back[0].Metrics["goodput_rps"].Decision, r.Arms[0].Metrics["goodput_rps"].Decision; got != want {
		t.Fatalf("decision read back %+v, want %+v", got, want)
	}
}

// TestCompareArmUnpaired: an invalid cell on either side, or a repeat
// without a twin, leaves its pair out and says why.
func TestCompareArmUnpaired(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 6, Run: "unpaired", Proxies: []string{"nginx"}, CV: 0.03, LatencyCV: 0.06, Control: true}.Report()
	var cells []report.Cell
	for _, c := range r.Cells {
		switch {
		case c.Arm == cellid.ArmControl && c.Repeat == 2:
			c.Validity = report.Validity{Verdict: report.Invalid, Flags: []report.Flag{{Code: report.FlagLoadgenBound, Severity: report.Invalid}}}
		case c.Arm == "" && c.Repeat == 4:
			continue
		}
		cells = append(cells, c)
	}
	res := report.CompareArm(cells, cellid.ArmControl, []string{"p99_seconds"}, report.DefaultQuestion)
	if len(res) != 1 || res[0].Pairs != 3 || res[0].Repeats != 5 || res[0].Metrics["p99_seconds"].N != 3 {
		t.Fatalf("%+v", res)
	}
	want := "r2: the aa cell is invalid (loadgen_bound); r4: no cell of the plan's own to pair with"
	if got := strings.Join(res[0].Unpaired, "; "); got != want {
		t.Errorf("unpaired %q, want %q", got, want)
	}
}

// TestCompareArmDisturbed: a pair the host disturbed is left out and
// says what disturbed it, unless the plan keeps disturbed pairs (a host
// shared by design), when it counts like any other.
func TestCompareArmDisturbed(t *testing.T) {
	t.Parallel()
	r := synth.Noisy{Seed: 7, Run: "disturbed", Proxies: []string{"nginx"}, CV: 0.03, LatencyCV: 0.06, Control: true}.Report()
	for i := range r.Cells {
		if c := &r.Cells[i]; c.Arm == "" && c.Repeat == 3 {
			c.Disturbed = "the hypervisor stole 31 % of a second of the host's CPUs (>= 20 %)"
		}
	}
	res := report.CompareArm(r.Cells, cellid.ArmControl, []string{"p99_seconds"}, report.DefaultQuestion)
	want := "r3: the host disturbed the plan's own cell: the hypervisor stole 31 % of a second of the host's CPUs (>= 20 %)"
	if len(res) != 1 || res[0].Pairs != 4 || strings.Join(res[0].Unpaired, "; ") != want {
		t.Fatalf("left out: %+v", res)
	}
	q := report.DefaultQuestion
	q.KeepDisturbed = true
	if res := report.CompareArm(r.Cells, cellid.ArmControl, []string{"p99_seconds"}, q); len(res) != 1 || res[0].Pairs != 5 || len(res[0].Unpaired) != 0 {
		t.Fatalf("kept: %+v", res)
	}
}

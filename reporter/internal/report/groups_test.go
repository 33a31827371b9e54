package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestBuildGroups(t *testing.T) {
	t.Parallel()
	var cells []Cell
	for i, p99 := range []float64{0.010, 0.014, 0.012, 0.5} {
		c := baseCell()
		c.Origin, c.Scenario, c.Tier, c.Repeat = "fast", "simple", "quick", i+1
		c.Latency.P99 = Num(p99)
		c.Validity.Verdict = Valid
		if i == 3 {
			c.Validity.Verdict = Invalid // left out of the statistics
		}
		cells = append(cells, c)
	}
	gs := BuildGroups(cells)
	if len(gs) != 1 || gs[0].Repeats != 4 || gs[0].Valid != 3 {
		t.Fatalf("groups %+v", gs)
	}
	s := gs[0].Metrics["p99_seconds"]
	h := 4.30265272974946 * 0.002 / math.Sqrt(3) // t(2) at 0.975
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"mean", float64(s.Mean), 0.012}, {"median", float64(s.Median), 0.012}, {"stddev", float64(s.Stddev), 0.002},
		{"cv", float64(s.CV), 0.002 / 0.012}, {"ci low", float64(s.CILow), 0.012 - h}, {"ci high", float64(s.CIHigh), 0.012 + h}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.N != 3 || len(s.Values) != 3 {
		t.Errorf("n %d values %v", s.N, s.Values)
	}
}

// TestBuildGroupsOneValue: one value (here the other repeat is invalid)
// has no measured spread: null, never 0 or a point interval.
func TestBuildGroupsOneValue(t *testing.T) {
	t.Parallel()
	var cells []Cell
	for i, v := range []string{Valid, Invalid} {
		c := baseCell()
		c.Repeat, c.Validity.Verdict = i+1, v
		cells = append(cells, c)
	}
	g := BuildGroups(cells)[0]
	if g.Repeats != 2 || g.Valid != 1 || g.Invalid != 1 {
		t.Fatalf("group %+v, want 2 repeats, 1 valid, 1 invalid", g)
	}
	for name, s := range g.Metrics {
		if s.N != 1 || !s.Mean.Known() || s.Stddev.Known() || s.CV.Known() || s.CILow.Known() || s.CIHigh.Known() {
			t.Errorf("%s: %+v, want n 1 with a mean and no spread", name, s)
		}
	}
	b, err := json.Marshal(g.Metrics["rps"])
	if err != nil {
		t.Fatal(err)
	}
	if want := `"stddev":null,"cv":null,"ci95_low":null,"ci95_high":null`; !strings.Contains(string(b), want) {
		t.Errorf("json %s, want %s", b, want)
	}
}

package report

import (
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

// TestBottleneck: who limited a closed-loop cell, from its roles' CPUs:
// the proxy at 90 % busy or more; the lab when the proxy had headroom and
// the loadgen's or the origin's CPUs did not; neither otherwise; not
// judged for an open loop. A proxy-bound cell is not suspect for the
// loadgen's run delay alone; the same run delay with the lab the limit
// is.
func TestBottleneck(t *testing.T) {
	t.Parallel()
	role := func(name, cpus string, busy float64) RoleContention {
		return RoleContention{Role: name, CPUs: cpus, BusyShare: Num(busy), ForeignShare: 0, RunDelayPerS: 0, PressureShare: NaN(), StealShare: 0, ThrottledPerS: NaN()}
	}
	for _, tc := range []struct {
		name        string
		rate        float64
		proxy, lab  float64
		who         string
		runDelayFlg bool
	}{
		{"proxy saturated (Traefik on its core)", 0, 0.98, 0.97, BottleneckProxy, false},
		{"proxy at the threshold", 0, BusyShareSaturated, 0.5, BottleneckProxy, false},
		{"lab saturated, proxy with headroom (nginx)", 0, 0.65, 0.99, BottleneckLab, true},
		{"proxy just under, lab just under", 0, BusyShareSaturated - 0.001, BusyShareSaturated - 0.001, "", true},
		{"open loop: not judged", 2000, 0.99, 0.99, "", true},
	} {
		c := Cell{TargetRateRPS: Num(tc.rate), DurationS: 5, Requests: 1000, RPS: 200, GoodputRPS: 200,
			Contention: []RoleContention{role(manifest.RoleLoadgen, "0", tc.lab), role(manifest.RoleProxy, "1", tc.proxy), role(manifest.RoleOrigin, "0", tc.lab)},
			LoadgenCPU: LoadgenCPU{RunDelayShare: 0.4, MeanCores: NaN(), PeakCores: NaN(), LimitCores: NaN(), ThrottledShare: NaN(), PressureShare: NaN(), LagP99Seconds: NaN()}}
		Judge(&c, DefaultThresholds, false)
		if c.Bottleneck.Who != tc.who {
			t.Errorf("%s: bottleneck %q (%s), want %q", tc.name, c.Bottleneck.Who, c.Bottleneck.Reason, tc.who)
		}
		if got := hasFlagReason(c, FlagLoadgenBound, "run delay"); got != tc.runDelayFlg {
			t.Errorf("%s: run-delay flag %v, want %v (%+v)", tc.name, got, tc.runDelayFlg, c.Validity.Flags)
		}
		if (tc.who == BottleneckLab) != c.LabBound() {
			t.Errorf("%s: LabBound %v", tc.name, c.LabBound())
		}
	}
}

func hasFlagReason(c Cell, code, words string) bool {
	for _, f := range c.Validity.Flags {
		if f.Code == code && strings.Contains(f.Reason, words) {
			return true
		}
	}
	return false
}

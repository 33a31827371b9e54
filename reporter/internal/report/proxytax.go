package report

import (
	"fmt"
	"slices"
	"strings"

	"proxybench/internal/decide"
	"proxybench/internal/stack"
	"proxybench/internal/stats"
)

// ProxyTax is what one proxy adds over the direct control (stack.Direct:
// the loadgen straight to the origin, same load, same rounds) on one
// origin, scenario and tier. Pair r is repeat r of both: measured in the
// same round, so the host's drift over the run cancels in the pair.
//
// Latency is compared only in an open loop, at one offered rate that both
// cells of the pair sustained (requests/s at least
// Thresholds.OpenLoopAchieved of it): a closed loop's latency depends on
// the throughput it reaches (Little's law), and the proxy's cells reach
// less than the direct ones, so their latencies measure different loads.
// A closed-loop row keeps the proxy's CPU per request and says why it has
// no latency.
type ProxyTax struct {
	Proxy    string `json:"proxy"`
	Origin   string `json:"origin"`
	Scenario string `json:"scenario"`
	Tier     string `json:"tier"`
	// RateRPS is the offered rate both arms were given, requests/s; 0 is
	// a closed loop.
	RateRPS Num `json:"target_rate_rps"`
	// Pairs is how many rounds compare the latency; Unpaired says why
	// the others do not, e.g. "r2: the direct cell is invalid (errors)".
	Pairs    int      `json:"pairs"`
	Unpaired []string `json:"unpaired,omitempty"`
	// AddedP50 and AddedP99 are the proxy's p50 and p99 minus the direct
	// cell's of the same round, microseconds: the mean over the pairs and
	// its 95 % Student-t interval (decide.Fixed; null below 2 pairs).
	AddedP50 Estimate `json:"added_p50_us"`
	AddedP99 Estimate `json:"added_p99_us"`
	// DirectP50 and ProxyP50 are the two arms' p50 over the pairs, µs.
	DirectP50 Num `json:"direct_p50_us"`
	ProxyP50  Num `json:"proxy_p50_us"`
	// CPUPerRequest is the proxy's CPU per request at the cell's rate,
	// µs: its mean CPU (cores) over its requests/s in every repeat not
	// invalid, the mean and its 95 % interval; RPS is those repeats'
	// median requests/s.
	CPUPerRequest Estimate `json:"proxy_cpu_us_per_request"`
	RPS           Num      `json:"rps"`
	// Note says why the row has no latency (a closed loop, no pair).
	Note string `json:"note,omitempty"`
}

// Estimate is a mean over N values with its 95 % Student-t interval;
// the interval is null below 2 values.
type Estimate struct {
	N    int `json:"n"`
	Mean Num `json:"mean"`
	Low  Num `json:"ci95_low"`
	High Num `json:"ci95_high"`
}

// estimate is the mean of xs and its 1 - Alpha interval.
func estimate(xs []float64) Estimate {
	iv := decide.Fixed(xs, Alpha)
	if iv.N == 0 {
		return Estimate{Mean: NaN(), Low: NaN(), High: NaN()}
	}
	return Estimate{N: iv.N, Mean: Num(iv.Mean), Low: Num(iv.Low), High: Num(iv.High)}
}

// Excludes0 says whether the interval lies wholly on one side of zero.
func (e Estimate) Excludes0() bool {
	return e.Low.Known() && e.High.Known() && (e.Low > 0 || e.High < 0)
}

// BuildProxyTax is a row per proxy x origin x scenario x tier whose
// origin, scenario and tier the direct control measured, in the cells'
// order; the arms' cells (A/A control) are left out. th gives the share
// of the offered rate a cell must reach to count as sustaining it.
func BuildProxyTax(cells []Cell, th Thresholds) []ProxyTax {
	type key struct{ proxy, origin, scenario, tier string }
	by := map[key]map[int]*Cell{}
	var order []key
	for i := range cells {
		c := &cells[i]
		if c.Arm != "" {
			continue
		}
		k := key{c.Proxy, c.Origin, c.Scenario, c.Tier}
		if by[k] == nil {
			by[k] = map[int]*Cell{}
			order = append(order, k)
		}
		by[k][c.Repeat] = c
	}
	var out []ProxyTax
	for _, k := range order {
		direct := by[key{stack.Direct, k.origin, k.scenario, k.tier}]
		if stack.IsDirect(k.proxy) || direct == nil {
			continue
		}
		out = append(out, proxyTax(k.proxy, k.origin, k.scenario, k.tier, by[k], direct, th))
	}
	return out
}

// proxyTax is one row: the proxy's cells and the direct control's, by
// repeat.
func proxyTax(proxy, origin, sc, tier string, px, direct map[int]*Cell, th Thresholds) ProxyTax {
	t := ProxyTax{Proxy: proxy, Origin: origin, Scenario: sc, Tier: tier, RateRPS: NaN()}
	repeats := make([]int, 0, len(px))
	for r := range px {
		repeats = append(repeats, r)
	}
	slices.Sort(repeats)
	p50, _ := Metric("p50_seconds")
	p99, _ := Metric("p99_seconds")
	var d50, d99, dp, pp, cpu, rps []float64
	for _, r := range repeats {
		p := px[r]
		if !t.RateRPS.Known() {
			t.RateRPS = p.TargetRateRPS
		}
		if p.Validity.Verdict != Invalid {
			if v := cpuPerRequest(p); v.Known() {
				cpu = append(cpu, 1e6*float64(v))
			}
			if p.RPS.Known() {
				rps = append(rps, float64(p.RPS))
			}
		}
		if why := unpairedWhy(p, direct[r], th); why != "" {
			t.Unpaired = append(t.Unpaired, fmt.Sprintf("r%d: %s", r, why))
			continue
		}
		d := direct[r]
		a, b := p50.Get(p), p50.Get(d)
		c, e := p99.Get(p), p99.Get(d)
		if !a.Known() || !b.Known() || !c.Known() || !e.Known() {
			t.Unpaired = append(t.Unpaired, fmt.Sprintf("r%d: a latency percentile is unknown", r))
			continue
		}
		d50, d99 = append(d50, 1e6*float64(a-b)), append(d99, 1e6*float64(c-e))
		pp, dp = append(pp, 1e6*float64(a)), append(dp, 1e6*float64(b))
	}
	t.Pairs = len(d50)
	t.AddedP50, t.AddedP99 = estimate(d50), estimate(d99)
	t.ProxyP50, t.DirectP50 = estimate(pp).Mean, estimate(dp).Mean
	t.CPUPerRequest, t.RPS = estimate(cpu), Num(stats.Median(rps))
	switch {
	case t.RateRPS == 0:
		t.Note = "closed loop: latency depends on the throughput each arm reaches, so it is compared only in an open loop at one rate both sustain (make bench RATE=...); the CPU per request stands"
		t.Unpaired = nil
	case t.Pairs == 0:
		t.Note = "no round with both cells usable at the offered rate: " + strings.Join(t.Unpaired, "; ")
	}
	return t
}

// unpairedWhy is why a round's proxy cell p and direct cell d do not
// compare latency ("" when they do): a cell missing or invalid, a closed
// loop, or an open-loop rate one of them did not sustain.
func unpairedWhy(p, d *Cell, th Thresholds) string {
	switch {
	case d == nil:
		return "no direct cell in this round"
	case p.TargetRateRPS == 0:
		return "closed loop"
	case !sameNum(p.TargetRateRPS, d.TargetRateRPS) || p.Concurrency != d.Concurrency:
		return fmt.Sprintf("the direct cell had another load (%s, concurrency %d; the proxy's %s, %d)",
			rateText(d.TargetRateRPS), d.Concurrency, rateText(p.TargetRateRPS), p.Concurrency)
	}
	for _, c := range []*Cell{p, d} {
		who := "the " + c.Proxy + " cell"
		if c.Validity.Verdict == Invalid {
			return fmt.Sprintf("%s is invalid (%s)", who, flagCodes(c.Validity))
		}
		if !c.RPS.Known() || float64(c.RPS) < th.OpenLoopAchieved*float64(c.TargetRateRPS) {
			return fmt.Sprintf("%s did not sustain %s (%s req/s, below %s of it)", who, rateText(c.TargetRateRPS), numText(c.RPS), Pct(th.OpenLoopAchieved))
		}
	}
	return ""
}

func numText(n Num) string {
	if !n.Known() {
		return "unknown"
	}
	return fmt.Sprintf("%.0f", float64(n))
}

// flagCodes are v's flags' codes, once each.
func flagCodes(v Validity) string {
	var out []string
	for _, f := range v.Flags {
		if !slices.Contains(out, f.Code) {
			out = append(out, f.Code)
		}
	}
	return strings.Join(out, ", ")
}

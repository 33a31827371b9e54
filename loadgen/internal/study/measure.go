package study

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
)

// Latency metric names every HTTP study shares, in microseconds from the
// loadgen's HdrHistogram (microsecond resolution).
var LatencyMetrics = []studydata.Metric{
	{Name: "mean_us", Label: "mean latency", Unit: "µs", Better: "lower"},
	{Name: "p50_us", Label: "p50 latency", Unit: "µs", Better: "lower"},
	{Name: "p99_us", Label: "p99 latency", Unit: "µs", Better: "lower"},
	{Name: "p999_us", Label: "p99.9 latency", Unit: "µs", Better: "lower"},
	{Name: "rps", Label: "completed", Unit: "req/s", Better: "higher"},
	{Name: "error_ratio", Label: "errors", Unit: "ratio", Better: "lower"},
}

// Load is one HTTP measurement: an open loop at Rate (closed loop with
// Conns connections when Rate is 0) against URL for Duration after Warmup.
type Load struct {
	URL      string
	Rate     float64
	Conns    int // closed loop: connections; open loop: max in flight (0 = the default)
	Warmup   time.Duration
	Duration time.Duration
}

// Measure runs l with the loadgen's engine (its threads already pinned to
// the loadgen's CPUs by Main) and returns the window's result.
func Measure(ctx context.Context, l Load) (*attack.Result, error) {
	set := load.Settings{Concurrency: l.Conns, Rate: l.Rate, Duration: l.Duration}
	if l.Rate > 0 && l.Conns == 0 {
		set.Concurrency = load.DefaultMaxInFlight
	}
	m, err := set.Model()
	if err != nil {
		return nil, fmt.Errorf("load %+v: %w", l, err)
	}
	s := attack.Spec{URL: l.URL, Load: m, Timeout: attack.DefaultTimeout}
	s.Labels.Proxy, s.Labels.Origin, s.Labels.Scenario = "study", "study", "study"
	a := attack.New(attack.NewMetrics(prometheus.NewRegistry()))
	run := func(ctx context.Context, s attack.Spec) (*attack.Result, error) { return a.Run(ctx, s, nil) }
	if _, err := attack.WarmUp(ctx, s, l.Warmup, 0, run, nil); err != nil {
		return nil, fmt.Errorf("warm-up against %s: %w", l.URL, err)
	}
	return run(ctx, s)
}

// LatencyValues turns a result into the LatencyMetrics values.
func LatencyValues(r *attack.Result) map[string]float64 {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	v := map[string]float64{"rps": r.RPS(), "error_ratio": 0,
		"p50_us": us(r.Quantile(50)), "p99_us": us(r.Quantile(99)), "p999_us": us(r.Quantile(99.9))}
	if r.Hist != nil && r.Hist.TotalCount() > 0 {
		v["mean_us"] = r.Hist.Mean()
	}
	if n := r.Requests + r.Errors; n > 0 {
		v["error_ratio"] = float64(r.Errors) / float64(n)
	}
	return v
}

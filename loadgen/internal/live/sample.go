package live

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/selfcpu"
)

// Lag is how far behind the clock a reading is taken from Prometheus: the
// recording rules' last evaluation (every 1 s) is then stored, so the same
// query at the reading's time answers the same afterwards.
const Lag = time.Second

// promTimeout bounds one reading's queries: a paused or dead Prometheus
// turns into the loadgen's counters within it.
const promTimeout = 800 * time.Millisecond

// cellLabels names the current cell's traffic series.
type cellLabels struct{ proxy, origin, scenario string }

// Queries are the PromQL expressions of one reading of a cell, by what
// they give; the same ones for every cell (recorded series of
// metricdefs and the rows of its table).
func Queries(proxy, origin, scenario string) map[string]string {
	sel := fmt.Sprintf(`{proxy=%s,origin=%s,scenario=%s}`, strconv.Quote(proxy), strconv.Quote(origin), strconv.Quote(scenario))
	q := func(quantile string) string {
		return fmt.Sprintf(`%s{proxy=%s,origin=%s,scenario=%s,quantile=%q}`, metricdefs.RecQuantile,
			strconv.Quote(proxy), strconv.Quote(origin), strconv.Quote(scenario), quantile)
	}
	return map[string]string{
		"rps":         "sum(" + metricdefs.RecRPS + sel + ")",
		"p50":         q("0.5"),
		"p99":         q("0.99"),
		"err_rps":     "sum(" + metricdefs.RecFailures + sel + ")",
		"proxy_cpu":   fmt.Sprintf(`sum(rate(%s{service=%s,cpu=~"total|"}[5s]))`, metricdefs.ContainerCPUUsage.Name, strconv.Quote(proxy)),
		"loadgen_cpu": fmt.Sprintf(`sum(rate(%s{job="loadgen"}[5s]))`, metricdefs.ProcessCPU.Name),
	}
}

// fromProm reads the cell's numbers at t; any failed query fails it all.
func fromProm(ctx context.Context, c *promapi.Client, l cellLabels, t time.Time) (Point, error) {
	ctx, cancel := context.WithTimeout(ctx, promTimeout)
	defer cancel()
	p := Point{T: float64(t.UnixMilli()) / 1000, Source: SourceProm}
	into := map[string]**float64{"rps": &p.RPS, "p50": &p.P50, "p99": &p.P99, "err_rps": &p.ErrRPS, "proxy_cpu": &p.ProxyCPU, "loadgen_cpu": &p.LoadgenCPU}
	for what, expr := range Queries(l.proxy, l.origin, l.scenario) {
		s, err := c.Query(ctx, expr, t)
		if err != nil {
			return Point{}, err
		}
		if len(s) == 1 && !math.IsNaN(s[0].Value) && !math.IsInf(s[0].Value, 0) {
			v := s[0].Value
			*into[what] = &v
		}
	}
	return p, nil
}

// own is the loadgen's reading: the attack's last progress report, and
// its own CPU over the time since the last reading.
type own struct {
	cpu time.Duration
	at  time.Time
}

func (o *own) point(pr attack.Progress, now time.Time) Point {
	p := Point{T: float64(now.UnixMilli()) / 1000, Source: SourceLoadgen}
	rps, errs := pr.RPS, pr.Errors
	p.RPS, p.Errors = &rps, &errs
	if pr.P99 > 0 {
		p99 := pr.P99.Seconds()
		p.P99 = &p99
	}
	cpu := selfcpu.ProcessCPU()
	if !o.at.IsZero() && now.After(o.at) {
		cores := (cpu - o.cpu).Seconds() / now.Sub(o.at).Seconds()
		p.LoadgenCPU = &cores
	}
	o.cpu, o.at = cpu, now
	return p
}

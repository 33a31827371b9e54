package scaleout

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/study"
)

// values are LatencyValues with any status other than 200 counted
// as an error too (the body is a file that is always there).
func values(res *attack.Result) map[string]float64 {
	v := study.LatencyValues(res)
	bad := res.Errors
	for code, n := range res.Codes {
		if code != http.StatusOK {
			bad += n
		}
	}
	if n := res.Requests + res.Errors; n > 0 {
		v["error_ratio"] = float64(bad) / float64(n)
	}
	return v
}

// takeSample measures case c at rate and adds the sample; it returns
// the result (nil when the sample failed and was added with its error).
func takeSample(ctx context.Context, e *study.Env, c testCase, ps []probe, group string, rate float64, rep int, tm timing) (*attack.Result, error) {
	s := studydata.Sample{Group: group, Variant: c.Name, Repeat: rep, Start: time.Now().UTC()}
	before, err := accountOf(ps)
	if err != nil {
		s.End, s.Error = time.Now().UTC(), fmt.Sprintf("read the case's cgroups: %v", err)
		return nil, e.Add(s)
	}
	t0 := time.Now()
	res, err := study.Measure(ctx, study.Load{URL: c.url(), Rate: rate, Warmup: tm.warm, Duration: tm.window})
	elapsed := time.Since(t0)
	s.End = time.Now().UTC()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		s.Error = err.Error()
		return nil, e.Add(s)
	}
	after, err := accountOf(ps)
	if err != nil {
		s.Error = fmt.Sprintf("read the case's cgroups: %v", err)
		return nil, e.Add(s)
	}
	v := values(res)
	var used time.Duration
	worst := 0.0
	for i := range ps {
		used += after[i].usage - before[i].usage
		if per := after[i].thr.Periods - before[i].thr.Periods; per > 0 {
			worst = math.Max(worst, 100*float64(after[i].thr.Throttled-before[i].thr.Throttled)/float64(per))
		}
	}
	v["cpu_cores"] = used.Seconds() / elapsed.Seconds()
	v["throttled_pct"] = worst
	v["send_lag_p99_us"] = float64(res.LagP99) / float64(time.Microsecond)
	s.Values = v
	e.Log.Info("scaleout sample", "case", c.Name, "group", group, "rate", rate, "repeat", rep,
		"p50_us", v["p50_us"], "p99_us", v["p99_us"], "rps", v["rps"], "cpu", v["cpu_cores"], "throttled_pct", worst)
	return res, e.Add(s)
}

// pairNotes counts, per rate, the repeats in which one case's p99
// was below another's (samples paired by repeat): the facts behind "did
// the proxy or the split help", kept also when the answer is no. The
// reporter states the significance.
func pairNotes(rec *studydata.Record, rs []rateLevel, rates map[string]float64) []string {
	pairs := [][2]string{{"B", "A"}, {"C", "A"}, {"C", "B"}}
	var out []string
	for _, r := range rs {
		p99 := map[string]map[int]float64{} // case -> repeat -> p99
		for _, s := range rec.Samples {
			if v, ok := s.Values["p99_us"]; ok && s.Group == r.Name && s.Error == "" {
				if p99[s.Variant] == nil {
					p99[s.Variant] = map[int]float64{}
				}
				p99[s.Variant][s.Repeat] = v
			}
		}
		var parts []string
		for _, pr := range pairs {
			n, below := 0, 0
			for rep, x := range p99[pr[0]] {
				if y, ok := p99[pr[1]][rep]; ok {
					n++
					if x < y {
						below++
					}
				}
			}
			parts = append(parts, fmt.Sprintf("%s below %s in %d of %d", pr[0], pr[1], below, n))
		}
		out = append(out, fmt.Sprintf("p99 at %.0f req/s (%s), repeat by repeat: %s.", rates[r.Name], r.Name, strings.Join(parts, "; ")))
	}
	return out
}

// sustainedNote says, per case, the smallest share of the offered
// rate a sample completed: below about 95 % the case fell behind and its
// latencies are those of a growing queue.
func sustainedNote(rec *studydata.Record, rates map[string]float64) string {
	var parts []string
	for _, c := range cases {
		worst, at := math.Inf(1), ""
		for _, s := range rec.Samples {
			if s.Variant != c.Name || s.Error != "" || rates[s.Group] <= 0 {
				continue
			}
			if f := s.Values["rps"] / rates[s.Group]; f < worst {
				worst, at = f, s.Group
			}
		}
		if at != "" {
			parts = append(parts, fmt.Sprintf("%s %.1f %% (at %s)", c.Name, 100*worst, at))
		}
	}
	return "Completed / offered, the worst sample of each case (below about 95 % a case fell behind and measured a queue): " + strings.Join(parts, ", ") + "."
}

package runner

import (
	"net/http"
	"strconv"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

// scenarioData derives what the cell's scenario is judged on from the
// exact counts of its window (docs/scenarios.md); nil for simple cells.
// probes are what was sampled beside the attack (memory, TIME_WAIT).
func scenarioData(c plan.Cell, mc *manifest.Cell, per map[string]*attack.Result, p probes) *manifest.ScenarioData {
	window := mc.End.Sub(mc.Start).Seconds()
	rate := func(n int64) float64 {
		if window <= 0 {
			return 0
		}
		return float64(n) / window
	}
	var d manifest.ScenarioData
	set := false
	if len(c.Variants) > 1 {
		set = true
		d.Variants = map[string]manifest.VariantCount{}
		var wrong int64
		for _, v := range c.Variants {
			vc := manifest.VariantCount{Share: v.Share, Want: v.Want, Codes: map[string]int64{}}
			if res := per[v.Name]; res != nil {
				vc.Requests, vc.Errors = res.Requests, res.Errors
				for code, n := range res.Codes {
					vc.Codes[strconv.Itoa(code)] = n
					if !answers(v.Want, code) {
						wrong += n
					}
				}
			}
			d.Variants[v.Name] = vc
		}
		d.AuthWrong = &wrong
	}
	if c.LimitRPS > 0 {
		set = true
		ok := sum2xx(mc.Codes)
		d.LimitRPS, d.LimitBurst = c.LimitRPS, c.LimitBurst
		d.OfferedRPS = rate(mc.Requests + mc.Errors)
		d.AcceptedRPS = rate(ok)
		d.LimitedRPS = rate(mc.Codes[strconv.Itoa(http.StatusTooManyRequests)])
		if window > 0 {
			d.Precision = (float64(ok) - c.LimitBurst) / window / c.LimitRPS
		}
	}
	if c.BodyBytes > 0 {
		set = true
		d.BodyBytes = c.BodyBytes
		d.BytesPerSec = rate(mc.Bytes)
		if c.Method == http.MethodPost {
			d.UploadBytes = c.BodyBytes
		}
	}
	if c.DelayS > 0 {
		set = true
		d.DelayS = c.DelayS
		d.Memory = p.memory
	}
	if c.NewConn {
		set = true
		if p.churn != nil {
			ch := *p.churn
			ch.ConnsPerSec = rate(mc.Requests + mc.Errors)
			d.Churn = &ch
		}
	}
	if !set {
		return nil
	}
	return &d
}

// answers says whether a status code is the one a variant must get: any
// 2xx for a valid key, exactly the wanted code otherwise.
func answers(want, code int) bool {
	if want >= 200 && want < 300 {
		return code >= 200 && code < 300
	}
	return code == want
}

func sum2xx(codes map[string]int64) int64 {
	var n int64
	for k, v := range codes {
		if c, err := strconv.Atoi(k); err == nil && c >= 200 && c < 300 {
			n += v
		}
	}
	return n
}

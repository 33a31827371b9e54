package report

import (
	"fmt"
	"time"

	"proxybench/internal/scenario"
)

// SLO holds pass/fail thresholds, like k6 thresholds; zero disables one.
type SLO struct {
	P99        time.Duration `json:"p99_ns,omitempty"`
	ErrorRatio float64       `json:"error_ratio,omitempty"`
}

// Enabled reports whether any threshold is set.
func (s SLO) Enabled() bool { return s.P99 > 0 || s.ErrorRatio > 0 }

// SLOCheck is one threshold on one cell.
type SLOCheck struct {
	Name  string `json:"name"` // p99, error_ratio
	Limit Num    `json:"limit"`
	Value Num    `json:"value"`
	Pass  bool   `json:"pass"`
	Note  string `json:"note,omitempty"`
}

// CheckSLO evaluates s on c. The p99 check prefers the exact manifest value.
// A value that cannot be measured fails: an SLO gate must not pass on no data.
func CheckSLO(c *Cell, s SLO) {
	c.SLO = nil
	if s.P99 > 0 {
		v, note := c.Latency.P99, "Prometheus histogram estimate"
		if c.Latency.Exact != nil && c.Latency.Exact.P99.Known() {
			v, note = c.Latency.Exact.P99, "exact (loadgen HdrHistogram)"
		}
		lim := s.P99.Seconds()
		// A scenario may add latency by design (slow: the origin's delay);
		// the objective is on what the proxy adds above it.
		if sc := scenario.Get(c.Scenario); sc != nil && sc.LatencyFloor != nil && v.Known() {
			if floor, why := sc.LatencyFloor(c.ScenarioData); floor > 0 {
				v -= Num(floor)
				note += ", " + why
			}
		}
		ck := SLOCheck{Name: "p99", Limit: Num(lim), Value: v, Pass: v.Known() && float64(v) < lim, Note: note}
		if !v.Known() {
			ck.Note = "no latency data"
		}
		c.SLO = append(c.SLO, ck)
	}
	if s.ErrorRatio > 0 {
		// Every failed attempt counts, in the window or after it.
		v := c.ErrorRatio
		if v.Known() && c.LateErrorRatio.Known() && c.LateErrors > 0 {
			attempts := float64(c.Requests + c.TransportErrors)
			v = Num((float64(v)*attempts + float64(c.LateErrors)) / (attempts + float64(c.Late)))
		}
		ck := SLOCheck{Name: "error_ratio", Limit: Num(s.ErrorRatio), Value: v, Pass: v.Known() && float64(v) < s.ErrorRatio}
		if !v.Known() {
			ck.Note = "no requests"
		}
		c.SLO = append(c.SLO, ck)
	}
}

// SLOPassed reports whether every check on c passed.
func (c *Cell) SLOPassed() bool {
	for _, s := range c.SLO {
		if !s.Pass {
			return false
		}
	}
	return true
}

// String renders the SLO for humans.
func (s SLO) String() string {
	out := ""
	if s.P99 > 0 {
		out += fmt.Sprintf("p99 < %s", s.P99)
	}
	if s.ErrorRatio > 0 {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("error ratio < %g %%", s.ErrorRatio*100)
	}
	if out == "" {
		return "none"
	}
	return out
}

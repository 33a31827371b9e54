package report

import (
	"fmt"
	"math"
	"slices"

	"proxybench/internal/scenario"
	"proxybench/internal/stats"
)

// TLSCost is what TLS costs one proxy on one origin and tier: its CPU per
// request over TLS against cleartext in cells of the same shape (the tls
// and simple scenarios: keep-alive HTTP/1.1, same load), and the full TLS
// handshakes it sustains per core (tls-handshake-full: a new connection
// per request, no resumption). CPU per request is the proxy's mean CPU
// (cores, Resources.CPUMeanCores) over its requests per second, the
// median over the repeats that are not invalid (all repeats when every
// one is). Unknown numbers are null.
type TLSCost struct {
	Proxy  string `json:"proxy"`
	Origin string `json:"origin"`
	Tier   string `json:"tier"`

	ClearCPUPerRequest Num `json:"cleartext_cpu_seconds_per_request"` // simple
	TLSCPUPerRequest   Num `json:"tls_cpu_seconds_per_request"`       // tls
	// Overhead is TLSCPUPerRequest / ClearCPUPerRequest - 1.
	Overhead Num `json:"tls_overhead"`
	ClearRPS Num `json:"cleartext_rps"`
	TLSRPS   Num `json:"tls_rps"`
	// Comparable says the simple and tls cells ran at the same rate: the
	// same load (concurrency, target rate), and in closed loop achieved
	// rates within SameRateTolerance of each other (CPU per request
	// depends on the rate: batching, wake-ups); when not, Note says how
	// they differ and the overhead is unknown.
	Comparable bool   `json:"comparable"`
	Note       string `json:"note,omitempty"`

	// HandshakeRPS is tls-handshake-full's requests/s (one full handshake
	// each), HandshakeCores the proxy's mean CPU meanwhile, and
	// HandshakesPerCore their ratio: full handshakes per second per core.
	HandshakeRPS      Num `json:"full_handshake_rps"`
	HandshakeCores    Num `json:"full_handshake_proxy_cpu_cores"`
	HandshakesPerCore Num `json:"full_handshakes_per_core_second"`
}

// BuildTLSCost is a row per proxy x origin x tier that has cells of the
// pair (scenario.TLSCostPair) or of tls-handshake-full, in the cells'
// order; the arms' cells (duet, observer, A/A) are left out.
func BuildTLSCost(cells []Cell) []TLSCost {
	order, by := byProxyOriginTier(cells, scenario.TLSCostPair[0], scenario.TLSCostPair[1], scenario.TLSHandshakeFull)
	var out []TLSCost
	for _, k := range order {
		sc := by[k]
		clear, tls, hs := usable(sc[scenario.TLSCostPair[0]]), usable(sc[scenario.TLSCostPair[1]]), usable(sc[scenario.TLSHandshakeFull])
		if len(tls) == 0 && len(hs) == 0 {
			continue // simple alone: nothing about TLS
		}
		t := TLSCost{Proxy: k.proxy, Origin: k.origin, Tier: k.tier,
			ClearCPUPerRequest: medianOf(clear, cpuPerRequest), TLSCPUPerRequest: medianOf(tls, cpuPerRequest),
			ClearRPS: medianOf(clear, func(c *Cell) Num { return c.RPS }), TLSRPS: medianOf(tls, func(c *Cell) Num { return c.RPS }),
			Overhead:     NaN(),
			HandshakeRPS: medianOf(hs, func(c *Cell) Num { return c.RPS }), HandshakeCores: medianOf(hs, func(c *Cell) Num { return c.ProxyRes.CPUMeanCores }),
			HandshakesPerCore: medianOf(hs, func(c *Cell) Num { return ratio(c.RPS, c.ProxyRes.CPUMeanCores) })}
		switch {
		case len(tls) == 0: // handshakes only
		case len(clear) == 0:
			t.Note = "no simple cells to compare the tls cells with"
		default:
			t.Note = sameShape(clear, tls)
			if t.Note == "" && clear[0].TargetRateRPS == 0 {
				t.Note = sameRate(t.ClearRPS, t.TLSRPS)
			}
			t.Comparable = t.Note == ""
		}
		if t.Comparable {
			t.Overhead = ratio(t.TLSCPUPerRequest, t.ClearCPUPerRequest) - 1
		}
		out = append(out, t)
	}
	return out
}

// groupKey is a proxy x origin x tier.
type groupKey struct{ proxy, origin, tier string }

// byProxyOriginTier groups the cells of the scenarios wanted by proxy x
// origin x tier, then by scenario, the groups in the cells' order; the
// arms' cells (duet, observer, A/A) are left out.
func byProxyOriginTier(cells []Cell, want ...string) ([]groupKey, map[groupKey]map[string][]*Cell) {
	by := map[groupKey]map[string][]*Cell{}
	var order []groupKey
	for i := range cells {
		c := &cells[i]
		if c.Arm != "" || !slices.Contains(want, c.Scenario) {
			continue
		}
		k := groupKey{c.Proxy, c.Origin, c.Tier}
		if by[k] == nil {
			by[k] = map[string][]*Cell{}
			order = append(order, k)
		}
		by[k][c.Scenario] = append(by[k][c.Scenario], c)
	}
	return order, by
}

// usable are the repeats the statistics use: those not invalid, or all
// when every one is.
func usable(cs []*Cell) []*Cell {
	var ok []*Cell
	for _, c := range cs {
		if c.Validity.Verdict != Invalid {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return cs
	}
	return ok
}

// cpuPerRequest is the proxy's CPU seconds per request of c.
func cpuPerRequest(c *Cell) Num {
	if c.Sliced != nil {
		return c.Sliced.CPUPerRequest
	}
	return ratio(c.ProxyRes.CPUMeanCores, c.RPS)
}

// ratio is a / b, unknown when either is or b is not positive.
func ratio(a, b Num) Num {
	if !a.Known() || !b.Known() || b <= 0 {
		return NaN()
	}
	return a / b
}

// medianOf is the median of f over the cells' known values.
func medianOf(cs []*Cell, f func(*Cell) Num) Num {
	var xs []float64
	for _, c := range cs {
		if v := f(c); v.Known() {
			xs = append(xs, float64(v))
		}
	}
	return Num(stats.Median(xs))
}

// sameShape is "" when every cell of a and b had the same load, else how
// they differ.
func sameShape(a, b []*Cell) string {
	ref := a[0]
	for _, c := range concat(a[1:], b) {
		if c.Concurrency != ref.Concurrency || !sameNum(c.TargetRateRPS, ref.TargetRateRPS) {
			return fmt.Sprintf("not comparable: %s has concurrency %d, rate %s; %s has concurrency %d, rate %s",
				ref.ID, ref.Concurrency, rateText(ref.TargetRateRPS), c.ID, c.Concurrency, rateText(c.TargetRateRPS))
		}
	}
	return ""
}

// SameRateTolerance is how far apart the closed-loop cleartext and TLS
// rates may be for their CPU per request to be compared.
const SameRateTolerance = 0.10

// sameRate is "" when the closed loop's cleartext and TLS medians are
// within SameRateTolerance, else how far apart they are and how to get one
// rate.
func sameRate(clear, tls Num) string {
	if !clear.Known() || !tls.Known() || clear <= 0 {
		return "not comparable: a rate is unknown"
	}
	if d := float64(tls/clear) - 1; math.Abs(d) > SameRateTolerance {
		return fmt.Sprintf("not comparable: closed loop at different rates, TLS %.0f req/s against cleartext %.0f (%+.0f %%, more than %.0f %%): per-request CPU differs with the rate; run both at one open-loop rate (RATE=)",
			float64(tls), float64(clear), 100*d, 100*SameRateTolerance)
	}
	return ""
}

func concat(a, b []*Cell) []*Cell { return append(append([]*Cell(nil), a...), b...) }

func sameNum(a, b Num) bool { return a == b || (!a.Known() && !b.Known()) }

// rateText is a cell's target rate: 0 is a closed loop.
func rateText(n Num) string {
	switch {
	case !n.Known():
		return "unknown"
	case n == 0:
		return "closed loop"
	}
	return fmt.Sprintf("%g req/s", float64(n))
}

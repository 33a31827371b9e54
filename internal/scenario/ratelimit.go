package scenario

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"proxybench/internal/manifest"
)

// What the proxies' /rl/ routes enforce (compose/{nginx,haproxy,traefik}/):
// change them together. TestProxyConfigsMatchTable reads the configs and
// fails when they drift apart.
const (
	RateLimitRPS   = 1000 // per API key
	RateLimitBurst = 50   // extra requests a full bucket lets through at once
	// RateLimitKey is the one key a ratelimit cell sends: the limit is per key.
	RateLimitKey = "pb-key-1"
)

// PrecisionTolerance is how far a limiter's precision may be from 1 for
// the report to call it correct.
const PrecisionTolerance = 0.10

// ratelimit offers one key more than its limit in open loop; 429s over the
// limit are expected, and the limiter is judged on its precision.
var ratelimit = Scenario{
	Name: "ratelimit",
	About: fmt.Sprintf("per-key rate limit (%d req/s, burst %d) under /rl/<origin>/, offered more than the limit in open loop",
		RateLimitRPS, RateLimitBurst),
	Rank: 30,
	NA: map[string]string{"caddy": "no native rate limit: rate limiting is the third-party " +
		"caddy-ratelimit plugin, absent from the standard build"},
	Method:   http.MethodGet,
	Path:     func(o string, _ Settings) string { return "/rl/" + o + "/" },
	Header:   http.Header{APIKeyHeader: {RateLimitKey}},
	OpenRate: func(set Settings) float64 { return set.RateLimitOffered },
	Limit:    RateLimitRPS, Burst: RateLimitBurst,
	Expected:  []string{"2xx", "429"}, // 429 only over the limit (checked as the precision of the limit)
	Account:   rateLimitAccount,
	Report:    rateLimitTable,
	Wrong:     rateLimitWrong,
	WrongWhat: "a 429 to a request under the limit",
}

func init() { register(&ratelimit) }

// rateLimitWrong counts the 429s given to requests under the limit: a
// limiter at the limit (less PrecisionTolerance) lets limit × window +
// burst through, or every request when fewer were offered; a 2xx short of
// that with a 429 in its place was refused wrongly. An exact limiter, and
// one too loose, have none.
func rateLimitWrong(d *manifest.ScenarioData, windowS float64) int64 {
	if d == nil || d.LimitRPS <= 0 || windowS <= 0 {
		return 0
	}
	due := min(d.OfferedRPS*windowS, d.LimitRPS*(1-PrecisionTolerance)*windowS+d.LimitBurst)
	short := due - d.AcceptedRPS*windowS
	return int64(math.Max(0, math.Round(min(short, d.LimitedRPS*windowS))))
}

// rateLimitAccount is what the limiter let through against the limit:
// precision (2xx - burst) / window / limit is 1 when exact.
func rateLimitAccount(sh Shape, n Counts) *manifest.ScenarioData {
	if sh.LimitRPS <= 0 {
		return nil
	}
	ok := sum2xx(n.Codes)
	d := manifest.ScenarioData{LimitRPS: sh.LimitRPS, LimitBurst: sh.LimitBurst,
		OfferedRPS:  n.Rate(n.Requests + n.Errors),
		AcceptedRPS: n.Rate(ok),
		LimitedRPS:  n.Rate(n.Codes[strconv.Itoa(http.StatusTooManyRequests)])}
	if n.WindowS > 0 {
		d.Precision = (float64(ok) - sh.LimitBurst) / n.WindowS / sh.LimitRPS
	}
	return &d
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

// Precise says whether a limiter's precision is within PrecisionTolerance of 1.
func Precise(precision float64) bool { return math.Abs(precision-1) <= PrecisionTolerance }

var rateLimitTable = &Table{
	Caption: "ratelimit: open loop above the per-key limit (429s are not errors)",
	Header:  []string{"cell", "limit req/s (burst)", "offered req/s", "accepted req/s", "429 req/s", "precision", "within 10 %"},
	Right:   []bool{false, true, true, true, true, true, false},
	Notes:   []string{"precision = (2xx − burst) / window / limit: the bucket is full when the window starts, so a correct limiter lets limit × window + burst through; 1.000 is exact, below 1 too strict."},
	Row: func(c ReportCell, _ Format) ([]Field, bool) {
		sd := c.Data
		if sd == nil || sd.LimitRPS == 0 {
			return nil, false
		}
		return []Field{text(c.Name), text(fmt.Sprintf("%.0f (%.0f)", sd.LimitRPS, sd.LimitBurst)),
			text(fmt.Sprintf("%.0f", sd.OfferedRPS)), text(fmt.Sprintf("%.0f", sd.AcceptedRPS)), text(fmt.Sprintf("%.0f", sd.LimitedRPS)),
			text(fmt.Sprintf("%.3f", sd.Precision)), verdict(Precise(sd.Precision))}, true
	},
}

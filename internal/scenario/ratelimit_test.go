package scenario

import (
	"math"
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func TestRateLimitSupportAndShape(t *testing.T) {
	t.Parallel()
	if sk := ratelimit.Skip("caddy"); sk == nil || sk.Kind != manifest.SkipNotApplicable || !strings.Contains(sk.Reason, "plugin") {
		t.Errorf("caddy: %+v", sk)
	}
	sh := ratelimit.Resolve(defaults)
	if sh.LimitRPS != RateLimitRPS || sh.LimitBurst != RateLimitBurst || ratelimit.OpenRate(Settings{RateLimitOffered: 1234}) != 1234 ||
		ratelimit.Header.Get(APIKeyHeader) != RateLimitKey || ratelimit.Path("go", defaults) != "/rl/go/" {
		t.Errorf("shape %+v, header %v", sh, ratelimit.Header)
	}
	if !Matches("429", ratelimit.Statuses()) || Matches("503", ratelimit.Statuses()) {
		t.Errorf("ratelimit expects %v", ratelimit.Statuses())
	}
}

func TestRateLimitAccountAndJudging(t *testing.T) {
	t.Parallel()
	sh := ratelimit.Resolve(defaults)
	tests := []struct {
		name     string
		ok, lim  int64
		wantPrec float64
		precise  bool
	}{
		{"exact limiter", 10050, 4950, 1, true},
		{"too strict", 9050, 5950, 0.9, true},
		{"counting denied requests too (haproxy http_req_rate)", 3383, 11617, 0.3333, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := Counts{WindowS: 10, Requests: tt.ok + tt.lim, Codes: map[string]int64{"200": tt.ok, "429": tt.lim}}
			d := rateLimitAccount(sh, n)
			if d == nil || math.Abs(d.Precision-tt.wantPrec) > 1e-3 || d.OfferedRPS != 1500 || d.LimitedRPS != float64(tt.lim)/10 ||
				d.AcceptedRPS != float64(tt.ok)/10 || d.LimitRPS != RateLimitRPS {
				t.Fatalf("got %+v, want precision %g", d, tt.wantPrec)
			}
			fs, ok := row(t, rateLimitTable, ReportCell{Name: "c", Data: d})
			if !ok || (fs[6].Text == "yes") != tt.precise {
				t.Errorf("row %q, want within 10 %%: %v", texts(fs), tt.precise)
			}
		})
	}
	if d := rateLimitAccount(sh, Counts{}); d == nil || d.Precision != 0 || d.OfferedRPS != 0 {
		t.Errorf("empty window: %+v", d)
	}
}

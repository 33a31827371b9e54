package scenario

import (
	"testing"

	"proxybench/internal/manifest"
)

// TestWrongAnswers: an expected status given to the wrong request is
// counted (a 401 to a valid key, a 2xx to an invalid one, a 429 under the
// limit); the right answers, and statuses judged elsewhere (a 5xx), are
// not.
func TestWrongAnswers(t *testing.T) {
	authData := &manifest.ScenarioData{Variants: map[string]manifest.VariantCount{
		"valid":   {Want: 200, Codes: map[string]int64{"200": 900, "401": 30, "502": 5}},
		"missing": {Want: 401, Codes: map[string]int64{"401": 50, "200": 2}},
		"wrong":   {Want: 401, Codes: map[string]int64{"401": 50}},
	}}
	limit := func(offered, accepted, limited float64) *manifest.ScenarioData {
		return &manifest.ScenarioData{LimitRPS: 1000, LimitBurst: 50, OfferedRPS: offered, AcceptedRPS: accepted, LimitedRPS: limited}
	}
	for _, c := range []struct {
		name     string
		scenario string
		d        *manifest.ScenarioData
		want     int64
	}{
		{"auth: 30 valid keys refused, 2 missing keys let through", "auth", authData, 32},
		{"ratelimit: exact", "ratelimit", limit(1500, 1010, 490), 0},
		{"ratelimit: too loose", "ratelimit", limit(1500, 1400, 100), 0},
		{"ratelimit: 5 % too strict, within the tolerance", "ratelimit", limit(1500, 960, 540), 0},
		// 429 to everything: every request the limit lets through was refused.
		{"ratelimit: refuses all", "ratelimit", limit(1500, 0, 1500), 9050},
		{"ratelimit: refuses under the limit", "ratelimit", limit(500, 300, 200), 2000},
		{"simple has none", "simple", authData, 0},
	} {
		if got := WrongAnswers(c.scenario, c.d, 10); got != c.want {
			t.Errorf("%s: %d wrong answers, want %d", c.name, got, c.want)
		}
	}
}

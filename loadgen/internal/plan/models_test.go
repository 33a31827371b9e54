package plan

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"proxybench/loadgen/internal/load"
)

// Every cell carries its complete load model, parsed once from the plan:
// the tier's window for closed and open loops, the stages as they are, and
// the scenario's own open loop (ratelimit) with the plan's concurrency as
// its cap. The cell's shown fields are the model's.
func TestCellLoadModels(t *testing.T) {
	t.Parallel()
	st := []load.Stage{{Duration: 10 * time.Second, Target: 100}, {Duration: 20 * time.Second, Target: 300}}
	for _, tc := range []struct {
		args string
		want map[string]load.Model // by scenario.tier
	}{
		{"-proxies haproxy -origins fast -scenarios simple,ratelimit -tier quick,60s -concurrency 7", map[string]load.Model{
			"simple.quick":    load.Closed{Connections: 7, Duration: 5 * time.Second},
			"simple.60s":      load.Closed{Connections: 7, Duration: time.Minute},
			"ratelimit.quick": load.Open{Rate: 1500, MaxInFlight: 7, Duration: 5 * time.Second},
			"ratelimit.60s":   load.Open{Rate: 1500, MaxInFlight: 7, Duration: time.Minute},
		}},
		{"-proxies nginx -origins fast -scenarios simple -rate 200", map[string]load.Model{
			"simple.quick": load.Open{Rate: 200, MaxInFlight: 50, Duration: 5 * time.Second},
		}},
		{"-proxies nginx -origins fast -scenarios simple,ratelimit -stages 10s:100,20s:300", map[string]load.Model{
			"simple.stages":    load.RateStages{Stages: st, MaxInFlight: 50},
			"ratelimit.stages": load.Open{Rate: 1500, MaxInFlight: 50, Duration: 30 * time.Second},
		}},
		{"-proxies nginx -origins fast -scenarios simple -stages 10s:100,20s:300 -stage-kind concurrency", map[string]load.Model{
			"simple.stages": load.ConcurrencyStages{Stages: st},
		}},
	} {
		p, err := Load(strings.Fields(tc.args), now, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		x, err := p.Expand()
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if len(x.Cells) != len(tc.want) {
			t.Fatalf("%s: %d cells, want %d", tc.args, len(x.Cells), len(tc.want))
		}
		for _, c := range x.Cells {
			want := tc.want[c.Scenario+"."+c.Tier]
			if !reflect.DeepEqual(c.Load, want) {
				t.Errorf("%s: cell %s load %#v, want %#v", tc.args, c.ID, c.Load, want)
				continue
			}
			conc, rate := want.Summary()
			if c.Mode != want.Name() || c.Concurrency != conc || c.Rate != rate || time.Duration(c.Duration) != want.Window() {
				t.Errorf("%s: cell %s shows %s %d %g %v, its model %s %d %g %v", tc.args, c.ID, c.Mode, c.Concurrency, c.Rate,
					c.Duration, want.Name(), conc, rate, want.Window())
			}
		}
	}
}

package plan

import (
	"encoding/json"
	"proxybench/loadgen/internal/load"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
)

// Skip is why a planned cell will not run (nil: it runs), typed as the
// manifest records it. plan.json shows it as the text the manifest cell's
// reason carries (manifest.Skip.Text), e.g. "n/a: <reason>".
type Skip manifest.Skip

// MarshalJSON writes the skip's text.
func (s Skip) MarshalJSON() ([]byte, error) {
	return json.Marshal((*manifest.Skip)(&s).Text())
}

// Manifest is the skip as the manifest records it; nil for a cell that runs.
func (s *Skip) Manifest() *manifest.Skip { return (*manifest.Skip)(s) }

// settings are the plan's scenario settings as the scenarios read them.
func (p *Plan) settings() scenario.Settings {
	return scenario.Settings{AuthInvalid: p.AuthInvalid, RateLimitOffered: p.RateLimitOffered, SlowDelay: time.Duration(p.SlowDelay),
		TLSVersion: p.TLSVersion}
}

// applyScenario resolves the cell's scenario (internal/scenario) onto it:
// its path and shape, a fixed open loop where it has one, and its skip
// when it is not ready or the proxy cannot do it natively.
func (p *Plan) applyScenario(c *Cell, sc *scenario.Scenario) {
	set := p.settings()
	c.Path, c.Shape = sc.Path(c.Origin, set), sc.Resolve(set)
	if sc.OpenRate != nil { // the scenario's own open loop, p.Concurrency in flight at most
		c.Rate = sc.OpenRate(set)
		c.Load = load.Open{Rate: c.Rate, MaxInFlight: p.Concurrency, Duration: time.Duration(c.Duration)}
		c.Mode = c.Load.Name()
	}
	c.Skip = (*Skip)(sc.Skip(c.Proxy))
}

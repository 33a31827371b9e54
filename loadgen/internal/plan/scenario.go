package plan

import (
	"encoding/json"
	"fmt"
	"proxybench/loadgen/internal/load"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
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
	set := scenario.Settings{AuthInvalid: p.AuthInvalid, RateLimitOffered: p.RateLimitOffered, SlowDelay: time.Duration(p.SlowDelay),
		TLSVersion: p.TLSVersion}
	if s, err := scenario.ParseFaults(p.Faults); err == nil { // Validate reports a bad one
		set.Faults = s
	}
	return set
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
	if c.Skip == nil {
		c.Skip = (*Skip)(sc.SkipOrigin(c.Origin))
	}
	if stack.IsDirect(c.Proxy) && c.Skip == nil {
		c.Skip = directPath(c, sc)
	}
	if why := p.faultsApart(); sc.Name == scenario.FaultsName && c.Skip == nil && why != "" {
		c.Skip = &Skip{Kind: manifest.SkipNotApplicable, Reason: why}
	}
}

// faultsApart is why this plan cannot run the faults scenario's cells ("" when
// it can): one loadgen bins the window and injects the faults beside the
// compose stack. Validate refuses a plan whose only scenario is faults; in
// a group (all) its cells are skipped as not applicable, with this reason.
func (p *Plan) faultsApart() string {
	if p.Loadgens <= 1 && p.DuetSlice == 0 && p.Dist != DistSwarm {
		return ""
	}
	return fmt.Sprintf("faults with loadgens %d, duet_slice %s, dist %q: its window is binned and its faults injected by one loadgen beside the compose stack (loadgens 1, no duet_slice, dist %s)",
		p.Loadgens, p.DuetSlice, p.Dist, DistLocal)
}

// directPath points a direct control cell at the origin's own path (the
// one the proxies' route forwards); a skip when the scenario has no
// direct equivalent: the origins speak cleartext HTTP/1.1 only, and a
// route a proxy feature answers (auth, the rate limit) has nothing to be
// compared with.
func directPath(c *Cell, sc *scenario.Scenario) *Skip {
	na := func(why string) *Skip { return &Skip{Kind: manifest.SkipNotApplicable, Reason: why} }
	if sc.Secure() {
		return na("the direct control: the origins speak cleartext HTTP/1.1 only, so there is no TLS, h2 or h3 without a proxy")
	}
	path, ok := stack.OriginPath(c.Origin, c.Path)
	if !ok {
		return na("the direct control: " + c.Path + " is answered by a proxy feature, which has no equivalent without a proxy")
	}
	c.Path = path
	return nil
}

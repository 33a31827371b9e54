package plan

import (
	"fmt"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/load"
)

// Cell is one planned proxy x origin x scenario x tier x repeat.
type Cell struct {
	cellid.Key
	Path        string   `json:"path"`
	Mode        string   `json:"mode"`
	Concurrency int      `json:"concurrency"`
	Rate        float64  `json:"rate_rps,omitempty"` // offered rate: open loop; rate stages: the schedule's average over the window
	Duration    Duration `json:"duration"`
	Warmup      Duration `json:"warmup"`
	Skip        *Skip    `json:"skip,omitempty"` // why it will not run (scenario not ready, or n/a for the proxy)

	// Load is the cell's complete load model, validated with the plan:
	// Mode, Concurrency, Rate and Duration above are what it shows.
	Load load.Model `json:"-"`

	// The scenario resolved at expansion (internal/scenario): its numbers
	// (docs/scenarios.md) and the registry entry they came from.
	scenario.Shape
}

// Expanded is the plan as run: the plan plus every cell in order. It is what
// results/<run>/plan.json and the manifest's plan hold.
type Expanded struct {
	Plan
	LongRun bool   `json:"long_run"` // cooldown between proxies applies
	Cells   []Cell `json:"cells"`
}

// Expand lists the cells proxy-major (every cell of a proxy together, so a
// proxy is isolated and cooled down once), then tier (short cells first),
// repeat, origin, scenario: repeats are interleaved across origins so a
// transient disturbance does not hit all repeats of one cell.
func (p *Plan) Expand() (*Expanded, error) {
	tiers, err := p.tiers()
	if err != nil {
		return nil, fmt.Errorf("tier: %w", err)
	}
	x := &Expanded{Plan: *p, LongRun: p.LongRun()}
	models := make([]load.Model, len(tiers))
	for i, t := range tiers {
		if models[i], err = p.loadModel(t.Duration); err != nil {
			return nil, err
		}
	}
	for _, proxy := range p.Proxies {
		for ti, t := range tiers {
			m := models[ti]
			conc, rate := m.Summary()
			for r := 1; r <= p.Repeats; r++ {
				for _, origin := range p.Origins {
					for _, name := range p.Scenarios {
						sc, err := scenario.Lookup(name)
						if err != nil {
							return nil, err
						}
						c := Cell{
							Key:  cellid.New(proxy, origin, name, t.Name, r),
							Mode: m.Name(), Concurrency: conc, Rate: rate, Load: m,
							Duration: Duration(t.Duration),
						}
						if t.Duration >= WarmupThreshold {
							c.Warmup = p.Warmup
						}
						p.applyScenario(&c, sc)
						x.Cells = append(x.Cells, c)
					}
				}
			}
		}
	}
	return x, nil
}

// Estimate is how long the run takes at least: cells, warm-ups, settles,
// cooldowns and the linger (not preflight or Docker calls).
func (x *Expanded) Estimate() time.Duration {
	var d time.Duration
	prev := ""
	for i, c := range x.Cells {
		if c.Skip != nil {
			continue
		}
		if i > 0 {
			d += time.Duration(x.Settle)
		}
		if prev != "" && prev != c.Proxy && x.LongRun {
			d += max(0, time.Duration(x.Cooldown)-time.Duration(x.Settle))
		}
		prev = c.Proxy
		d += time.Duration(c.Warmup + c.Duration)
		if c.Warmup > 0 { // the quiet gap between warm-up and window
			d += time.Duration(x.Settle)
		}
	}
	return d + time.Duration(x.Linger)
}

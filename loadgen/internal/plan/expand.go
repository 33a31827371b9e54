package plan

import (
	"fmt"
	"time"

	"proxybench/internal/cellid"
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
	Skip        string   `json:"skip,omitempty"` // why it will not run (scenario not ready, or n/a for the proxy)

	// Scenario specifics (docs/scenarios.md), resolved from the scenario table.
	Method     string    `json:"method,omitempty"`           // when not GET
	Variants   []Variant `json:"variants,omitempty"`         // traffic mix, when more than one
	BodyBytes  int64     `json:"body_bytes,omitempty"`       // response body bytes every 2xx carries
	LimitRPS   float64   `json:"limit_rps,omitempty"`        // configured rate limit
	LimitBurst float64   `json:"limit_burst,omitempty"`      // its burst
	DelayS     float64   `json:"delay_seconds,omitempty"`    // slow: origin delay
	NewConn    bool      `json:"new_conn_per_req,omitempty"` // churn
}

// NA is the prefix of Skip for a cell the proxy cannot do natively.
const NA = "n/a: "

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
	for _, proxy := range p.Proxies {
		for _, t := range tiers {
			for r := 1; r <= p.Repeats; r++ {
				for _, origin := range p.Origins {
					for _, name := range p.Scenarios {
						sc, err := LookupScenario(name)
						if err != nil {
							return nil, err
						}
						c := Cell{
							Key:  cellid.New(proxy, origin, name, t.Name, r),
							Path: sc.Path(origin, p), Mode: p.Mode, Concurrency: p.Concurrency, Rate: p.Rate,
							Duration: Duration(t.Duration), Skip: sc.NotReady,
						}
						if t.Duration >= WarmupThreshold {
							c.Warmup = p.Warmup
						}
						if p.Mode == "stages" {
							c.Rate = mean(p.Stages)
							if p.StageKind == "concurrency" {
								c.Concurrency, c.Rate = int(peak(p.Stages)), 0
							}
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

// applyScenario puts the scenario's own settings on the cell: its method,
// mix and the numbers it is judged against, a fixed open loop where it has
// one, and n/a where the proxy cannot do it natively.
func (p *Plan) applyScenario(c *Cell, sc Scenario) {
	if sc.Method != "" && sc.Method != "GET" {
		c.Method = sc.Method
	}
	if v := sc.VariantsFor(p); len(v) > 1 {
		c.Variants = v
	}
	c.BodyBytes, c.LimitRPS, c.LimitBurst, c.NewConn = sc.BodyBytes, sc.Limit, sc.Burst, sc.NewConnPerRequest
	if sc.HoldsConnections {
		c.DelayS = time.Duration(p.SlowDelay).Seconds()
	}
	if sc.OpenRate != nil {
		c.Mode, c.Rate = "open", sc.OpenRate(p)
	}
	if why := sc.Support(c.Proxy); why != "" && c.Skip == "" {
		c.Skip = NA + why
	}
}

// mean is the schedule's own average rate over the measured window: the
// integral of the ramps (each stage linear from the previous target, 0
// before the first) over their total duration, i.e. scheduled / duration.
func mean(st []Stage) float64 {
	var sum, d, prev float64
	for _, s := range st {
		sec := time.Duration(s.Duration).Seconds()
		sum += (prev + s.Target) / 2 * sec
		d += sec
		prev = s.Target
	}
	if d <= 0 {
		return 0
	}
	return sum / d
}

func peak(st []Stage) float64 {
	var m float64
	for _, s := range st {
		m = max(m, s.Target)
	}
	return m
}

// Estimate is how long the run takes at least: cells, warm-ups, settles,
// cooldowns and the linger (not preflight or Docker calls).
func (x *Expanded) Estimate() time.Duration {
	var d time.Duration
	prev := ""
	for i, c := range x.Cells {
		if c.Skip != "" {
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

package plan

import (
	"fmt"
	"strconv"
	"time"

	"proxybench/internal/scenario"
)

// Cell is one planned proxy x origin x scenario x tier x repeat.
type Cell struct {
	ID          string   `json:"id"`
	Proxy       string   `json:"proxy"`
	Origin      string   `json:"origin"`
	Scenario    string   `json:"scenario"`
	Tier        string   `json:"tier"`
	Repeat      int      `json:"repeat"`
	Path        string   `json:"path"`
	Mode        string   `json:"mode"`
	Concurrency int      `json:"concurrency"`
	Rate        float64  `json:"rate_rps,omitempty"` // offered rate: open loop; rate stages: the schedule's average over the window
	Duration    Duration `json:"duration"`
	Warmup      Duration `json:"warmup"`
	Skip        *Skip    `json:"skip,omitempty"` // why it will not run (scenario not ready, or n/a for the proxy)

	// The scenario resolved at expansion (internal/scenario): its numbers
	// (docs/scenarios.md) and the registry entry they came from.
	scenario.Shape
}

// RepeatLabel is the repeat as the metric label value.
func (c Cell) RepeatLabel() string { return strconv.Itoa(c.Repeat) }

// CellID is <proxy>.<origin>.<scenario>.<tier>.r<repeat>.
func CellID(proxy, origin, scenario, tier string, repeat int) string {
	return fmt.Sprintf("%s.%s.%s.%s.r%d", proxy, origin, scenario, tier, repeat)
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
	for _, proxy := range p.Proxies {
		for _, t := range tiers {
			for r := 1; r <= p.Repeats; r++ {
				for _, origin := range p.Origins {
					for _, name := range p.Scenarios {
						sc, err := scenario.Lookup(name)
						if err != nil {
							return nil, err
						}
						c := Cell{
							ID:    CellID(proxy, origin, name, t.Name, r),
							Proxy: proxy, Origin: origin, Scenario: name, Tier: t.Name, Repeat: r,
							Mode: p.Mode, Concurrency: p.Concurrency, Rate: p.Rate,
							Duration: Duration(t.Duration),
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

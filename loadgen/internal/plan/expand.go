package plan

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
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

// Expand lists the cells tier by tier (short cells first), then in rounds:
// round r holds repeat r of every proxy x origin x scenario, proxy after
// proxy (A B C D, A B C D, ...), the direct control last when asked for, so drift over the run spreads over every
// proxy instead of landing on one (order random shuffles the proxies and
// their origins in every round, from the seed). Within a round a proxy's
// cells stay together, so it is isolated once per round.
//
// Arms (cellid): a duet or an observer study measures every cell twice in a
// row, the plan's own arm and the treated one, in ABBA order (odd repeats
// plan's arm first, even repeats the treated arm first) so that a linear
// drift cancels. With 2+ repeats and Control, the first runnable group of
// the first tier is measured once more in every round (in a duet, every
// other block of two rounds: controlRound), as the A/A control
// (cellid.ArmControl): the same cell, its copy right next to its twin, in
// alternating order (ABBA), so it sees exactly the noise a pair sees.
//
// A duet with a budget keeps only the rounds whose estimated time
// (Estimate) fits the budget, two at least: the runner may stop earlier,
// once every gated metric is decided.
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
	scs := make([]*scenario.Scenario, len(p.Scenarios))
	for i, name := range p.Scenarios {
		if scs[i], err = scenario.Lookup(name); err != nil {
			return nil, err
		}
	}
	cell := func(ti int, proxy, origin string, si int, arm string, r int) Cell {
		t, m := tiers[ti], models[ti]
		conc, rate := m.Summary()
		c := Cell{
			Key:  cellid.NewArm(proxy, origin, scs[si].Name, t.Name, arm, r),
			Mode: m.Name(), Concurrency: conc, Rate: rate, Load: m,
			Duration: Duration(t.Duration),
		}
		if t.Duration >= WarmupThreshold {
			c.Warmup = p.Warmup
		}
		p.applyScenario(&c, scs[si])
		return c
	}
	if err := p.checkSlices(tiers, models); err != nil {
		return nil, err
	}
	control := p.controlGroup(cell)
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x70726f7879))
	for ti := range tiers {
		for r := 1; r <= p.Repeats; r++ {
			for _, proxy := range p.shuffled(rng, p.roundProxies()) {
				for _, origin := range p.shuffled(rng, p.Origins) {
					for si := range scs {
						twin := control != nil && ti == 0 && control.Proxy == proxy && control.Origin == origin && control.si == si && p.controlRound(r)
						for _, arm := range p.arms(r, twin) {
							x.Cells = append(x.Cells, cell(ti, proxy, origin, si, arm, r))
						}
					}
				}
			}
		}
	}
	x.fitBudget()
	return x, nil
}

// fitBudget keeps the rounds of a duet with a budget whose estimated time
// fits it (two at least) and sets Repeats to their number.
func (x *Expanded) fitBudget() {
	if x.Budget <= 0 || x.Treated() == "" {
		return
	}
	keep := 2
	for r := 3; r <= x.Repeats; r++ {
		y := *x
		y.Cells = x.roundsUpTo(r)
		if y.Estimate() > time.Duration(x.Budget) {
			break
		}
		keep = r
	}
	x.Cells, x.Repeats = x.roundsUpTo(keep), keep
}

// roundsUpTo is the cells of rounds 1..r.
func (x *Expanded) roundsUpTo(r int) []Cell {
	var out []Cell
	for _, c := range x.Cells {
		if c.Repeat <= r {
			out = append(out, c)
		}
	}
	return out
}

// MinDuetSlice is the shortest slice of a sliced duet: a switch of the
// quota (one Docker API call) and its guard must stay a small part of it.
const MinDuetSlice = 250 * time.Millisecond

// SliceGuard is what a sliced duet leaves out after each switch of the
// quota: one CFS period (100 ms), in which the old quota may still hold,
// and the requests in flight across the switch.
const SliceGuard = 100 * time.Millisecond

// checkSlices holds a sliced duet's tiers to whole slices and its loads to
// constant ones.
func (p *Plan) checkSlices(tiers []Tier, models []load.Model) error {
	s := time.Duration(p.DuetSlice)
	if s == 0 {
		return nil
	}
	for i, t := range tiers {
		if t.Duration%s != 0 {
			return fmt.Errorf("duet_slice %s: tier %s (%s) is not a whole number of slices; pick a slice that divides every tier", s, t.Name, t.Duration)
		}
		if n := models[i].Name(); n != load.NameClosed && n != load.NameOpen {
			return fmt.Errorf("duet_slice %s: mode %s changes the load within the window; slices need a closed or open loop", s, n)
		}
	}
	return nil
}

// SharesWindow says whether cells[i] is measured in the same window as
// cells[i-1]: in a sliced duet, a pair's two arms, adjacent in the plan.
func (x *Expanded) SharesWindow(i int) bool {
	if x.DuetSlice == 0 || i == 0 || i >= len(x.Cells) {
		return false
	}
	a, b := x.Cells[i-1], x.Cells[i]
	pair := func(arm string) bool { return arm == "" || arm == cellid.ArmCandidate }
	return a.Arm != b.Arm && pair(a.Arm) && pair(b.Arm) && a.PlanKey() == b.PlanKey() && a.Repeat == b.Repeat && a.Skip == nil && b.Skip == nil
}

// Treated is the arm a duet or an observer study adds to the plan's own
// (""), or "" when the run has none.
func (p *Plan) Treated() string {
	switch {
	case p.Duet():
		return cellid.ArmCandidate
	case p.Observer:
		return cellid.ArmUnobserved
	}
	return ""
}

// controlRound says whether round r measures the A/A control: every
// round, except in a duet, whose pairs are its question: there every
// other block of two rounds (1-2, 5-6, ...), which keeps the control's
// ABBA order and leaves the pairs four fifths of the time.
func (p *Plan) controlRound(r int) bool {
	return p.Treated() != cellid.ArmCandidate || (r-1)%4 < 2
}

// arms are the arms of repeat r in the order they run: ABBA over
// repeats. The A/A control's twin (twin) has the control right next to
// the plan's own cell, before it in odd repeats of a duet or an observer
// study and after it in even ones (after, then before, without one), so
// the control's pair alternates too.
func (p *Plan) arms(r int, twin bool) []string {
	t := p.Treated()
	odd := r%2 == 1
	switch {
	case t == "" && !twin:
		return []string{""}
	case t == "" && odd:
		return []string{"", cellid.ArmControl}
	case t == "":
		return []string{cellid.ArmControl, ""}
	case !twin && odd:
		return []string{"", t}
	case !twin:
		return []string{t, ""}
	case odd:
		return []string{cellid.ArmControl, "", t}
	}
	return []string{t, "", cellid.ArmControl}
}

// roundProxies are the "proxies" of every round: the plan's, then the
// direct control (stack.Direct) when the plan asks for it, so it is
// measured in the same rounds as the proxies, with the same load, and
// shuffled with them in order random.
func (p *Plan) roundProxies() []string {
	if !p.Direct {
		return p.Proxies
	}
	return append(slices.Clone(p.Proxies), stack.Direct)
}

// shuffled is names in the plan's order, or shuffled by rng for order
// random.
func (p *Plan) shuffled(rng *rand.Rand, names []string) []string {
	if p.Order != OrderRandom {
		return names
	}
	out := slices.Clone(names)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

type controlCell struct {
	Proxy, Origin string
	si            int
}

// controlGroup is the group the A/A control copies: the first of the first
// tier, in the plan's order, that runs (not skipped); nil without one.
func (p *Plan) controlGroup(cell func(ti int, proxy, origin string, si int, arm string, r int) Cell) *controlCell {
	if !p.Control || p.Repeats < 2 {
		return nil
	}
	for _, proxy := range p.Proxies {
		for _, origin := range p.Origins {
			for si := range p.Scenarios {
				if cell(0, proxy, origin, si, "", 1).Skip == nil {
					return &controlCell{Proxy: proxy, Origin: origin, si: si}
				}
			}
		}
	}
	return nil
}

// seedOf is the random order's seed derived from the run id, so that a
// rerun under the same id repeats the order.
func seedOf(run string) int64 {
	h := fnv.New64a()
	h.Write([]byte(run))
	return int64(h.Sum64() &^ (1 << 63))
}

// Estimate is how long the run takes at least: cells, warm-ups, the quiet
// between cells (Gaps), cooldowns and the linger (not preflight or Docker
// calls).
func (x *Expanded) Estimate() time.Duration {
	var at time.Time // the run's clock, from zero
	gaps := x.Gaps()
	for i, c := range x.Cells {
		if c.Skip != nil {
			continue
		}
		if !x.SharesWindow(i) { // nothing before the first
			at = at.Add(gaps.Before(c, at))
		}
		at = at.Add(time.Duration(c.Warmup + c.Duration))
		if c.Warmup > 0 { // the quiet gap between warm-up and window
			at = at.Add(time.Duration(x.Settle))
		}
	}
	return at.Sub(time.Time{}) + time.Duration(x.Linger)
}

// Gaps keeps, over one run, when each label set last sent traffic, and
// says the quiet before each cell: Quiet, and the cooldown before a new
// proxy in a long run.
type Gaps struct {
	x     *Expanded
	last  *Cell // the last cell asked about, whose traffic came next
	ended map[string]time.Time
}

// Gaps starts the run's quiet bookkeeping.
func (x *Expanded) Gaps() *Gaps { return &Gaps{x: x, ended: map[string]time.Time{}} }

// Before is the quiet before c's traffic, asked at now, when the traffic
// of the cell asked about before it ended; nothing before the first.
func (g *Gaps) Before(c Cell, now time.Time) time.Duration {
	prev := g.last
	g.last = &c
	if prev == nil {
		return 0
	}
	g.ended[prev.LabelSet()] = now
	at, ok := g.ended[c.LabelSet()]
	d := g.x.Quiet(now.Sub(at), ok)
	if c.Proxy != prev.Proxy && g.x.LongRun {
		d = max(d, time.Duration(g.x.Cooldown))
	}
	return d
}

// Quiet is the gap before a cell's traffic. After traffic of the same label
// set (proxy, origin and scenario: the loadgen's series), the settle: the
// reporter's timing guarantee, which counts each window over its own span
// of those series. After another label set's, the settle up to
// manifest.MarginAfter: more than a scrape interval, so the series the two
// share server-side (the proxy's or the origin's container) are scraped in
// between, where counting needs no more. since is how long ago the cell's
// label set last sent traffic (ok false: not yet in this run).
func (x *Expanded) Quiet(since time.Duration, ok bool) time.Duration {
	d := min(time.Duration(x.Settle), manifest.MarginAfter)
	if ok {
		d = max(d, time.Duration(x.Settle)-since)
	}
	return d
}

// LabelSet names the loadgen series a cell's traffic is counted in.
func (c Cell) LabelSet() string { return c.Proxy + "\x00" + c.Origin + "\x00" + c.Scenario }

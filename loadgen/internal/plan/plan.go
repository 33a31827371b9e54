// Package plan owns what a benchmark run is asked to do: the Plan (from
// flags and/or a strict YAML file), its defaults and validation at load time,
// the tiers, and its expansion into the ordered list of cells the runner
// executes, each with its scenario resolved from internal/scenario. It sends
// no traffic and touches no Docker.
package plan

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"proxybench/internal/decide"
	"proxybench/internal/placement"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/load"
)

// Warm-up thresholds: warm-up and cooldown only pay off for long cells.
const (
	// WarmupThreshold is the shortest cell that gets a warm-up.
	WarmupThreshold = 30 * time.Second
	// CooldownThreshold: a run with a cell at least this long cools down
	// between proxies.
	CooldownThreshold = 30 * time.Second
)

// Plan is one run as the user asked for it. Field names are the YAML keys
// and the flag names (with '-' for '_').
type Plan struct {
	Run     string   `yaml:"run" json:"run"`         // run id, default a UTC timestamp
	Tier    string   `yaml:"tier" json:"tier"`       // quick|medium|soak|all or a comma list of durations
	Proxies []string `yaml:"proxies" json:"proxies"` // in the order they run
	Origins []string `yaml:"origins" json:"origins"` //
	// Direct adds the direct control (stack.Direct): every origin also
	// measured with no proxy, in every round, as one more "proxy".
	Direct    bool     `yaml:"direct" json:"direct,omitempty"`
	Scenarios []string `yaml:"scenarios" json:"scenarios"` // internal/scenario names and groups

	Mode        string  `yaml:"mode" json:"mode"`                     // closed|open|stages; "" picks from rate and stages (load.DefaultMode)
	Concurrency int     `yaml:"concurrency" json:"concurrency"`       // closed: connections; open: max in flight
	Rate        float64 `yaml:"rate" json:"rate"`                     // open loop requests/s; 0 = closed loop
	Stages      []Stage `yaml:"stages" json:"stages,omitempty"`       // ramp, k6 style
	MaxRate     float64 `yaml:"max_rate" json:"max_rate,omitempty"`   // the loadgen's cap on its send rate, requests/s (attack.Spec.MaxRate); 0 = none
	Loadgens    int     `yaml:"loadgens" json:"loadgens"`             // loadgen workers running every cell as one instrument (package fleet); 1 = this process alone
	Dist        string  `yaml:"dist" json:"dist,omitempty"`           // where the lab runs: local (the compose stack) or swarm (scripts/swarm.sh's stack; make bench reads it)
	Launch      string  `yaml:"launch" json:"launch,omitempty"`       // where the loadgen workers run: local (processes of this loadgen) or swarm (Swarm services on the load nodes)
	StageKind   string  `yaml:"stage_kind" json:"stage_kind"`         // rate|concurrency
	Repeats     int     `yaml:"repeats" json:"repeats"`               //
	Order       string  `yaml:"order" json:"order"`                   // interleaved|random: the proxies' order in each round of repeats
	Seed        int64   `yaml:"seed" json:"seed,omitempty"`           // random order's seed; 0 = one derived from the run id
	Control     bool    `yaml:"control" json:"control"`               // an A/A control in runs with 2+ repeats
	DuetCPUs    float64 `yaml:"duet_cpus" json:"duet_cpus,omitempty"` // duet: the candidate arm's proxy CPU quota (cores); 0 = the proxy's own
	// CandidateImage and CandidateConfig make a duet whose candidate is a
	// second container of the proxy (runner/candidate.go): another image,
	// and/or a config file (or directory) in place of the proxy's own.
	CandidateImage  string   `yaml:"candidate_image" json:"candidate_image,omitempty"`
	CandidateConfig string   `yaml:"candidate_config" json:"candidate_config,omitempty"`
	Margin          float64  `yaml:"margin" json:"margin"`                           // the relative change the run's comparisons are decided at (package decide)
	Budget          Duration `yaml:"budget" json:"budget,omitempty"`                 // duet: stop adding pairs when every gated metric is decided or this time is spent; 0 = run every repeat
	KeepDisturbed   bool     `yaml:"keep_disturbed" json:"keep_disturbed,omitempty"` // paired comparisons keep the pairs the host disturbed (a host shared by design)
	// DuetSlice, in a duet of duet_cpus alone, measures each pair in one
	// window of both cells' length that switches the quota every slice
	// (ABBA), so both arms see the same seconds of the host; 0 = each arm
	// in a window of its own.
	DuetSlice   Duration `yaml:"duet_slice" json:"duet_slice,omitempty"`
	Observer    bool     `yaml:"observer" json:"observer,omitempty"`   // observer study: every cell also with the observability stack paused
	Isolate     bool     `yaml:"isolate" json:"isolate"`               // pause the other proxies while one runs
	Warmup      Duration `yaml:"warmup" json:"warmup"`                 // before cells >= 30 s, outside the window
	Cooldown    Duration `yaml:"cooldown" json:"cooldown"`             // between proxies, runs with cells >= 30 s
	Settle      Duration `yaml:"settle" json:"settle"`                 // quiet before a cell after its label set's traffic (timing guarantee; Expanded.Quiet)
	Linger      Duration `yaml:"linger" json:"linger"`                 // at most this long: metrics kept up after the last cell until scraped
	Timeout     Duration `yaml:"timeout" json:"timeout"`               // per request
	Preflight   Duration `yaml:"preflight_wait" json:"preflight_wait"` // retry a proxy's routes up to this long
	Results     string   `yaml:"results" json:"results"`               // results root
	MetricsAddr string   `yaml:"metrics_addr" json:"metrics_addr"`     // /metrics listen address
	Project     string   `yaml:"project" json:"project"`               // compose project
	SLO         SLO      `yaml:"slo" json:"slo"`                       // carried for the reporter
	// PrometheusTargets is the directory the loadgen workers' scrape
	// targets are written to for Prometheus's file_sd while they run
	// (stack.WorkerTargetsDir, mounted into the Prometheus container); ""
	// = not written, and the workers' scrapes are not waited for.
	PrometheusTargets string `yaml:"prometheus_targets" json:"prometheus_targets"`
	// Dashboard is the listen address of the live view (loadgen/internal/live);
	// DashboardOff turns it off. Prometheus is the base URL it reads.
	Dashboard  string `yaml:"dashboard" json:"dashboard"`
	Prometheus string `yaml:"prometheus" json:"prometheus"`
	// Placement is which CPUs each role gets (internal/placement); the
	// runner resolves it for the host and checks the stack follows it.
	Placement placement.Spec `yaml:"placement" json:"placement"`
	// CeilingMaxAge is how old a cached measurement of the instrument's
	// ceiling (loadgen/internal/ceiling) may be to be reused; 0 = measure
	// it in every run.
	CeilingMaxAge Duration `yaml:"ceiling_max_age" json:"ceiling_max_age"`

	// Scenario settings (docs/scenarios.md).
	AuthInvalid      float64  `yaml:"auth_invalid" json:"auth_invalid"`           // auth: share of traffic with a missing or wrong key
	RateLimitOffered float64  `yaml:"ratelimit_offered" json:"ratelimit_offered"` // ratelimit: open-loop rate offered, req/s
	SlowDelay        Duration `yaml:"slow_delay" json:"slow_delay"`               // slow: origin delay per request
	TLSVersion       string   `yaml:"tls_version" json:"tls_version"`             // TLS scenarios: the one version offered, 1.2 or 1.3; "" = both
	Faults           string   `yaml:"faults" json:"faults"`                       // faults: the schedule, kind@from%-to%,... (scenario.ParseFaults)
}

// Stage is one ramp step as the plan file, the flags and plan.json write it
// ("10s"); the load model's is load.Stage.
type Stage struct {
	Duration Duration `yaml:"duration" json:"duration"`
	Target   float64  `yaml:"target" json:"target"`
}

// SLO is what the reporter judges a cell against; the runner only carries it.
type SLO struct {
	P99        Duration `yaml:"p99" json:"p99"`
	ErrorRatio float64  `yaml:"error_ratio" json:"error_ratio"`
}

// Default is the plan of `loadgen run` with no flags, except Run, which
// Finish fills from the clock.
func Default() Plan {
	return Plan{
		Tier:          "quick",
		Proxies:       stack.DefaultProxies(),
		Origins:       stack.DefaultOrigins(),
		Scenarios:     []string{"simple"},
		Concurrency:   50,
		Loadgens:      1,
		StageKind:     load.KindRate,
		Repeats:       1,
		Margin:        decide.DefaultMargin,
		Order:         OrderInterleaved,
		Control:       true,
		Isolate:       true,
		Warmup:        Duration(5 * time.Second),
		Cooldown:      Duration(10 * time.Second),
		Settle:        Duration(3 * time.Second),
		Linger:        Duration(5 * time.Second),
		Timeout:       Duration(10 * time.Second),
		Preflight:     Duration(10 * time.Second),
		CeilingMaxAge: Duration(30 * time.Minute),
		Results:       "results",
		MetricsAddr:   "127.0.0.1:9500",
		Dashboard:     "127.0.0.1:9600",
		Prometheus:    "http://127.0.0.1:9090",
		Project:       "proxybench",
		SLO:           SLO{P99: Duration(100 * time.Millisecond), ErrorRatio: 0.01},

		PrometheusTargets: stack.WorkerTargetsDir,

		AuthInvalid:      0.1,
		RateLimitOffered: 1.5 * scenario.RateLimitRPS,
		SlowDelay:        Duration(2 * time.Second),
		TLSVersion:       "1.3",
		Faults:           scenario.DefaultFaults,
	}
}

// Where a run's lab runs (Plan.Dist), and where its loadgen workers run
// (Plan.Launch).
const (
	DistLocal = "local"
	DistSwarm = "swarm"

	LaunchLocal = "local"
	LaunchSwarm = "swarm"
)

// MaxLoadgens bounds the loadgen workers of a run (the worker label's
// values).
const MaxLoadgens = 64

// Orders of the cells within each round of repeats.
const (
	// OrderInterleaved runs round after round (A B C D, A B C D, ...), the
	// proxies in the plan's order.
	OrderInterleaved = "interleaved"
	// OrderRandom shuffles the proxies (and within a proxy its origins) in
	// every round, from the plan's seed.
	OrderRandom = "random"
)

// RunID is the default run id: the UTC start time, sortable.
func RunID(now time.Time) string { return now.UTC().Format("20060102T150405Z") }

var runIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Finish fills the run id when empty, resolves Mode and expands scenario
// groups.
func (p *Plan) Finish(now time.Time) {
	p.Scenarios = scenario.ExpandGroups(p.Scenarios)
	if p.Run == "" {
		p.Run = RunID(now)
	}
	if p.Mode == "" {
		p.Mode = load.DefaultMode(p.Rate, len(p.Stages))
	}
	if p.Order == OrderRandom && p.Seed == 0 {
		p.Seed = seedOf(p.Run)
	}
	p.Placement.Mode = p.Placement.Name()
}

// Candidate says whether the duet's candidate is a container of its own
// (another image or config), not the proxy's container with a new quota.
func (p *Plan) Candidate() bool { return p.CandidateImage != "" || p.CandidateConfig != "" }

// Duet says whether the run is a duet: a candidate arm beside every cell.
func (p *Plan) Duet() bool { return p.DuetCPUs > 0 || p.Candidate() }

// DashboardOff as the dashboard address turns the live view off.
const DashboardOff = "off"

// Validate checks every field and reports all problems at once, each naming
// the field, the bad value and what to do.
func (p *Plan) Validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	if !runIDRe.MatchString(p.Run) || p.Run == "history" {
		bad("run %q: use 1-64 letters, digits, '.', '_' or '-' (it names results/<run>/; 'history' is reserved)", p.Run)
	}
	if _, err := ParseTiers(p.Tier); err != nil {
		bad("tier: %v", err)
	}
	if p.Dashboard != DashboardOff {
		if _, _, err := net.SplitHostPort(p.Dashboard); err != nil {
			bad("dashboard %q: want host:port (127.0.0.1:9600; port 0 = any free one) or %s", p.Dashboard, DashboardOff)
		}
		if u, err := url.Parse(p.Prometheus); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("prometheus %q: want http://host:port (the stack's is http://127.0.0.1:9090)", p.Prometheus)
		}
	}
	checkNames(&errs, "proxies", p.Proxies, func(n string) error {
		if stack.IsDirect(n) {
			return fmt.Errorf("%q is the direct control, not a proxy: ask for it with direct: true (-direct, make bench DIRECT=1)", n)
		}
		_, err := stack.LookupProxy(n)
		return err
	})
	if p.Direct && (p.Duet() || p.Observer) {
		bad("direct with a duet or an observer study: the direct control has no proxy to give a candidate or an arm; run it in a plain run")
	}
	if p.Direct && p.Dist == DistSwarm {
		bad("direct with dist %s: the direct control reaches the origins on this host's ports; use dist %s", DistSwarm, DistLocal)
	}
	checkNames(&errs, "origins", p.Origins, func(n string) error { _, err := stack.LookupOrigin(n); return err })
	checkNames(&errs, "scenarios", p.Scenarios, func(n string) error { _, err := scenario.Lookup(n); return err })

	if p.Mode == load.NameClosed && p.Rate != 0 {
		bad("rate %g with mode closed: drop the rate (closed loop) or use mode open", p.Rate)
	}
	m, err := p.loadModel(time.Second) // any tier's window: the tiers are checked above
	if err == nil {
		err = m.Validate()
	}
	for _, pr := range load.Problems(err) {
		bad("%s", p.loadWords(pr))
	}
	if p.Loadgens < 1 || p.Loadgens > MaxLoadgens {
		bad("loadgens %d: use 1..%d (1 = this process alone)", p.Loadgens, MaxLoadgens)
	} else if err == nil && p.Loadgens > 1 {
		// Each worker takes a segment of the load: every one needs a
		// connection of its own.
		if _, err := (load.Segment{Count: p.Loadgens}).Of(m); err != nil {
			for _, pr := range load.Problems(err) {
				bad("loadgens %d with concurrency %v: %s", p.Loadgens, pr.Value, pr.Need)
			}
		}
	}
	switch p.Dist {
	case "", DistLocal, DistSwarm:
	default:
		bad("dist %q: use %s (the compose stack) or %s (the Docker Swarm stack of scripts/swarm.sh)", p.Dist, DistLocal, DistSwarm)
	}
	switch p.Launch {
	case "", LaunchLocal, LaunchSwarm:
	default:
		bad("launch %q: use %s (the workers as processes of this loadgen) or %s (as Swarm services on the load nodes)", p.Launch, LaunchLocal, LaunchSwarm)
	}
	if p.Launch == LaunchSwarm && p.Dist != DistSwarm {
		bad("launch %s with dist %q: Swarm services need the lab on Docker Swarm; add dist %s (make bench DIST=swarm)", LaunchSwarm, p.Dist, DistSwarm)
	}
	if p.Mode != load.NameStages && len(p.Stages) > 0 {
		bad("stages given with mode %s: use mode stages or drop the stages", p.Mode)
	}
	if p.Concurrency < 0 || p.Concurrency > 100000 {
		bad("concurrency %d: use 1..100000", p.Concurrency)
	}
	if p.CeilingMaxAge < 0 {
		bad("ceiling_max_age %v: use a duration >= 0 (0 = measure the instrument's ceiling in every run)", p.CeilingMaxAge)
	}
	if err := load.CheckMaxRate(p.MaxRate); err != nil {
		bad("max_rate %g: the loadgen's cap on its send rate must be a finite number >= 0 requests/s (0 = none)", p.MaxRate)
	}
	if p.Rate < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) {
		bad("rate %g: must be a finite number >= 0 (0 = closed loop)", p.Rate)
	}
	if math.IsNaN(p.SLO.ErrorRatio) {
		bad("slo.error_ratio NaN: a ratio in 0..1")
	}
	if p.Repeats < 1 || p.Repeats > 100 {
		bad("repeats %d: use 1..100", p.Repeats)
	}
	if p.Order != OrderInterleaved && p.Order != OrderRandom {
		bad("order %q: use %s (round after round, the proxies in the plan's order) or %s (shuffled every round from seed)", p.Order, OrderInterleaved, OrderRandom)
	}
	if p.DuetCPUs < 0 || math.IsNaN(p.DuetCPUs) || math.IsInf(p.DuetCPUs, 0) || (p.DuetCPUs > 0 && p.DuetCPUs < 0.01) {
		bad("duet_cpus %g: the candidate's proxy CPU quota in cores, at least 0.01 (0 = no duet)", p.DuetCPUs)
	}
	if p.Duet() && p.Observer {
		bad("a duet (duet_cpus, candidate_image, candidate_config) with observer: a run is either a duet or an observer study; run them apart")
	}
	if p.CandidateConfig != "" {
		if _, err := os.Stat(p.CandidateConfig); err != nil {
			bad("candidate_config %q: %v (a config file or directory for the candidate, written like the proxy's own in compose/<proxy>/)", p.CandidateConfig, err)
		}
	}
	if p.Candidate() && p.Dist == DistSwarm {
		bad("candidate_image or candidate_config with dist %s: the candidate container runs beside the compose stack only; use dist %s", DistSwarm, DistLocal)
	}
	if !(p.Margin > 0 && p.Margin < 1) {
		bad("margin %g: the relative change the comparisons are decided at, between 0 and 1 (0.05 = 5 %%)", p.Margin)
	}
	if d := time.Duration(p.DuetSlice); d != 0 && (d < MinDuetSlice || p.DuetCPUs == 0 || p.Candidate() || p.Loadgens > 1) {
		bad("duet_slice %s: slices of a duet of duet_cpus alone, at least %s, in a closed or open loop of one loadgen (a candidate image or config listens elsewhere; stages change the load within the window); 0 = a window per arm",
			d, MinDuetSlice)
	}
	if p.Budget < 0 || (p.Budget > 0 && !p.Duet()) {
		bad("budget %s: a duet's time limit (with duet_cpus, candidate_image or candidate_config), >= 0 (0 = every repeat)", time.Duration(p.Budget))
	}
	if (p.Duet() || p.Observer) && p.Repeats < 2 {
		bad("repeats %d with a duet or an observer study: pairs need 2 repeats at least (5 to see a change beyond the noise)", p.Repeats)
	}
	for _, d := range []struct {
		name string
		v    Duration
		min  time.Duration
	}{
		{"warmup", p.Warmup, 0}, {"cooldown", p.Cooldown, 0}, {"settle", p.Settle, 0},
		{"linger", p.Linger, 0}, {"timeout", p.Timeout, time.Millisecond}, {"preflight_wait", p.Preflight, 0},
		{"slo.p99", p.SLO.P99, 0},
	} {
		if time.Duration(d.v) < d.min {
			bad("%s %s: must be at least %s", d.name, d.v, d.min)
		}
	}
	if p.SLO.ErrorRatio < 0 || p.SLO.ErrorRatio > 1 {
		bad("slo.error_ratio %g: a ratio in 0..1 (0.01 = 1%%)", p.SLO.ErrorRatio)
	}
	if p.AuthInvalid < 0 || p.AuthInvalid > 1 || math.IsNaN(p.AuthInvalid) {
		bad("auth_invalid %g: the share of auth traffic with a missing or wrong key, 0..1 (0.1 = 10%%)", p.AuthInvalid)
	}
	if !(p.RateLimitOffered > 0) || math.IsInf(p.RateLimitOffered, 0) {
		bad("ratelimit_offered %g: the open-loop rate offered to the rate limit, > 0 req/s (above %d to test it)", p.RateLimitOffered, scenario.RateLimitRPS)
	}
	if p.SlowDelay < 0 || time.Duration(p.SlowDelay) > scenario.MaxSlowDelay || time.Duration(p.SlowDelay)%time.Millisecond != 0 {
		bad("slow_delay %s: whole milliseconds in 0..%s", p.SlowDelay, scenario.MaxSlowDelay)
	}
	if p.TLSVersion != "" && p.TLSVersion != "1.2" && p.TLSVersion != "1.3" {
		bad("tls_version %q: 1.2 or 1.3 (the one version the TLS cells offer), or \"\" for both", p.TLSVersion)
	}
	if _, err := scenario.ParseFaults(p.Faults); err != nil {
		bad("%v", err)
	} else if why := p.faultsApart(); why != "" && len(p.Scenarios) == 1 && p.Scenarios[0] == scenario.FaultsName {
		bad("scenario %s", why)
	}
	if strings.TrimSpace(p.Results) == "" {
		bad("results: give the results directory (default results)")
	}
	errs = append(errs, p.Placement.Problems()...)
	if p.Project == "" && p.Isolate {
		bad("project: isolation needs the compose project name (default proxybench)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid plan:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

// loadModel parses the plan's load settings (mode, concurrency, rate,
// stages, stage kind) into their model, over a window of d for the closed
// and open loops (stages have their own). It is the one place the plan
// reads them: Validate checks the model, Expand puts it on every cell.
func (p *Plan) loadModel(d time.Duration) (load.Model, error) {
	st := make([]load.Stage, len(p.Stages))
	for i, s := range p.Stages {
		st[i] = load.Stage{Duration: time.Duration(s.Duration), Target: s.Target}
	}
	return load.Settings{Mode: p.Mode, Concurrency: p.Concurrency, Rate: p.Rate, Stages: st, StageKind: p.StageKind, Duration: d}.Model()
}

// loadWords words a problem of the load model in the plan's keys.
func (p *Plan) loadWords(pr *load.Problem) string {
	switch pr.Field {
	case "Mode":
		return fmt.Sprintf("mode %q: use closed, open or stages (or leave it empty: rate > 0 means open)", p.Mode)
	case "StageKind":
		return fmt.Sprintf("stage_kind %q: use rate (open loop) or concurrency (closed loop)", p.StageKind)
	case "Rate":
		return fmt.Sprintf("rate %g with mode %s: give a rate > 0 requests/s", p.Rate, p.Mode)
	case "Connections", "MaxInFlight":
		return fmt.Sprintf("concurrency %v: %s", pr.Value, pr.Need)
	case "Stages":
		if len(p.Stages) == 0 {
			return "mode stages without stages: " + pr.Need
		}
		return fmt.Sprintf("stages %v: %s", pr.Value, pr.Need)
	case "Stage":
		return fmt.Sprintf("stages[%d] %v: %s", pr.Stage, pr.Value, pr.Need)
	case "Target":
		return fmt.Sprintf("stages[%d] target %v: %s", pr.Stage, pr.Value, pr.Need)
	case "Duration":
		return fmt.Sprintf("tier %v: %s", pr.Value, pr.Need)
	}
	return pr.Error()
}

func checkNames(errs *[]string, field string, names []string, lookup func(string) error) {
	if len(names) == 0 {
		*errs = append(*errs, fmt.Sprintf("%s: empty; name at least one", field))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if err := lookup(n); err != nil {
			*errs = append(*errs, fmt.Sprintf("%s: %v", field, err))
		}
		if seen[n] {
			*errs = append(*errs, fmt.Sprintf("%s: %q listed twice", field, n))
		}
		seen[n] = true
	}
}

// LongRun reports whether any cell is long enough for cooldowns.
func (p *Plan) LongRun() bool {
	tiers, err := p.tiers()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(tiers, func(t Tier) bool { return t.Duration >= CooldownThreshold })
}

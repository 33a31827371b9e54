package plan

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"proxybench/loadgen/internal/load"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"proxybench/internal/placement"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/cmdflags"
)

// field is one plan setting as a flag: the flag's help text and its parser
// live here together, so the help cannot drift from what is parsed.
type field struct {
	name, usage string
	bool        bool
	get         func(*Plan) string
	set         func(*Plan, string) error
}

var fields = []field{
	{name: "run", usage: "run `id`: names results/<run>/ (default: UTC start time, e.g. 20261130T051500Z)",
		get: func(p *Plan) string { return p.Run }, set: func(p *Plan, s string) error { p.Run = s; return nil }},
	{name: "tier", usage: "`tier`: quick (5s), medium (60s), soak (300s), all, or durations such as 10s,90s",
		get: func(p *Plan) string { return p.Tier }, set: func(p *Plan, s string) error { p.Tier = s; return nil }},
	{name: "proxies", usage: "comma list of `proxies`, run in this order",
		get: func(p *Plan) string { return strings.Join(p.Proxies, ",") }, set: func(p *Plan, s string) error { p.Proxies = cmdflags.List(s); return nil }},
	{name: "direct", usage: "add the direct control: in every round, each origin measured with no proxy (the loadgen straight to its host port, same load), for the report's \"What the proxy adds\"; its latency is compared only in an open loop (-rate)", bool: true,
		get: func(p *Plan) string { return strconv.FormatBool(p.Direct) },
		set: func(p *Plan, s string) (err error) { p.Direct, err = strconv.ParseBool(s); return err }},
	{name: "origins", usage: "comma list of `origins`",
		get: func(p *Plan) string { return strings.Join(p.Origins, ",") }, set: func(p *Plan, s string) error { p.Origins = cmdflags.List(s); return nil }},
	{name: "scenarios", usage: "comma list of `scenarios` (" + scenarioNames() + ")",
		get: func(p *Plan) string { return strings.Join(p.Scenarios, ",") }, set: func(p *Plan, s string) error { p.Scenarios = cmdflags.List(s); return nil }},
	{name: "mode", usage: "load `mode`: closed, open or stages (default: open when -rate > 0, stages when -stages given, else closed)",
		get: func(p *Plan) string { return p.Mode }, set: func(p *Plan, s string) error { p.Mode = s; return nil }},
	{name: "concurrency", usage: "closed loop: connections; open loop: max requests in flight (`n`)",
		get: func(p *Plan) string { return strconv.Itoa(p.Concurrency) }, set: intField(func(p *Plan) *int { return &p.Concurrency })},
	{name: "rate", usage: "open loop `rate` in requests/s (0 = closed loop)",
		get: func(p *Plan) string { return strconv.FormatFloat(p.Rate, 'g', -1, 64) }, set: floatField(func(p *Plan) *float64 { return &p.Rate })},
	{name: "max-rate", usage: "cap the loadgen's send `rate` at this many requests/s, closed and open loop, like JMeter's throughput timer (0 = no cap); the run's instrument ceiling is measured under it",
		get: func(p *Plan) string { return strconv.FormatFloat(p.MaxRate, 'g', -1, 64) }, set: floatField(func(p *Plan) *float64 { return &p.MaxRate })},
	{name: "loadgens", usage: "run every cell on `n` loadgen worker processes as one instrument: each sends its segment of the load from one start barrier, and their exact histograms merge into one cell (1 = this process alone)",
		get: func(p *Plan) string { return strconv.Itoa(p.Loadgens) }, set: intField(func(p *Plan) *int { return &p.Loadgens })},
	{name: "dist", usage: "where the lab runs: `local` (the compose stack) or swarm (the Docker Swarm stack of scripts/swarm.sh, run in its node's namespace; make bench DIST=swarm)",
		get: func(p *Plan) string { return p.Dist }, set: func(p *Plan, s string) error { p.Dist = s; return nil }},
	{name: "launch", usage: "where the -loadgens workers run: `local`, processes of this loadgen, or swarm, each a Docker Swarm service on a node labelled for the load role (run on a Swarm manager; docs/swarm.md)",
		get: func(p *Plan) string { return p.Launch }, set: func(p *Plan, s string) error { p.Launch = s; return nil }},
	{name: "stages", usage: "ramp as `duration:target,...` pairs, e.g. 10s:100,30s:500",
		get: func(p *Plan) string { return formatStages(p.Stages) }, set: func(p *Plan, s string) (err error) { p.Stages, err = ParseStages(s); return err }},
	{name: "stage-kind", usage: "`what` -stages ramps: rate (open loop) or concurrency (closed loop)",
		get: func(p *Plan) string { return p.StageKind }, set: func(p *Plan, s string) error { p.StageKind = s; return nil }},
	{name: "repeats", usage: "repeat every cell `n` times",
		get: func(p *Plan) string { return strconv.Itoa(p.Repeats) }, set: intField(func(p *Plan) *int { return &p.Repeats })},
	{name: "order", usage: "`order` of the cells in each round of repeats: interleaved (A B C D, A B C D, ...) or random (shuffled every round from -seed)",
		get: func(p *Plan) string { return p.Order }, set: func(p *Plan, s string) error { p.Order = s; return nil }},
	{name: "seed", usage: "`seed` of -order random (0: one derived from the run id, recorded in plan.json)",
		get: func(p *Plan) string { return strconv.FormatInt(p.Seed, 10) },
		set: func(p *Plan, s string) (err error) { p.Seed, err = strconv.ParseInt(s, 10, 64); return err }},
	{name: "control", usage: "with 2+ repeats, measure the first cell twice (an A/A control) and report their difference as the run's noise", bool: true,
		get: func(p *Plan) string { return strconv.FormatBool(p.Control) },
		set: func(p *Plan, s string) (err error) { p.Control, err = strconv.ParseBool(s); return err }},
	{name: "duet-cpus", usage: "duet: measure every cell twice in a row, the candidate arm with the proxy's CPU quota set to this many `cores` (reporter diff -run compares them)",
		get: func(p *Plan) string { return strconv.FormatFloat(p.DuetCPUs, 'g', -1, 64) }, set: floatField(func(p *Plan) *float64 { return &p.DuetCPUs })},
	{name: "candidate-image", usage: "duet: the candidate is a second container of the proxy with this `image` (same cpuset, quota, workers and config unless -candidate-config)",
		get: func(p *Plan) string { return p.CandidateImage }, set: func(p *Plan, s string) error { p.CandidateImage = s; return nil }},
	{name: "candidate-config", usage: "duet: the candidate is a second container of the proxy with this config `file` (or directory) in place of its own in compose/<proxy>/; written for the proxy's usual ports, which the loadgen moves",
		get: func(p *Plan) string { return p.CandidateConfig }, set: func(p *Plan, s string) error { p.CandidateConfig = s; return nil }},
	{name: "margin", usage: "the relative change every comparison is decided at (0.05 = 5 %): worse or better by more than it, equivalent within it, or not resolved",
		get: func(p *Plan) string { return strconv.FormatFloat(p.Margin, 'g', -1, 64) }, set: floatField(func(p *Plan) *float64 { return &p.Margin })},
	{name: "budget", usage: "duet: add pairs until every gated metric is decided at -margin or this `duration` is spent (-repeats is then the most pairs); 0 = run every repeat",
		get: func(p *Plan) string { return p.Budget.String() }, set: durField(func(p *Plan) *Duration { return &p.Budget })},
	{name: "duet-slice", usage: "duet of -duet-cpus: measure each pair in one window that switches the proxy's quota every `slice` (ABBA), leaving out a guard after each switch, so both arms share the host's seconds; every tier a whole number of slices; 0 = a window per arm",
		get: func(p *Plan) string { return p.DuetSlice.String() }, set: durField(func(p *Plan) *Duration { return &p.DuetSlice })},
	{name: "keep-disturbed", usage: "paired comparisons (duet, control) keep the pairs the host disturbed instead of leaving them out and measuring others: for a host shared by design, such as a CI runner beside other jobs; the intervals then carry the host's noise", bool: true,
		get: func(p *Plan) string { return strconv.FormatBool(p.KeepDisturbed) },
		set: func(p *Plan, s string) (err error) { p.KeepDisturbed, err = strconv.ParseBool(s); return err }},
	{name: "observer", usage: "observer study: measure every cell twice in a row, once with the observability stack (Prometheus, exporter, Grafana) paused", bool: true,
		get: func(p *Plan) string { return strconv.FormatBool(p.Observer) },
		set: func(p *Plan, s string) (err error) { p.Observer, err = strconv.ParseBool(s); return err }},
	{name: "isolate", usage: "pause the other proxies of the project while one is measured", bool: true,
		get: func(p *Plan) string { return strconv.FormatBool(p.Isolate) },
		set: func(p *Plan, s string) (err error) { p.Isolate, err = strconv.ParseBool(s); return err }},
	{name: "warmup", usage: "`duration` of traffic before the window of cells >= 30s, kept out of it",
		get: func(p *Plan) string { return p.Warmup.String() }, set: durField(func(p *Plan) *Duration { return &p.Warmup })},
	{name: "cooldown", usage: "`duration` of quiet between proxies in runs with cells >= 30s",
		get: func(p *Plan) string { return p.Cooldown.String() }, set: durField(func(p *Plan) *Duration { return &p.Cooldown })},
	{name: "settle", usage: "`duration` of quiet before a cell after traffic of its proxy, origin and scenario (>= 3s keeps the reporter's counts exact); after other cells 1.5s, or this when shorter",
		get: func(p *Plan) string { return p.Settle.String() }, set: durField(func(p *Plan) *Duration { return &p.Settle })},
	{name: "linger", usage: "keep /metrics up after the last cell until Prometheus has scraped it past the last drain, at most this `long`, and wait up to as long for its first scrape before the first cell",
		get: func(p *Plan) string { return p.Linger.String() }, set: durField(func(p *Plan) *Duration { return &p.Linger })},
	{name: "timeout", usage: "per request `timeout`",
		get: func(p *Plan) string { return p.Timeout.String() }, set: durField(func(p *Plan) *Duration { return &p.Timeout })},
	{name: "preflight-wait", usage: "retry a proxy's broken routes up to this `long` before skipping its cells",
		get: func(p *Plan) string { return p.Preflight.String() }, set: durField(func(p *Plan) *Duration { return &p.Preflight })},
	{name: "results", usage: "results `dir`: the run goes to <results>/<run>/",
		get: func(p *Plan) string { return p.Results }, set: func(p *Plan, s string) error { p.Results = s; return nil }},
	{name: "metrics-addr", usage: "listen `address` of /metrics for Prometheus (loopback by default; the bridge stack needs the docker bridge's gateway, which make bench passes)",
		get: func(p *Plan) string { return p.MetricsAddr }, set: func(p *Plan, s string) error { p.MetricsAddr = s; return nil }},
	{name: "dashboard", usage: "listen `address` of the live view (host:port; port 0 = any free one; its URL is logged at start); " + DashboardOff + " = none",
		get: func(p *Plan) string { return p.Dashboard }, set: func(p *Plan, s string) error { p.Dashboard = s; return nil }},
	{name: "prometheus", usage: "base `URL` of the Prometheus the live view reads (its own counters when it does not answer)",
		get: func(p *Plan) string { return p.Prometheus }, set: func(p *Plan, s string) error { p.Prometheus = s; return nil }},
	{name: "prometheus-targets", usage: "`dir` where -loadgens N writes its workers' scrape targets for Prometheus (file_sd; the stack mounts " + stack.WorkerTargetsDir + " of the repository); \"\" = none: Prometheus does not scrape the workers",
		get: func(p *Plan) string { return p.PrometheusTargets }, set: func(p *Plan, s string) error { p.PrometheusTargets = s; return nil }},
	{name: "project", usage: "compose `project` of the stack",
		get: func(p *Plan) string { return p.Project }, set: func(p *Plan, s string) error { p.Project = s; return nil }},
	{name: "placement", usage: "CPU `placement`: auto (from the host's CPUs: on 2, the proxy on one, everything else on the other) or none (no cpusets); a plan file's placement section names cpusets; the stack must run the same (make up PLACEMENT=...)",
		get: func(p *Plan) string { return p.Placement.Name() }, set: func(p *Plan, s string) error {
			if s != "" { // "": the plan file's section, else auto
				p.Placement = placement.Spec{Mode: s}
			}
			return nil
		}},
	{name: "ceiling-max-age", usage: "reuse a measurement of the instrument's ceiling (the loadgen against a trivial server under the same placement, same concurrency, cap and binary) up to this `age`; 0 = measure it in every run",
		get: func(p *Plan) string { return p.CeilingMaxAge.String() }, set: durField(func(p *Plan) *Duration { return &p.CeilingMaxAge })},
	{name: "slo-p99", usage: "p99 latency objective (`duration`), carried to the reporter",
		get: func(p *Plan) string { return p.SLO.P99.String() }, set: durField(func(p *Plan) *Duration { return &p.SLO.P99 })},
	{name: "slo-error-ratio", usage: "error `ratio` objective (0.01 = 1%), carried to the reporter",
		get: func(p *Plan) string { return strconv.FormatFloat(p.SLO.ErrorRatio, 'g', -1, 64) },
		set: floatField(func(p *Plan) *float64 { return &p.SLO.ErrorRatio })},
	{name: "auth-invalid", usage: "scenario auth: `share` of requests with a missing or wrong API key (0.1 = 10%)",
		get: func(p *Plan) string { return strconv.FormatFloat(p.AuthInvalid, 'g', -1, 64) },
		set: floatField(func(p *Plan) *float64 { return &p.AuthInvalid })},
	{name: "ratelimit-offered", usage: "scenario ratelimit: open-loop `rate` offered (requests/s) against the proxies' limit of " + strconv.Itoa(scenario.RateLimitRPS),
		get: func(p *Plan) string { return strconv.FormatFloat(p.RateLimitOffered, 'g', -1, 64) },
		set: floatField(func(p *Plan) *float64 { return &p.RateLimitOffered })},
	{name: "slow-delay", usage: "scenario slow: origin `delay` per request (up to 20s)",
		get: func(p *Plan) string { return p.SlowDelay.String() }, set: durField(func(p *Plan) *Duration { return &p.SlowDelay })},
	{name: "faults", usage: "scenario faults: the `schedule` of faults injected into the pool's second replica, kind@from%-to% of the window, comma-separated; kind kill, pause or 503 (docs/faults.md)",
		get: func(p *Plan) string { return p.Faults }, set: func(p *Plan, s string) error { p.Faults = s; return nil }},
	{name: "tls-version", usage: "TLS scenarios: the one TLS `version` the cells offer, 1.2 or 1.3 (1.2 needs a stack started with TLS_MIN_VERSION=1.2); \"\" offers both; a proxy that refuses it fails preflight",
		get: func(p *Plan) string { return p.TLSVersion }, set: func(p *Plan, s string) error { p.TLSVersion = s; return nil }},
}

// Load builds the plan of `loadgen run`: Default, then the YAML file of
// -plan, then every flag given explicitly (flags win), then Finish and
// Validate. It returns flag.ErrHelp after printing help for -h.
func Load(args []string, now time.Time, stderr io.Writer) (*Plan, error) {
	fs := flag.NewFlagSet("loadgen run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen run [-plan FILE] [flags]\n\nRuns the benchmark matrix and writes <results>/<run>/. Flags override the plan file.\n\n")
		fs.PrintDefaults()
	}
	file := fs.String("plan", "", "YAML plan `file` (keys are the flag names with _ for -); flags override it")
	show := fs.String("show", "", "print the plan's value of each `key` (flag names, comma-separated: dist, results, run, plan, ...) after the plan file and the flags, resolved as the run would (the run id it would generate), and exit without running: one key prints its value, several print name=value lines; what scripts read of a plan")
	def := Default()
	raw := map[string]*rawValue{}
	for _, f := range fields {
		v := &rawValue{def: f.get(&def), bool: f.bool}
		raw[f.name] = v
		fs.Var(v, f.name, f.usage)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: loadgen run takes only flags", fs.Arg(0))
	}
	p := def
	if *file != "" {
		var err error
		if p, err = ReadFile(*file); err != nil {
			return nil, err
		}
	}
	for _, f := range fields { // in table order, only those given
		if v := raw[f.name]; v.set {
			if err := f.set(&p, v.val); err != nil {
				return nil, fmt.Errorf("flag -%s %q: %w", f.name, v.val, err)
			}
		}
	}
	p.Finish(now)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if *show != "" {
		v, err := shown(&p, *file, *show)
		if err != nil {
			return nil, err
		}
		return &p, v
	}
	return &p, nil
}

// shown answers -show keys about the finished plan p read from file: one
// key's bare value, or for several one name=value line each (no value may
// hold a newline, so that a shell reads them line by line).
func shown(p *Plan, file, keys string) (Shown, error) {
	names := strings.Split(keys, ",")
	lines := make([]string, len(names))
	for i, name := range names {
		v, ok := file, name == "plan"
		for _, f := range fields {
			if f.name == name {
				v, ok = f.get(p), true
				if f.name == "dist" {
					v = cmp.Or(v, DistLocal) // unset is the compose stack
				}
			}
		}
		if !ok {
			return "", fmt.Errorf("-show %q: not a plan key; give flag names such as dist, results, run, plan or tier, comma-separated", name)
		}
		if len(names) == 1 {
			return Shown(v), nil
		}
		if strings.ContainsAny(v, "\r\n") {
			return "", fmt.Errorf("-show %s: its value %q holds a line break, which a name=value line cannot carry; use one key", name, v)
		}
		lines[i] = name + "=" + v
	}
	return Shown(strings.Join(lines, "\n")), nil
}

// Shown is Load's answer to -show: the value asked for, to print instead
// of running.
type Shown string

func (s Shown) Error() string { return "shown: " + string(s) }

// ReadFile reads a YAML plan strictly over the defaults: an unknown key, a
// wrong type or a bad duration is an error naming the file and line.
func ReadFile(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("plan file: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return Plan{}, fmt.Errorf("plan file %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes one YAML document over Default.
func Parse(b []byte) (Plan, error) {
	p := Default()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return Plan{}, fmt.Errorf("%s (known keys: %s)", strings.Join(te.Errors, "; "), strings.Join(yamlKeys(), ", "))
		}
		return Plan{}, fmt.Errorf("%w", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Plan{}, fmt.Errorf("more than one YAML document: a plan file holds one")
	}
	return p, nil
}

// ParseStages reads 10s:100,30s:500 (load.ParseStages) into the plan's
// stages.
func ParseStages(s string) ([]Stage, error) {
	st, err := load.ParseStages(s)
	if err != nil {
		return nil, err
	}
	var out []Stage
	for _, x := range st {
		out = append(out, Stage{Duration: Duration(x.Duration), Target: x.Target})
	}
	return out, nil
}

func formatStages(st []Stage) string {
	parts := make([]string, len(st))
	for i, s := range st {
		parts[i] = fmt.Sprintf("%s:%g", s.Duration, s.Target)
	}
	return strings.Join(parts, ",")
}

func intField(ptr func(*Plan) *int) func(*Plan, string) error {
	return func(p *Plan, s string) error {
		v, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		*ptr(p) = v
		return nil
	}
}

func floatField(ptr func(*Plan) *float64) func(*Plan, string) error {
	return func(p *Plan, s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		*ptr(p) = v
		return nil
	}
}

func durField(ptr func(*Plan) *Duration) func(*Plan, string) error {
	return func(p *Plan, s string) error { return ptr(p).Set(s) }
}

func scenarioNames() string {
	return strings.Join(scenario.Names(), ", ") + "; groups " + strings.Join(scenario.GroupNames(), ", ")
}

func yamlKeys() []string {
	var keys []string
	t := reflect.TypeOf(Plan{})
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// rawValue keeps a flag's text until the file is read, so flags win over it.
type rawValue struct {
	def, val  string
	set, bool bool
}

func (v *rawValue) String() string {
	if v == nil {
		return ""
	}
	if v.set {
		return v.val
	}
	return v.def
}
func (v *rawValue) Set(s string) error { v.val, v.set = s, true; return nil }
func (v *rawValue) IsBoolFlag() bool   { return v.bool }

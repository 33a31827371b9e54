// Package ceiling is the ceiling study (`loadgen study -study ceiling`):
// a knee found at the load generator's own limit is not the proxy's. For an
// uncapped and a capped loadgen it measures the instrument's ceiling
// (loadgen/internal/ceiling) and the knee of the stack's nginx → fast, and
// checks that judging the knee against the ceiling recognises the capped
// knee as the instrument's.
package ceiling

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/ceiling"
	"proxybench/loadgen/internal/study"
)

// Study is the ceiling study.
var Study = study.Study{Name: "ceiling", Run: run}

// The ceiling study's variants.
const (
	variantUncapped = "uncapped"
	variantCapped   = "capped"
)

// target is the lab's nginx → fast origin route on the running stack.
const target = "http://127.0.0.1:8882/fast/"

// scale is how long each part of one sample runs.
type scale struct {
	conns               int           // the ceiling's and the probe's closed loop: the lab's default concurrency
	ceilWarmup, ceilWin time.Duration // the ceiling's warm-up and window
	probe               time.Duration // the closed-loop probe of the proxy that sizes the uncapped knee's steps
	kneeWarmup          time.Duration // the knee search's warm-up
	kneeStep            time.Duration // each knee step's duration
	uncappedStep        float64       // uncapped knee steps, a share of the probe's rate
	uncappedTop         float64       // the uncapped search stops at this multiple of the probe's rate
	cappedStep          float64       // capped knee steps, a share of the cap
	capShare            float64       // the cap, a share of the uncapped knee (the proxy's own limit)
	kneeP99             time.Duration // a step breaks when its p99 exceeds this
	kneeMaxErrs         float64
	kneeMaxInFlight     int
	// settle is the quiet gap before a sample's ceiling when a knee search
	// ran just before it: that search's tail (requests still draining
	// through nginx on the proxy's CPUs and the origin on the loadgen's)
	// would share the CPUs the ceiling measures on. Seen: a capped ceiling
	// measured right after a knee search broke at 15.5k req/s came out
	// 6.5 % under its cap.
	settle time.Duration
}

func scaleOf(e *study.Env) scale {
	s := scale{conns: 50, ceilWarmup: 500 * time.Millisecond, ceilWin: 2 * time.Second, probe: 2 * time.Second,
		kneeWarmup: time.Second, kneeStep: 2 * time.Second, uncappedStep: 0.025, uncappedTop: 3, cappedStep: 0.15, capShare: 0.5,
		kneeP99: 200 * time.Millisecond, kneeMaxErrs: 0.01, kneeMaxInFlight: 1000, settle: 3 * time.Second}
	if e.Tiny() {
		s.ceilWarmup, s.ceilWin, s.probe = 300*time.Millisecond, time.Second, time.Second
		s.kneeWarmup, s.kneeStep = 500*time.Millisecond, time.Second
		s.uncappedStep, s.cappedStep = 0.1, 0.3
		s.settle = 1500 * time.Millisecond
	}
	return s
}

// run reproduces the lesson of a saturation campaign whose "saturation"
// was its load generator's default throughput limit: for each variant it
// measures the loadgen's own ceiling against a trivial server under the same
// placement, then searches the knee of a real proxy, and judges the knee
// against the ceiling. Under a cap below the proxy's own limit the knee found
// is the cap, and the judgement recognises it as the instrument's.
func run(ctx context.Context, e *study.Env) error {
	sc := scaleOf(e)
	repeats := e.RepeatsOr(3)
	if e.Tiny() {
		repeats = e.RepeatsOr(1)
	}
	describe(e, sc, repeats)
	if err := e.Save(); err != nil {
		return err
	}
	if err := study.WaitHTTP(ctx, target, 30*time.Second); err != nil {
		return fmt.Errorf("the stack's nginx → fast route %s: %w (start the stack: scripts/stack.sh up)", target, err)
	}
	t := &tally{}
	for rep := 1; rep <= repeats && ctx.Err() == nil; rep++ {
		if err := t.repeat(ctx, e, sc, rep); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return t.check(e)
}

// describe fills the record's title, question, method, metrics, variants
// and the original's finding.
func describe(e *study.Env, sc scale, repeats int) {
	pl := e.Placement
	r := e.Record()
	r.Title = "The instrument's ceiling: a knee at the load generator's own limit is not the proxy's"
	r.Question = "Does a configured rate cap in the load generator (the analogue of a default throughput limit) show up as the proxy's saturation point, and does judging the knee against the instrument's ceiling catch it?"
	r.Method = []string{
		fmt.Sprintf("Ceiling: the loadgen (pinned to CPUs %s) drives a trivial server (origins/fast's server, package fastserver, as a process of its own pinned to the proxy's CPUs %s with GOMAXPROCS %d, where the proxy runs) with the open-loop engine the knee search uses, offered far more than it can send (%.0f req/s) with at most %d in flight, for %v after a %v warm-up (excluded), in three windows, %v after the previous sample's knee search; the ceiling is the best window's req/s. A knee is an open-loop claim, so it is held to the open-loop engine's ceiling, the one `loadgen run` records as open_ceiling in a run with open-loop cells; measured fresh for every sample (no cache).",
			study.CPUsOrAll(pl.Loadgen.String()), study.CPUsOrAll(pl.Proxy.String()), max(pl.Workers, 1), ceiling.OpenProbeRate, sc.conns, sc.ceilWin, sc.ceilWarmup, sc.settle),
		fmt.Sprintf("Knee: `loadgen attack -knee` against the lab's nginx → fast route (%s, the running stack): open-loop steps of %v (the first after a %v warm-up at the start rate, excluded), at most %d in flight; a step breaks when its p99 exceeds %v, its error ratio %.0f %% or fewer than 99 %% of its scheduled sends went out; the knee is the last rate that held.",
			target, sc.kneeStep, sc.kneeWarmup, sc.kneeMaxInFlight, sc.kneeP99, 100*sc.kneeMaxErrs),
		fmt.Sprintf("Uncapped: a %v closed-loop probe of the route with %d connections (no warm-up) gives the proxy's rate G; the knee steps are %g %% of G, from that rate up to %g x G.", sc.probe, sc.conns, 100*sc.uncappedStep, sc.uncappedTop),
		fmt.Sprintf("Capped: -max-rate set to %.0f %% of the same repeat's uncapped knee (the proxy's own limit; %.0f %% of G when no uncapped step held), so the cap is below what the proxy can take, like a load generator's default throughput limit below the system's capacity; the ceiling is measured again under the cap, then the knee in steps of %.0f %% of the cap up to 2 x the cap.",
			100*sc.capShare, 100*sc.capShare, 100*sc.cappedStep),
		fmt.Sprintf("Judgement: a knee at or above %.0f %% of its variant's ceiling, or one whose breaking step broke for the loadgen (its max-rate cap held sends, or it missed sends), is invalid, the instrument's limit rather than the proxy's (attack.KneeValidity, as `loadgen attack -knee -ceiling`; the reporter's instrument_ceiling flag applies the first rule).", 100*manifest.CeilingFraction),
		fmt.Sprintf("Order: %d repeat(s), interleaved: uncapped then capped in every repeat (the cap comes from the repeat's uncapped knee).", repeats),
		fmt.Sprintf("Host noise: /proc/stat is read every %v during a sample; a sample in which the hypervisor stole %.0f %% or more of some second of the loadgen's and proxy's CPUs is run again after the quiet gap, at most %d times in all (the last attempt stands, its worst second recorded as steal_share_worst; every retake is in the notes).",
			cputime.StealEvery, 100*manifest.StealStarvedShare, study.StealAttempts),
	}
	r.Metrics = []studydata.Metric{
		{Name: "ceiling_rps", Label: "instrument ceiling", Unit: "req/s", Better: "higher"},
		{Name: "knee_rps", Label: "knee (last rate that held)", Unit: "req/s", Better: "higher"},
		{Name: "knee_to_ceiling", Label: "knee / ceiling", Unit: "ratio"},
		{Name: "max_rate_rps", Label: "loadgen -max-rate cap (0 = none)", Unit: "req/s"},
		{Name: "probe_rps", Label: "closed-loop probe of the proxy (uncapped)", Unit: "req/s"},
		{Name: "knee_invalid", Label: "knee judged the instrument's (1 = invalid)", Unit: "bool"},
		{Name: "knee_broke_for_loadgen", Label: "the knee's breaking step broke for the loadgen (1 = yes)", Unit: "bool"},
		{Name: "steal_share_worst", Label: "the hypervisor's steal of the loadgen's and proxy's CPUs, worst second", Unit: "ratio", Better: "lower"},
	}
	r.Groups = []studydata.Group{{Name: "", Label: "nginx → fast, " + pl.Summary()}}
	r.Variants = []studydata.Variant{
		{Name: variantUncapped, Label: "uncapped loadgen", Detail: "no -max-rate: the loadgen's own engine limit only"},
		{Name: variantCapped, Label: "capped loadgen (-max-rate)", Detail: fmt.Sprintf("-max-rate = %.0f %% of the repeat's uncapped knee: a configured throughput limit below the proxy's capacity", 100*sc.capShare)},
	}
	r.Baseline = variantUncapped
	r.Original = []studydata.Reference{{Variant: variantCapped, Metric: "knee_rps", Value: 5000, Unit: "req/s",
		Note: "the original lab's saturation campaign was invalidated: its load generator had a default throughput limit of 5,000 req/s, so the \"saturation\" it measured was the instrument's own ceiling"}}
	r.Notes = []string{
		"The ceiling is the open-loop engine's (a goroutine per connection, each send paced by its own timer), which sends fewer requests per CPU-second than the closed loop's epoll event loop: against the same trivial server its ceiling is the lower one, and it is the one a knee search meets.",
		"In open loop a send the cap holds counts its latency from its intended send time (coordinated omission corrected), so a step above the cap breaks on sends it could not make in its window or on p99.",
	}
}

// tally is what the checks need from the samples.
type tally struct {
	order                                                      int // samples taken so far
	caps, cappedCeil, uncappedCeil, cappedRatio, uncappedRatio []float64
	cappedInvalid, uncappedValid                               int
}

// repeat takes repeat rep's two samples, uncapped then capped (the cap
// comes from the repeat's uncapped knee).
func (t *tally) repeat(ctx context.Context, e *study.Env, sc scale, rep int) error {
	var uncappedKnee, probe float64
	for _, v := range []string{variantUncapped, variantCapped} {
		if t.order > 0 {
			select {
			case <-time.After(sc.settle):
			case <-ctx.Done():
			}
		}
		t.order++
		maxRate := 0.0
		if v == variantCapped {
			base := uncappedKnee
			if base <= 0 {
				base = probe
			}
			maxRate = math.Round(sc.capShare * base)
		}
		knee, g, ok, err := t.sample(ctx, e, sc, v, rep, maxRate)
		if err != nil {
			return err
		}
		if ok && v == variantUncapped {
			uncappedKnee, probe = knee, g
		}
	}
	return nil
}

// sample measures variant v once under maxRate and adds it; ok is false
// for a failed sample (added with its error).
func (t *tally) sample(ctx context.Context, e *study.Env, sc scale, v string, rep int, maxRate float64) (knee, g float64, ok bool, err error) {
	pl := e.Placement
	s := studydata.Sample{Variant: v, Repeat: rep, Order: t.order, Start: time.Now().UTC(), Values: map[string]float64{}}
	var c *manifest.Ceiling
	var steps []attack.KneeStep
	steal, err := study.RetakeOnSteal(ctx, e, fmt.Sprintf("%s r%d", v, rep), pl.Loadgen.Union(pl.Proxy), sc.settle, func() error {
		s.Start = time.Now().UTC()
		var err error
		c, knee, g, steps, err = takeSample(ctx, e, sc, maxRate)
		return err
	})
	s.End = time.Now().UTC()
	if err != nil {
		s.Error = err.Error()
		if aerr := e.Add(s); aerr != nil {
			return 0, 0, false, aerr
		}
		return 0, 0, false, ctx.Err()
	}
	reason, invalid := attack.KneeValidity(c.RPS, knee, steps)
	_, byLoadgen := attack.KneeInstrument(steps)
	s.Values = map[string]float64{"ceiling_rps": c.RPS, "knee_rps": knee, "knee_to_ceiling": knee / c.RPS, "max_rate_rps": maxRate, "knee_invalid": b2f(invalid),
		"knee_broke_for_loadgen": b2f(byLoadgen),
		"steal_share_worst":      steal}
	if maxRate == 0 {
		s.Values["probe_rps"] = g
	}
	if err := e.Add(s); err != nil {
		return 0, 0, false, err
	}
	e.Log.Info("ceiling sample", "variant", v, "repeat", rep, "ceiling_rps", int64(c.RPS), "knee_rps", knee, "max_rate", maxRate,
		"invalid", invalid, "reason", reason, "knee_broke", kneeBroke(steps))
	switch v {
	case variantUncapped:
		t.uncappedCeil, t.uncappedRatio = append(t.uncappedCeil, c.RPS), append(t.uncappedRatio, knee/c.RPS)
		if !invalid {
			t.uncappedValid++
		}
	case variantCapped:
		t.caps, t.cappedCeil, t.cappedRatio = append(t.caps, maxRate), append(t.cappedCeil, c.RPS), append(t.cappedRatio, knee/c.RPS)
		if invalid {
			t.cappedInvalid++
		}
	}
	return knee, g, true, nil
}

// check records the checks over the samples.
func (t *tally) check(e *study.Env) error {
	caps, cappedCeil, uncappedCeil := t.caps, t.cappedCeil, t.uncappedCeil
	if len(caps) == 0 {
		return fmt.Errorf("no capped sample was measured: see the samples' errors")
	}
	worst := 0.0
	for i := range caps {
		worst = max(worst, math.Abs(cappedCeil[i]/caps[i]-1))
	}
	if err := e.AddCheck("capped ceiling is the cap", worst <= 0.05,
		"the ceiling measured under -max-rate is within %.1f %% of the cap in every capped sample (caps %s req/s, ceilings %s req/s; tolerance 5 %%)",
		100*worst, fmtList(caps), fmtList(cappedCeil)); err != nil {
		return err
	}
	above := true
	for i := range caps {
		above = above && i < len(uncappedCeil) && uncappedCeil[i] >= 1.5*caps[i]
	}
	if err := e.AddCheck("uncapped ceiling above the cap", above,
		"the uncapped ceiling is at least 1.5 x the cap in every repeat (uncapped %s req/s, caps %s req/s)", fmtList(uncappedCeil), fmtList(caps)); err != nil {
		return err
	}
	if err := e.AddCheck("capped knee recognised as the instrument's", t.cappedInvalid == len(caps),
		"%d of %d capped knees judged invalid: at or above %.0f %% of the capped ceiling, or broken by the cap (knee / ceiling %s)",
		t.cappedInvalid, len(caps), 100*manifest.CeilingFraction, fmtList(t.cappedRatio)); err != nil {
		return err
	}
	// Judged on its own numbers: the same rule, which here finds the
	// proxy's limit below the instrument's (a failure would be a true
	// finding: the lab's instrument too close to its ceiling for nginx).
	return e.AddCheck("uncapped knee judged on its own numbers", t.uncappedValid == len(uncappedCeil),
		"%d of %d uncapped knees are below %.0f %% of the uncapped ceiling and stand as the proxy's (knee / ceiling %s)",
		t.uncappedValid, len(uncappedCeil), 100*manifest.CeilingFraction, fmtList(t.uncappedRatio))
}

// takeSample measures one variant: the ceiling under maxRate, then the
// knee of the stack's nginx → fast under the same cap; uncapped (maxRate 0)
// a closed-loop probe of the route first sizes the knee's steps (g, its
// rate). why is why the knee search stopped.
func takeSample(ctx context.Context, e *study.Env, sc scale, maxRate float64) (c *manifest.Ceiling, knee, g float64, steps []attack.KneeStep, err error) {
	pl := e.Placement
	c, err = ceiling.Measure(ctx, ceiling.Options{Placement: pl.Mode, ServerCPUs: pl.Proxy, Workers: pl.Workers, LoadgenCPUs: pl.Loadgen,
		Concurrency: sc.conns, MaxRate: maxRate, Warmup: sc.ceilWarmup, Window: sc.ceilWin, Open: true, Log: e.Log})
	if err != nil {
		return nil, 0, 0, nil, err
	}
	var step, top float64
	if maxRate > 0 {
		step, top = sc.cappedStep*maxRate, 2*maxRate
	} else {
		res, err := study.Measure(ctx, study.Load{URL: target, Conns: sc.conns, Duration: sc.probe})
		if err != nil {
			return nil, 0, 0, nil, fmt.Errorf("probe of %s: %w", target, err)
		}
		if g = res.RPS(); g <= 0 {
			return nil, 0, 0, nil, fmt.Errorf("probe of %s: no response in %v (%d errors)", target, sc.probe, res.Errors)
		}
		step, top = sc.uncappedStep*g, sc.uncappedTop*g
	}
	step = math.Max(1, math.Round(step))
	a := attack.New(attack.NewMetrics(prometheus.NewRegistry()))
	s := attack.Spec{URL: target, MaxRate: maxRate, ExpectOrigin: "fast", Timeout: attack.DefaultTimeout,
		Labels: attack.Labels{Proxy: "nginx", Origin: "fast", Scenario: "study"}}
	last, steps, err := a.Knee(ctx, s, attack.KneeOptions{StartRate: step, Step: step, MaxRate: top, StepDuration: sc.kneeStep,
		MaxInFlight: sc.kneeMaxInFlight, Warmup: sc.kneeWarmup, P99: sc.kneeP99, MaxErrorRatio: sc.kneeMaxErrs}, nil)
	if err != nil {
		return nil, 0, 0, nil, fmt.Errorf("knee search against %s: %w", target, err)
	}
	return c, last, g, steps, nil
}

// kneeBroke says what ended a knee search: its last step's rate and why.
func kneeBroke(steps []attack.KneeStep) string {
	if n := len(steps); n > 0 && !steps[n-1].Held {
		return fmt.Sprintf("%g req/s: %s", steps[n-1].Rate, steps[n-1].Why)
	}
	return "every step held"
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func fmtList(xs []float64) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		if x < 10 {
			out += fmt.Sprintf("%.2f", x)
		} else {
			out += fmt.Sprintf("%.0f", x)
		}
	}
	return out
}

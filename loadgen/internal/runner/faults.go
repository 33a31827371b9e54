package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/plan"
)

// faultRun injects a faults cell's schedule (scenario.ProbeFaults) into
// the pool's second replica during the window, on the lab's clock, and
// bins the window's completions as the attack reports them: it is the
// attack's Splitter (one part per bin, no histogram groups) and its
// PartObserver. The replica is reached through the runner's Docker (the
// same client that pauses proxies for isolation): SIGKILL and start,
// pause and unpause, SIGUSR1 and SIGUSR2 (the fast origin's 503 switch).
type faultRun struct {
	r       *Runner
	sched   scenario.Schedule
	window  time.Duration
	series  *scenario.FaultSeries
	replica *dockerx.Container
	proxy   string
	na      string // why nothing is injected (no Docker, no replica)

	mu      sync.Mutex
	log     []manifest.FaultEvent
	done    chan struct{}
	started bool

	retriesBefore *float64
	retriesNA     string
}

// startFaults readies a faults cell: the replica found and healthy (a
// fault an interrupted run left behind is undone), the proxy's retry
// counter read. nil for a cell of another scenario.
func (r *Runner) startFaults(ctx context.Context, c plan.Cell) *faultRun {
	if !wants(c, scenario.ProbeFaults) {
		return nil
	}
	f := &faultRun{r: r, sched: c.Shape.Faults, window: time.Duration(c.Duration), proxy: c.Proxy,
		series: scenario.NewFaultSeries(time.Duration(c.Duration)), done: make(chan struct{})}
	switch {
	case r.Docker == nil:
		f.na = "no Docker: the lab cannot fault a replica"
	case len(f.sched) == 0:
		f.na = "an empty fault schedule"
	default:
		ctr, err := r.Docker.Service(ctx, r.Plan.Project, stack.FaultReplica.Service)
		if err != nil {
			f.na = fmt.Sprintf("replica %s not found: %v", stack.FaultReplica.Service, err)
			break
		}
		f.replica = &ctr
		f.heal(ctx, true) // a 503 an interrupted run left on is switched off
	}
	f.retriesBefore, f.retriesNA = readRetries(ctx, c.Proxy)
	return f
}

// Parts implements attack.Splitter: the window's bins.
func (f *faultRun) Parts() int { return f.series.Bins() }

// Groups implements attack.Splitter: no latency histograms of the engine's.
func (f *faultRun) Groups() int { return 0 }

// Group implements attack.Splitter.
func (f *faultRun) Group(int) int { return -1 }

// Part implements attack.Splitter: the bin of the completion.
func (f *faultRun) Part(_, done time.Time) int { return f.series.Bin(done) }

// Observe implements attack.PartObserver.
func (f *faultRun) Observe(k int, done time.Time, latency time.Duration, code int, reason string) {
	f.series.Observe(k, done, latency, code, reason)
}

// begin is called at the window's start edge: the bins start and the
// schedule runs from here.
func (f *faultRun) begin(ctx context.Context, at time.Time) {
	f.series.Begin(at)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return
	}
	f.started = true
	if f.replica == nil {
		close(f.done)
		return
	}
	go f.inject(ctx, at)
}

// inject runs the schedule from the window's start st: each fault applied
// at its from and undone at its to, the lab clock read around every
// engine call. A fault the engine refuses is logged with its error and
// the schedule goes on.
func (f *faultRun) inject(ctx context.Context, st time.Time) {
	defer close(f.done)
	clock := f.r.Clock
	for _, ft := range f.sched {
		ev := manifest.FaultEvent{Kind: ft.Kind, Replica: f.replica.Name, PlannedFrom: ft.From, PlannedTo: ft.To}
		sleepUntil(ctx, st.Add(time.Duration(ft.From*float64(f.window))))
		if ctx.Err() != nil {
			return
		}
		ev.Start = clock.Now()
		err := f.apply(ctx, ft.Kind)
		ev.Applied = clock.Now()
		if err == nil {
			sleepUntil(ctx, st.Add(time.Duration(ft.To*float64(f.window))))
		}
		ev.End = clock.Now()
		rerr := f.undo(context.WithoutCancel(ctx), ft.Kind)
		if rerr == nil {
			ev.Restored = clock.Now()
		}
		if e := errors.Join(err, rerr); e != nil {
			ev.Error = strings.ReplaceAll(e.Error(), "\n", "; ")
		}
		f.r.Log.Info("fault", "kind", ft.Kind, "replica", f.replica.Name, "start", ev.Start.Sub(st), "end", ev.End.Sub(st), "err", ev.Error)
		f.mu.Lock()
		f.log = append(f.log, ev)
		f.mu.Unlock()
	}
}

// apply injects a fault of kind into the replica.
func (f *faultRun) apply(ctx context.Context, kind string) error {
	id := f.replica.ID
	switch kind {
	case scenario.FaultKill:
		return f.r.Docker.Kill(ctx, id, "KILL")
	case scenario.FaultPause:
		return f.r.Docker.Pause(ctx, id)
	case scenario.Fault503:
		return f.r.Docker.Kill(ctx, id, "USR1")
	}
	return fmt.Errorf("unknown fault kind %q", kind)
}

// undo brings the replica back from a fault of kind.
func (f *faultRun) undo(ctx context.Context, kind string) error {
	id := f.replica.ID
	switch kind {
	case scenario.FaultKill:
		return f.r.Docker.Start(ctx, id)
	case scenario.FaultPause:
		return f.r.Docker.Unpause(ctx, id)
	case scenario.Fault503:
		return f.r.Docker.Kill(ctx, id, "USR2")
	}
	return nil
}

// heal undoes whatever fault the replica is in: thawed, started, and with
// off503 its 503 switch off (never right after a start: a process that has
// not yet set up its signal handling would end at SIGUSR2). Errors are
// logged: the cell's faults say what happened.
func (f *faultRun) heal(ctx context.Context, off503 bool) {
	d, id := f.r.Docker, f.replica.ID
	now, err := d.Inspect(ctx, id)
	if err != nil {
		f.r.Log.Warn("faults: cannot inspect the replica", "container", f.replica.Name, "err", err)
		return
	}
	switch {
	case now.State == "paused":
		err = d.Unpause(ctx, id)
	case !now.Running:
		err = d.Start(ctx, id)
	case off503:
		err = d.Kill(ctx, id, "USR2")
	}
	if err != nil {
		f.r.Log.Warn("faults: cannot bring the replica back", "container", f.replica.Name, "state", now.State, "err", err)
	}
}

// finish waits for the schedule (the window is over), heals the replica
// whatever happened, reads the proxy's retry counter again and analyses
// the window that ended at end.
func (f *faultRun) finish(ctx context.Context, end time.Time) *manifest.Faults {
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	if started {
		<-f.done
	}
	f.mu.Lock()
	log := append([]manifest.FaultEvent(nil), f.log...)
	f.mu.Unlock()
	if f.replica != nil {
		on503 := false // a 503 fault whose undo failed, or never came
		for _, ev := range log {
			on503 = on503 || ev.Kind == scenario.Fault503 && ev.Restored.IsZero()
		}
		if n := len(log); n < len(f.sched) && f.sched[n].Kind == scenario.Fault503 {
			on503 = true
		}
		f.heal(context.WithoutCancel(ctx), on503)
	}
	out := scenario.AnalyzeFaults(log, f.series, end)
	if o, err := stack.LookupOrigin(stack.FaultsOrigin); err == nil {
		out.Pool = []string{o.Service, stack.FaultReplica.Service}
	}
	if f.replica != nil {
		out.Replica = f.replica.Name
	}
	out.Unavailable = f.na
	out.RetriesSeries = scenario.FaultRetries[f.proxy].Series
	after, na := readRetries(ctx, f.proxy)
	switch {
	case f.retriesNA != "":
		out.RetriesNA = f.retriesNA
	case na != "":
		out.RetriesNA = na
	default:
		n := int64(*after - *f.retriesBefore)
		out.Retries = &n
	}
	return out
}

// readRetries reads the proxy's own count of the faults route's retries
// (scenario.FaultRetries) from its metrics endpoint; nil and why when it
// has none or it cannot be read.
func readRetries(ctx context.Context, proxy string) (*float64, string) {
	rc := scenario.FaultRetries[proxy]
	if rc.NA != "" || rc.Series == "" {
		if rc.NA == "" {
			rc.NA = "no retry counter known for " + proxy
		}
		return nil, rc.NA
	}
	p, err := stack.LookupProxy(proxy)
	if err != nil || p.Metrics == "" {
		return nil, "no metrics endpoint for " + proxy
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Metrics, nil)
	if err != nil {
		return nil, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Sprintf("%s unreadable: %v", p.Metrics, err)
	}
	defer resp.Body.Close()
	v, err := counterValue(resp.Body, rc.Series, rc.Label, rc.Value)
	if err != nil {
		return nil, fmt.Sprintf("%s at %s: %v", rc.Series, p.Metrics, err)
	}
	return &v, ""
}

// counterValue is the sum of the series name{label="value"} in a text
// exposition. A proxy exports a counter of a label value at its first
// increment (Traefik's retries), so a series absent from an exposition
// that parsed counts 0.
func counterValue(r io.Reader, name, label, value string) (float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range fams[name].GetMetric() {
		if !hasLabel(m, label, value) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum, nil
}

func hasLabel(m *dto.Metric, label, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == label && l.GetValue() == value {
			return true
		}
	}
	return false
}

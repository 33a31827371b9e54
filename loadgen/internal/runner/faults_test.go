package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/scenario"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/plan"
)

// faultDocker records what the injector asks of the engine, in order.
type faultDocker struct {
	Docker // the rest is not called
	mu     sync.Mutex
	calls  []string
	state  string
}

func (d *faultDocker) did(s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, s)
	return nil
}

func (d *faultDocker) Service(_ context.Context, project, service string) (dockerx.Container, error) {
	return dockerx.Container{ID: "b", Name: "proxybench-" + service, Service: service, Running: true}, d.did("service " + project + "/" + service)
}

func (d *faultDocker) Inspect(context.Context, string) (dockerx.Container, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return dockerx.Container{ID: "b", State: d.state, Running: d.state != "exited"}, nil
}

func (d *faultDocker) Kill(_ context.Context, _, signal string) error { return d.did("kill " + signal) }
func (d *faultDocker) Pause(context.Context, string) error            { return d.did("pause") }
func (d *faultDocker) Unpause(context.Context, string) error          { return d.did("unpause") }
func (d *faultDocker) Start(context.Context, string) error            { return d.did("start") }

// TestFaultInjector runs a 600 ms schedule of all three kinds against a
// recording engine: the replica healed first (left paused by an earlier
// run), each fault applied and undone in order at its planned time on the
// lab clock, the log in the manifest's account; nothing left to heal after.
func TestFaultInjector(t *testing.T) {
	d := &faultDocker{state: "paused"}
	r := &Runner{Plan: &plan.Expanded{Plan: plan.Plan{Project: "proxybench"}}, Docker: d, Clock: RealClock{}, Log: testLog(t)}
	sched, err := scenario.ParseFaults("kill@10%-30%,pause@40%-60%,503@70%-90%")
	if err != nil {
		t.Fatal(err)
	}
	c := plan.Cell{Duration: plan.Duration(600 * time.Millisecond)}
	c.Proxy = "nginx"
	c.Def, _ = scenario.Lookup("faults")
	c.Shape.Faults = sched
	f := r.startFaults(context.Background(), c)
	if f == nil || f.na != "" {
		t.Fatalf("startFaults: %+v", f)
	}
	d.state = "running"
	st := time.Now()
	f.begin(context.Background(), st)
	for k := range f.Parts() {
		at := st.Add(time.Duration(k) * 100 * time.Millisecond)
		f.Observe(f.Part(at, at), at, time.Millisecond, 200, "")
	}
	time.Sleep(600 * time.Millisecond)
	fs := f.finish(context.Background(), st.Add(600*time.Millisecond))
	want := "service proxybench/" + stack.FaultReplica.Service + ",unpause,kill KILL,start,pause,unpause,kill USR1,kill USR2"
	if got := strings.Join(d.calls, ","); got != want {
		t.Errorf("engine calls\n%s\nwant\n%s", got, want)
	}
	if len(fs.Log) != 3 || len(fs.Results) != 3 || fs.Replica != "proxybench-origin-fast-b" || len(fs.Pool) != 2 {
		t.Fatalf("account %+v", fs)
	}
	for i, ev := range fs.Log {
		from, to := ev.Start.Sub(st), ev.End.Sub(st)
		if ev.Kind != sched[i].Kind || ev.Error != "" || ev.Applied.Before(ev.Start) || ev.Restored.Before(ev.End) ||
			from < time.Duration(sched[i].From*600)*time.Millisecond || from > time.Duration(sched[i].From*600+50)*time.Millisecond ||
			to < time.Duration(sched[i].To*600)*time.Millisecond {
			t.Errorf("fault %d: %+v (asked %s, ended %s into the window)", i, ev, from, to)
		}
	}
	if fs.Retries != nil || !strings.Contains(fs.RetriesNA, "nginx counts no retries") {
		t.Errorf("nginx retries: %v %q", fs.Retries, fs.RetriesNA)
	}
}

func TestCounterValue(t *testing.T) {
	text := `# HELP haproxy_backend_retry_warnings_total Total number of server connection retries.
# TYPE haproxy_backend_retry_warnings_total counter
haproxy_backend_retry_warnings_total{proxy="fast"} 3
haproxy_backend_retry_warnings_total{proxy="faults"} 42
`
	if v, err := counterValue(strings.NewReader(text), "haproxy_backend_retry_warnings_total", "proxy", "faults"); err != nil || v != 42 {
		t.Errorf("faults: %v %v, want 42", v, err)
	}
	if v, err := counterValue(strings.NewReader(text), "haproxy_backend_retry_warnings_total", "proxy", "nope"); err != nil || v != 0 {
		t.Errorf("a label value not exported yet: %v %v, want 0", v, err)
	}
	if v, err := counterValue(strings.NewReader(text), "traefik_service_retries_total", "service", "faults@file"); err != nil || v != 0 {
		t.Errorf("a series not exported yet: %v %v, want 0", v, err)
	}
	if _, err := counterValue(strings.NewReader("not { an exposition"), "x", "a", "b"); err == nil {
		t.Error("no error for a broken exposition")
	}
}

package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/dockerx"
)

// engine is a fake Docker engine for the arms' bookkeeping: what they
// change on it is all a test can look at without a real one (the real
// quota and pause are exercised by the duet and observer runs on the
// stack, see README).
type engine struct {
	mu     sync.Mutex
	ctrs   []dockerx.Container
	nano   map[string]int64
	log    []string
	refuse string // a container id whose pause fails
}

func (e *engine) Containers(context.Context, string) ([]dockerx.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ctrs), nil
}
func (e *engine) Service(context.Context, string, string) (dockerx.Container, error) {
	return dockerx.Container{}, errors.New("not in this fake")
}
func (e *engine) Inspect(context.Context, string) (dockerx.Container, error) {
	return dockerx.Container{}, errors.New("not in this fake")
}
func (e *engine) Version(context.Context, dockerx.Container) (string, error) { return "", nil }
func (e *engine) Pause(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id == e.refuse {
		return errors.New("unable to freeze")
	}
	e.log = append(e.log, "pause "+id)
	return nil
}
func (e *engine) Unpause(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, "unpause "+id)
	return nil
}
func (e *engine) Stop(context.Context, string, time.Duration) error { return nil }
func (e *engine) Start(context.Context, string) error               { return nil }
func (e *engine) Kill(context.Context, string, string) error        { return nil }
func (e *engine) NanoCPUs(_ context.Context, id string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nano[id], nil
}
func (e *engine) SetNanoCPUs(_ context.Context, id string, n int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nano[id] = n
	e.log = append(e.log, fmt.Sprintf("cpus %s %g", id, float64(n)/1e9))
	return nil
}

func TestArms(t *testing.T) {
	t.Parallel()
	e := &engine{nano: map[string]int64{"px": 1e9}, ctrs: []dockerx.Container{
		{ID: "px", Name: "proxybench-nginx", State: "running", Labels: map[string]string{dockerx.LabelRole: "proxy"}},
		{ID: "prom", State: "running", Labels: map[string]string{dockerx.LabelRole: "infra"}},
		{ID: "exp", State: "running", Labels: map[string]string{dockerx.LabelRole: "infra"}},
		{ID: "graf", State: "exited", Labels: map[string]string{dockerx.LabelRole: "infra"}},
		{ID: "or", State: "running", Labels: map[string]string{dockerx.LabelRole: "origin"}},
	}}
	a := &arms{d: e, project: "p", cpus: 0.7, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	px := &e.ctrs[0]
	for _, arm := range []string{"", cellid.ArmControl} {
		if err := a.apply(ctx, arm, px, nil); err != nil || len(e.log) != 0 {
			t.Fatalf("arm %q changed the stack: %v %v", arm, err, e.log)
		}
	}
	if err := a.apply(ctx, cellid.ArmCandidate, px, nil); err != nil || e.nano["px"] != 7e8 {
		t.Fatalf("candidate: %v, quota %d", err, e.nano["px"])
	}
	a.undo(ctx)
	a.undo(ctx) // twice is harmless
	if e.nano["px"] != 1e9 {
		t.Fatalf("quota not back: %d", e.nano["px"])
	}
	if err := a.apply(ctx, cellid.ArmUnobserved, px, nil); err != nil {
		t.Fatal(err)
	}
	a.undo(ctx)
	want := []string{"cpus px 0.7", "cpus px 1", "pause prom", "pause exp", "unpause exp", "unpause prom"}
	if !slices.Equal(e.log, want) {
		t.Errorf("engine saw\n %v\nwant\n %v", e.log, want)
	}
	// A pause refused half way: what was paused comes back on undo.
	e.log, e.refuse = nil, "exp"
	if err := a.apply(ctx, cellid.ArmUnobserved, px, nil); err == nil {
		t.Fatal("refused pause not reported")
	}
	a.undo(ctx)
	if !slices.Equal(e.log, []string{"pause prom", "unpause prom"}) {
		t.Errorf("after a refused pause: %v", e.log)
	}
	if err := (&arms{log: a.log}).apply(ctx, cellid.ArmCandidate, nil, nil); err == nil {
		t.Error("a duet without Docker must refuse its candidate")
	}
	if err := a.apply(ctx, "bogus", px, nil); err == nil {
		t.Error("unknown arm accepted")
	}
}

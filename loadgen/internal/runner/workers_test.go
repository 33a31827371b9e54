package runner

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/fleet"
	"proxybench/loadgen/internal/fleet/fleettest"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

func TestMain(m *testing.M) { fleettest.Main(m) }

// recording remembers the workers it started.
type recording struct {
	fleet.Local
	mu      sync.Mutex
	handles map[int]*fleet.Handle
}

func (l *recording) Launch(ctx context.Context, i int) (*fleet.Handle, error) {
	h, err := l.Local.Launch(ctx, i)
	if err == nil {
		l.mu.Lock()
		l.handles[i] = h
		l.mu.Unlock()
	}
	return h, err
}

// loadgen run -loadgens 3: each cell runs on three worker processes and is
// written once, its counts the exact sum of theirs and of what the server
// received, with each worker's part; a worker killed in the first cell
// fails it naming the worker, keeps the others' data, and is started again
// for the second.
func TestRunOnThreeLoadgens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var handled atomic.Int64
	srv := fakeProxy(t, func(w http.ResponseWriter, r *http.Request) { origin(w, r); handled.Add(1) })
	launch := &recording{Local: fleettest.Launcher(t), handles: map[int]*fleet.Handle{}}
	var atStart []int64
	var listed []string // the workers' scrape targets as each cell ends
	targetsFile := filepath.Join(dir, "targets", stack.WorkerTargetsFile)
	h := &hooks{end: func(n int, _ manifest.Cell) {
		b, err := os.ReadFile(targetsFile)
		if err != nil {
			t.Errorf("cell %d: %v", n, err)
		}
		launch.mu.Lock()
		defer launch.mu.Unlock()
		for i := range 3 {
			if addr := launch.handles[i].Addr; !strings.Contains(string(b), `"`+addr+`"`) {
				t.Errorf("cell %d: worker %d at %s is not in the targets %s", n, i, addr, b)
			}
		}
		listed = append(listed, string(b))
	}, start: func(n int, _ plan.Cell) {
		atStart = append(atStart, handled.Load())
		if n == 1 {
			launch.mu.Lock()
			victim := launch.handles[1].Pid
			launch.mu.Unlock()
			time.AfterFunc(fleet.DefaultLead+400*time.Millisecond, func() {
				syscall.Kill(victim, syscall.SIGKILL) //nolint:errcheck // our own child, by its pid
			})
		}
	}}
	var stdout strings.Builder
	code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast,go", "-concurrency", "6", "-loadgens", "3"),
		&stdout, io.Discard, testLog(t), env{target: targets(map[string]*httptest.Server{"nginx": srv}), docker: noDocker, clock: &sleeper{},
			workers: launch, display: func(d progress.Display) progress.Display { h.Display = d; return h }})
	if code != ExitCellsBroken {
		t.Fatalf("exit %d, stdout %s", code, stdout.String())
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != 2 || len(atStart) != 2 {
		t.Fatalf("%d cells, %d started", len(m.Cells), len(atStart))
	}
	killed, next := m.Cells[0], m.Cells[1]
	if killed.Status != manifest.CellFailed || !strings.Contains(killed.Reason, "attack: loadgen worker 1 (pid ") ||
		!strings.Contains(killed.Reason, "died mid-cell (signal: killed)") || !strings.Contains(killed.Reason, "the data of 2 of the 3 workers are kept") {
		t.Errorf("the cell a worker died in: %s %q", killed.Status, killed.Reason)
	}
	if len(killed.Workers) != 3 || killed.Workers[1].Status != manifest.WorkerFailed || killed.Workers[0].Requests == 0 || killed.Workers[2].Requests == 0 ||
		killed.Requests != killed.Workers[0].Requests+killed.Workers[2].Requests {
		t.Errorf("the cell a worker died in keeps %d requests, workers %+v", killed.Requests, killed.Workers)
	}
	if next.Status != manifest.CellOK || len(next.Workers) != 3 {
		t.Fatalf("the next cell: %s %q, %d workers", next.Status, next.Reason, len(next.Workers))
	}
	var reqs, late int64
	roles := 0
	for i, w := range next.Workers {
		if w.Index != i || w.Status != manifest.WorkerOK || w.Concurrency != 2 || w.Requests == 0 || w.Latency.Count != w.Requests+w.Late ||
			w.Latency.P99 <= 0 || w.Loadgen == nil || w.ClockOffsetBoundS <= 0 || w.BarrierSkewS < 0 || w.BarrierSkewS > 0.1 {
			t.Errorf("worker %d: %+v", i, w)
		}
		reqs += w.Requests
		late += w.Late
	}
	if reqs != next.Requests || late != next.Late || next.Latency.Count != reqs+late {
		t.Errorf("the cell counts %d requests (%d late, %d in its histogram); its workers %d (%d late)", next.Requests, next.Late, next.Latency.Count, reqs, late)
	}
	if got := handled.Load() - atStart[1]; got != next.Requests+next.Late {
		t.Errorf("the server handled %d requests in the second cell, the manifest counts %d + %d late", got, next.Requests, next.Late)
	}
	// Prometheus finds every running worker in the targets file, the one
	// started again too, and none once the run is over.
	if len(listed) != 2 || listed[0] == listed[1] {
		t.Errorf("targets as the cells ended: %q, want worker 1's new address in the second", listed)
	}
	for n, l := range listed {
		if !strings.HasPrefix(l, `[`) || strings.Count(l, `"127.0.0.1:`) != 3 {
			t.Errorf("cell %d: targets %s: want the 3 workers' addresses", n+1, l)
		}
	}
	if _, err := os.Stat(targetsFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the targets file is left after the run: %v", err)
	}
	if next.Contention != nil {
		for _, r := range next.Contention.Roles {
			if r.Worker != nil {
				roles++
			}
		}
		if roles != 3 {
			t.Errorf("contention roles %+v: want the three workers'", next.Contention.Roles)
		}
	}
}

// Each worker's HdrHistogram is in the manifest, and decodes to the very
// histogram it sent.
func TestWorkersKeepTheirHistograms(t *testing.T) {
	t.Parallel()
	h := hdrhistogram.New(1, 60_000_000, 3)
	for v := int64(100); v < 50_000; v += 37 {
		h.RecordValue(v)
	}
	ws := workers([]attack.WorkerResult{
		{Index: 0, Result: &attack.Result{Requests: h.TotalCount(), Hist: h}},
		{Index: 1, Err: "loadgen worker 1 died mid-cell"},
	})
	if ws[1].Histogram != "" || ws[1].Status != "failed" {
		t.Errorf("worker 1 sent nothing yet has %+v", ws[1])
	}
	got, err := hdrhistogram.Decode([]byte(ws[0].Histogram))
	if err != nil {
		t.Fatalf("decode worker 0's histogram %.20q: %v", ws[0].Histogram, err)
	}
	if !got.Equals(h) {
		t.Errorf("decoded histogram differs: count %d vs %d, p99 %d vs %d", got.TotalCount(), h.TotalCount(), got.ValueAtQuantile(99), h.ValueAtQuantile(99))
	}
}

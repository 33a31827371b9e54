package cellmetrics

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"proxybench/internal/cellid"
	"proxybench/internal/metricslint"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// names lists the series by name: GatherAndFormat keeps only those named.
var names = []string{
	"proxybench_cell_window_start_timestamp_seconds", "proxybench_cell_window_end_timestamp_seconds",
	"proxybench_cell_concurrency", "proxybench_cell_target_rate_requests_per_second", "proxybench_cell_failed",
	"proxybench_cell_drain_end_timestamp_seconds", "proxybench_cell_proxy_cpu_seconds", "proxybench_cell_loadgen_cpu_seconds",
	"proxybench_cell_loadgen_workers",
}

// TestGolden drives one ok, one failed and one skipped cell and compares the
// exposition with testdata/cells.prom, then lints it as promtool would. The
// ok cell had late requests and a readable proxy; the failed one neither, so
// its drain end is its window end and it has no proxy CPU, and it ran on 3
// loadgen workers.
func TestGolden(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := New(reg)
	t0 := time.Unix(1_800_000_000, 250_000_000)
	ok := Cell{Run: "r1", Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1}}
	bad := ok
	bad.ID, bad.Origin = "nginx.go.simple.quick.r1", "go"
	skip := ok
	skip.ID, skip.Scenario = "nginx.fast.auth.quick.r1", "auth"

	m.Begin(ok, t0, 50, 0)
	m.End(ok, t0.Add(time.Millisecond), t0.Add(5*time.Second), false)
	proxy, lg := 1.25, 0.5
	m.Used(ok, t0.Add(5*time.Second), Usage{DrainEnd: t0.Add(5*time.Second + 300*time.Millisecond), ProxyCPUSeconds: &proxy, LoadgenCPUSeconds: &lg})
	m.Begin(bad, t0.Add(8*time.Second), 10, 1000)
	m.End(bad, t0.Add(8*time.Second), t0.Add(9*time.Second), true)
	m.Used(bad, t0.Add(9*time.Second), Usage{LoadgenCPUSeconds: &lg, Workers: 3}) // none late, proxy not read, 3 loadgen workers
	m.Skipped(skip)

	got, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "cells.prom")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if len(want) == 0 || string(got) != string(want) {
		t.Errorf("exposition differs from %s (go test -update to accept):\n%s", golden, got)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	metricslint.Check(t, got)
}

//go:build e2e

package e2e

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/stack"
)

// workersCell is what TestThreeLoadgensServerSide reads of a report.json
// cell.
type workersCell struct {
	ID         string           `json:"id"`
	ServerSide bool             `json:"server_side"`
	Requests   int64            `json:"requests"`
	Codes      map[string]int64 `json:"codes"`
	Latency    struct {
		Source string   `json:"source"`
		P50    *float64 `json:"p50"`
		P99    *float64 `json:"p99"`
		Exact  *struct {
			P50 float64 `json:"p50"`
			P99 float64 `json:"p99"`
		} `json:"exact"`
	} `json:"latency"`
	Workers []struct {
		Index    int    `json:"index"`
		Status   string `json:"status"`
		Requests int64  `json:"requests"`
	} `json:"workers"`
	Validity validity `json:"validity"`
}

// TestThreeLoadgensServerSide runs `loadgen run -loadgens 3` (nginx →
// fast) on the stack: Prometheus finds the three workers (file_sd) and
// scrapes them from before the window to after the drain, so the report
// rebuilt from it has the cell server-side: its request count is the
// manifest's exact merge, its p50 and p99 from the summed native
// histogram lie within the native-histogram bound of the manifest's exact
// ones (reporter/README.md, Reading the numbers: at most 9.05 % above or
// 8.3 % below, plus the HdrHistogram's 0.1 %), and each worker's part is in
// the report.
func TestThreeLoadgensServerSide(t *testing.T) {
	results := t.TempDir()
	run := "lg3-" + time.Now().UTC().Format("20060102T150405Z")
	targets, err := filepath.Abs(filepath.Join("..", stack.WorkerTargetsDir))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out, err := exec.Command(bin(t, "loadgen"), "run", "-run", run, "-results", results, "-linger", "5s", "-tier", "3s",
		"-proxies", "nginx", "-origins", "fast", "-concurrency", "20", "-loadgens", "3", "-isolate=false",
		"-prometheus-targets", targets).CombinedOutput()
	if code := exitCode(err); code != 0 {
		t.Fatalf("loadgen: exit %d\n%s", code, out)
	}
	if strings.Contains(string(out), "Prometheus has not scraped") || strings.Contains(string(out), "did not scrape") {
		t.Errorf("the loadgen waited for Prometheus in vain:\n%s", out)
	}
	took := time.Since(began)
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "Prometheus scraped the loadgen workers") || strings.Contains(l, "final values scraped") {
			t.Log(l)
		}
	}
	reportCells(t, results, run)
	got := readCells[workersCell](t, results, run)
	man, err := manifest.Read(filepath.Join(results, run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(man.Cells) != 1 {
		t.Fatalf("%d report cells, %d manifest cells; want 1", len(got), len(man.Cells))
	}
	checkMergedCell(t, got[0], man.Cells[0], took)
	if _, err := os.Stat(filepath.Join(targets, stack.WorkerTargetsFile)); err == nil {
		t.Errorf("the workers' targets are left in %s after the run", targets)
	}
}

// checkMergedCell holds a 3-worker cell's report (rebuilt from Prometheus)
// to its manifest: the same request and status counts, p50 and p99 within
// the native-histogram bound of the exact merge, and the workers' counts
// summing to the cell's.
func checkMergedCell(t *testing.T, c workersCell, m manifest.Cell, took time.Duration) {
	t.Helper()
	t.Logf("run took %v; Prometheus: %d requests, p50 %v p99 %v; manifest: %d requests, exact p50 %v p99 %v; flags %v",
		took.Round(100*time.Millisecond), c.Requests, deref(c.Latency.P50), deref(c.Latency.P99), m.Requests, m.Latency.P50, m.Latency.P99, c.Validity.Flags)
	for _, f := range c.Validity.Flags {
		if f.Code == "no_server_side_series" || f.Code == "prometheus_gap" {
			t.Errorf("flag %s (%s): %s", f.Code, f.Severity, f.Reason)
		}
	}
	if !c.ServerSide || c.Latency.Source != "native" {
		t.Fatalf("server side %t, latency source %q: the workers' series are not in Prometheus", c.ServerSide, c.Latency.Source)
	}
	if c.Requests == 0 || c.Requests != m.Requests || c.Codes["200"] != m.Codes["200"] {
		t.Errorf("Prometheus counts %d requests (codes %v), the manifest %d (%v): want them equal", c.Requests, c.Codes, m.Requests, m.Codes)
	}
	ex := c.Latency.Exact
	if ex == nil {
		t.Fatal("no exact latency from the manifest")
	}
	const above, below, hdr = 1.0905, 1 - 0.083, 0.001 // schema 3's bucket, the HdrHistogram's 3 significant figures
	for _, q := range []struct {
		name          string
		prom          *float64
		exact, exact2 float64
	}{{"p50", c.Latency.P50, ex.P50, m.Latency.P50}, {"p99", c.Latency.P99, ex.P99, m.Latency.P99}} {
		if q.prom == nil || q.exact <= 0 || q.exact != q.exact2 {
			t.Errorf("%s: Prometheus %v, exact %v (manifest %v)", q.name, q.prom, q.exact, q.exact2)
			continue
		}
		if r := *q.prom / q.exact; r > above*(1+hdr) || r < below*(1-hdr) || math.IsNaN(r) {
			t.Errorf("%s: Prometheus %.6f s is %+.2f %% off the exact %.6f s: outside the native-histogram bound (+9.05 %%, -8.3 %%)", q.name, *q.prom, 100*(r-1), q.exact)
		}
	}
	var sum int64
	for i, w := range c.Workers {
		if w.Index != i || w.Status != "ok" || w.Requests == 0 {
			t.Errorf("worker %d: %+v", i, w)
		}
		sum += w.Requests
	}
	if len(c.Workers) != 3 || sum != m.Requests {
		t.Errorf("the report's %d workers count %d requests, the cell %d", len(c.Workers), sum, m.Requests)
	}
}

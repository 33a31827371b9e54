//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report is the part of report.json a user relies on after `make bench`.
type report struct {
	Schema string `json:"schema"`
	Run    string `json:"run"`
	Cells  []struct {
		ID       string           `json:"id"`
		Proxy    string           `json:"proxy"`
		Origin   string           `json:"origin"`
		Failed   bool             `json:"failed"`
		Requests int64            `json:"requests"`
		RPS      *float64         `json:"rps"`
		Codes    map[string]int64 `json:"codes"`
		Latency  struct {
			P50  *float64 `json:"p50"`
			P90  *float64 `json:"p90"`
			P95  *float64 `json:"p95"`
			P99  *float64 `json:"p99"`
			P999 *float64 `json:"p99_9"`
			Max  *float64 `json:"max"`
		} `json:"latency"`
		ProxyRes struct {
			CPUMean *float64 `json:"cpu_mean_cores"`
			MemMean *float64 `json:"mem_working_set_mean_bytes"`
		} `json:"proxy_resources"`
		GC *struct {
			Cycles   *float64 `json:"cycles"`
			PauseP99 *float64 `json:"stw_pause_p99_seconds"`
		} `json:"gc"`
		Validity validity `json:"validity"`
	} `json:"cells"`
}

func loadReport(t *testing.T) report {
	t.Helper()
	dir := os.Getenv("PROXYBENCH_RUN_DIR")
	if dir == "" {
		t.Fatal("PROXYBENCH_RUN_DIR is not set: run these tests through scripts/e2e.sh (make test-e2e)")
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatalf("read report: %v", err)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decode report.json: %v", err)
	}
	return r
}

var goProxies = map[string]bool{"traefik": true, "caddy": true}

func TestQuickBenchReport(t *testing.T) {
	r := loadReport(t)
	proxies := map[string]int{}
	origins := map[string]bool{}
	for _, c := range r.Cells {
		proxies[c.Proxy]++
		origins[c.Origin] = true
		t.Run(c.ID, func(t *testing.T) {
			if c.Failed {
				t.Fatalf("cell failed")
			}
			// On 2 cores the loadgen shares CPU 0 with the origin and
			// really does wait for its CPU: the loadgen's run delay (or
			// its own cgroup's CPU pressure) says so (suspect, with the
			// figures). The hypervisor may steal a share of a CPU in
			// bursts: contended, naming steal alone. Anything else is a
			// finding the bench must not have.
			for _, f := range c.Validity.Flags {
				scheduling := f.Code == "loadgen_bound" && f.Severity == "suspect" &&
					(strings.Contains(f.Reason, "run delay") || strings.Contains(f.Reason, "PSI"))
				scheduling = scheduling || f.Code == "contended" && f.Severity == "suspect" && hostOnly(f.Reason)
				// The loadgen and the origin share CPU 0: where it, not the
				// proxy's core, was saturated, the cell says the lab limited it.
				scheduling = scheduling || f.Code == "instrument_ceiling" && f.Severity == "suspect" && strings.Contains(f.Reason, "the lab limited the cell")
				if !scheduling {
					t.Errorf("verdict %q: flag %s (%s): %s", c.Validity.Verdict, f.Code, f.Severity, f.Reason)
				} else {
					t.Logf("suspect on shared cores: %s", f.Reason)
				}
			}
			if c.Requests == 0 || c.RPS == nil || *c.RPS <= 0 {
				t.Errorf("no traffic measured: requests %d rps %v", c.Requests, c.RPS)
			}
			if ok := c.Codes["200"]; ok != c.Requests {
				t.Errorf("200s %d of %d responses (codes %v)", ok, c.Requests, c.Codes)
			}
			l := c.Latency
			ps := []*float64{l.P50, l.P90, l.P95, l.P99, l.P999, l.Max}
			for i, p := range ps {
				if p == nil || *p <= 0 {
					t.Fatalf("percentile %d missing or zero: %+v", i, l)
				}
				if i > 0 && *p < *ps[i-1] {
					t.Errorf("percentiles out of order: %v < %v (index %d)", *p, *ps[i-1], i)
				}
			}
			if c.ProxyRes.CPUMean == nil || *c.ProxyRes.CPUMean <= 0 {
				t.Errorf("proxy container CPU missing: %v", c.ProxyRes.CPUMean)
			}
			if c.ProxyRes.MemMean == nil || *c.ProxyRes.MemMean <= 0 {
				t.Errorf("proxy container memory missing: %v", c.ProxyRes.MemMean)
			}
			switch {
			case goProxies[c.Proxy] && (c.GC == nil || c.GC.Cycles == nil):
				t.Errorf("Go proxy %s has no GC section", c.Proxy)
			case !goProxies[c.Proxy] && c.GC != nil:
				t.Errorf("C proxy %s has a GC section; want it marked not applicable", c.Proxy)
			}
		})
	}
	for _, p := range []string{"nginx", "haproxy", "traefik", "caddy"} {
		if proxies[p] == 0 {
			t.Errorf("no cell for proxy %s", p)
		}
	}
	if !origins["fast"] {
		t.Errorf("no cell for the fast origin (origins %v)", origins)
	}
}

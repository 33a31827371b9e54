package build

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/promapi"
	"proxybench/reporter/internal/report"
)

// closedURL is a real 127.0.0.1 port with nothing listening: the
// "Prometheus unreachable" failure, produced for real.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestBuildFromManifestWhenPrometheusUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: "m1", Status: "done", Started: start, Updated: start,
		Plan:     []byte(`{"slo":{"p99":"2ms","error_ratio":0.01}}`),
		Versions: map[string]string{"nginx": "nginx/1.22.1"},
		Host:     manifest.Host{Hostname: "lab", CPUs: 2, Kernel: "6.1"},
		Cells: []manifest.Cell{
			{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1,
				Start: start, End: start.Add(5 * time.Second), Status: manifest.CellOK, Requests: 5000,
				Codes: map[string]int64{"200": 4990, "502": 10}, Latency: manifest.Latency{Count: 5000, Mean: 0.001, P50: 0.0009, P90: 0.0012,
					P95: 0.0013, P99: 0.0025, P999: 0.004, Max: 0.009}},
			{ID: "nginx.fast.simple.quick.r2", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 2,
				Start: start.Add(8 * time.Second), End: start.Add(13 * time.Second), Status: manifest.CellFailed, Reason: "proxy died"},
		}}
	if err := manifest.Write(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	url := closedURL(t)
	c, err := promapi.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(context.Background(), Config{Prom: c, PromURL: url, Run: "m1", RunDir: dir, Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sources.PrometheusOK || r.Sources.Discovery != "manifest" || len(r.Cells) != 2 {
		t.Fatalf("sources %+v, %d cells", r.Sources, len(r.Cells))
	}
	c1 := r.Cells[0]
	if c1.Requests != 5000 || c1.Latency.Exact == nil || c1.Latency.Exact.P99 != 0.0025 || float64(c1.ErrorRatio) != 10.0/5000 {
		t.Errorf("cell 1 from manifest: %+v", c1)
	}
	if c1.Validity.Verdict != report.Suspect || len(c1.Validity.Flags) != 1 || c1.Validity.Flags[0].Code != report.FlagNoServerSide {
		t.Errorf("cell 1 validity %+v, want suspect for lack of server-side series", c1.Validity)
	}
	if r.Cells[1].Validity.Verdict != report.Invalid {
		t.Errorf("cell 2 (failed, no counts) validity %+v, want invalid", r.Cells[1].Validity)
	}
	// SLO from the plan: exact p99 2.5 ms > 2 ms fails.
	if r.SLO.P99 != 2*time.Millisecond || c1.SLOPassed() || r.Summary.SLOFailed != 2 {
		t.Errorf("slo %+v, checks %+v, failed %d", r.SLO, c1.SLO, r.Summary.SLOFailed)
	}
	if !r.Cells[1].Failed {
		t.Error("cell 2 should be failed")
	}
	if len(r.Notes) < 2 || !strings.Contains(r.Notes[0], "unreachable") || !strings.Contains(r.Notes[1], "lack server-side series") {
		t.Errorf("notes %q", r.Notes)
	}
}

func TestBuildErrorsWithoutAnySource(t *testing.T) {
	t.Parallel()
	url := closedURL(t)
	c, _ := promapi.New(url, nil)
	_, err := Build(context.Background(), Config{Prom: c, PromURL: url, Run: "nope", RunDir: t.TempDir(), Now: time.Now})
	if err == nil || !strings.Contains(err.Error(), "nothing to report") {
		t.Fatalf("err = %v, want a nothing-to-report error", err)
	}
}

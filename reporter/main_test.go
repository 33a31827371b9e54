package main

import (
	"bytes"
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
)

// writeRun stores a one-cell manifest whose exact p99 is p99.
func writeRun(t *testing.T, results, id string, p99 float64) {
	t.Helper()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: id, Status: "done", Started: start, Updated: start,
		Cells: []manifest.Cell{{Key: cellid.Key{ID: "nginx.fast.simple.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: 1},
			Start: start, End: start.Add(5 * time.Second), Status: manifest.CellOK, Requests: 5000, Codes: map[string]int64{"200": 5000},
			Latency: manifest.Latency{Count: 5000, Mean: p99 / 2, P50: p99 / 2, P90: p99 * .8, P95: p99 * .9, P99: p99, P999: p99 * 2, Max: p99 * 3}}}}
	if err := manifest.Write(filepath.Join(results, id, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
}

func closedProm(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	writeRun(t, results, "a", 0.010)
	writeRun(t, results, "b", 0.020)
	prom := closedProm(t)
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"no command", nil, exitUsage, ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, ""},
		{"build without run", []string{"build"}, exitUsage, ""},
		{"build bad run id", []string{"build", "-run", "../x"}, exitUsage, ""},
		{"build bad slo", []string{"build", "-run", "a", "-slo-errors", "lots"}, exitUsage, ""},
		{"build ok", []string{"build", "-run", "a", "-results", results, "-prom", prom}, exitOK, "1 cells"},
		{"build slo fails", []string{"build", "-run", "b", "-results", results, "-prom", prom, "-slo-p99", "15ms"}, exitSLOFailed, "SLO"},
		{"build nothing", []string{"build", "-run", "zzz", "-results", results, "-prom", prom}, exitError, ""},
	}
	for _, tc := range tests {
		// Sequential: the diff cases below read what these builds wrote.
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb, time.Now)
		if code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", tc.name, code, tc.code, out.String(), errb.String())
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"diff regression", []string{"diff", "-a", "a", "-b", "b", "-results", results}, exitRegression},
		{"diff improvement", []string{"diff", "-a", "b", "-b", "a", "-results", results}, exitOK},
		{"diff huge threshold", []string{"diff", "-a", "a", "-b", "b", "-results", results, "-threshold", "500%"}, exitOK},
		{"diff missing run", []string{"diff", "-a", "a", "-b", "nope", "-results", results}, exitError},
		{"diff bad metric", []string{"diff", "-a", "a", "-b", "b", "-metrics", "speed"}, exitUsage},
		{"history", []string{"history", "-results", results}, exitOK},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errb, time.Now); code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, tc.code, out.String(), errb.String())
		}
	}
	idx, err := os.ReadFile(filepath.Join(results, "history", "manifest.json"))
	if err != nil || !strings.Contains(string(idx), `"run": "a"`) || !strings.Contains(string(idx), `"run": "b"`) {
		t.Errorf("history index: %v\n%s", err, idx)
	}
}

func TestRatioFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"5%", 0.05, true}, {"0.01", 0.01, true}, {" 2.5 % ", 0.025, true}, {"-1", 0, false}, {"lots", 0, false}, {"%", 0, false}, {"NaN", 0, false}, {"Inf%", 0, false}} {
		var v float64
		err := ratio{&v}.Set(tc.in)
		if (err == nil) != tc.ok || (tc.ok && v != tc.want) {
			t.Errorf("Set(%q) = %v, %v; want %v ok=%v", tc.in, v, err, tc.want, tc.ok)
		}
	}
}

func FuzzRatioFlag(f *testing.F) {
	f.Add("5%")
	f.Add("0.05")
	f.Fuzz(func(t *testing.T, s string) {
		var v float64
		if err := (ratio{&v}).Set(s); err == nil && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("accepted ratio %v from %q", v, s)
		}
	})
}

package main

import (
	"bytes"
	"context"
	"fmt"
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
func writeRun(t *testing.T, results, id string, p99 float64) { writeRepeats(t, results, id, p99, 1) }

// writeRepeats stores a manifest of n repeats of one open-loop cell (1000
// req/s offered, so p50 and p99 decide it), repeat r's exact p99 being
// p99 x (1 + r/100).
func writeRepeats(t *testing.T, results, id string, p99 float64, n int) {
	t.Helper()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &manifest.Manifest{Schema: manifest.SchemaVersion, Run: id, Status: "done", Started: start, Updated: start}
	for r := 1; r <= n; r++ {
		s, v := start.Add(time.Duration(r-1)*10*time.Second), p99*(1+float64(r)/100)
		m.Cells = append(m.Cells, manifest.Cell{Key: cellid.Key{ID: fmt.Sprintf("nginx.fast.simple.quick.r%d", r), Proxy: "nginx", Origin: "fast", Scenario: "simple", Tier: "quick", Repeat: r},
			Mode: "open", Rate: 1000, Start: s, End: s.Add(5 * time.Second), Status: manifest.CellOK, Requests: 5000, Codes: map[string]int64{"200": 5000},
			Latency: manifest.Latency{Count: 5000, Mean: v / 2, P50: v / 2, P90: v * .8, P95: v * .9, P99: v, P999: v * 2, Max: v * 3}})
	}
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
	// a and b: 5 repeats, b's p50 and p99 1.8 times a's; c and d: one
	// repeat, d's p99 twice c's.
	writeRepeats(t, results, "a", 0.010, 5)
	writeRepeats(t, results, "b", 0.018, 5)
	writeRun(t, results, "c", 0.010)
	writeRun(t, results, "d", 0.020)
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
		{"build ok", []string{"build", "-run", "a", "-results", results, "-prom", prom}, exitOK, "5 cells"},
		{"build slo fails", []string{"build", "-run", "b", "-results", results, "-prom", prom, "-slo-p99", "15ms"}, exitSLOFailed, "SLO"},
		{"build one repeat", []string{"build", "-run", "c", "-results", results, "-prom", prom}, exitOK, "1 cells"},
		{"build one repeat, slower", []string{"build", "-run", "d", "-results", results, "-prom", prom}, exitOK, "1 cells"},
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
		out  string
	}{
		{"diff regression", []string{"diff", "-a", "a", "-b", "b", "-results", results}, exitRegression, "nginx.fast.simple.quick p99_seconds: worse by more than 5.0 %: +80.0 %"},
		{"diff improvement", []string{"diff", "-a", "b", "-b", "a", "-results", results}, exitOK, "| 5/5 | better by > 5 % |"},
		// +80 % is inside a margin of 90 %.
		{"diff wide margin", []string{"diff", "-a", "a", "-b", "b", "-results", results, "-margin", "90%"}, exitOK, "equivalent within ±90 %"},
		{"diff error margin", []string{"diff", "-a", "a", "-b", "b", "-results", results, "-error-margin", "0.01"}, exitRegression, "(the error ratio: ±1 pp)"},
		// One repeat a side: no interval, no data, never a gate.
		{"diff one repeat", []string{"diff", "-a", "c", "-b", "d", "-results", results}, exitOK, "| 1/1 | no data |"},
		{"diff json", []string{"diff", "-a", "c", "-b", "d", "-results", results, "-json", "-"}, exitOK, `"schema": "proxybench.diff/v2"`},
		{"diff missing run", []string{"diff", "-a", "a", "-b", "nope", "-results", results}, exitError, ""},
		{"diff bad metric", []string{"diff", "-a", "a", "-b", "b", "-metrics", "speed"}, exitUsage, ""},
		{"diff margin of 100 %", []string{"diff", "-a", "a", "-b", "b", "-results", results, "-margin", "100%"}, exitUsage, ""},
		{"diff zero error margin", []string{"diff", "-a", "a", "-b", "b", "-results", results, "-error-margin", "0"}, exitUsage, ""},
		{"diff old -threshold", []string{"diff", "-a", "a", "-b", "b", "-results", results, "-threshold", "500%"}, exitUsage, ""},
		{"history", []string{"history", "-results", results}, exitOK, ""},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errb, time.Now); code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Errorf("%s: exit %d, want %d and %q\n%s%s", tc.name, code, tc.code, tc.out, out.String(), errb.String())
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

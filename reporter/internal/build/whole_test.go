package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/promapi"
	"proxybench/internal/promtest"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/synth"
)

var update = flag.Bool("update", false, "rewrite testdata/whole/*.golden from the current output (and the saved inputs when missing)")

// wholeDir holds a saved run's manifest (its plan included), the sha256 of
// its Prometheus series (OpenMetrics, 20 MB, made again by package synth)
// and the report the reporter made of it.
const wholeDir = "testdata/whole"

// wholeRun is the saved run: synthetic, at a fixed time, repeated, with the
// validity signals' cells.
func wholeRun() *synth.Run {
	return synth.New(synth.Options{ID: "whole-1", Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Proxies: []string{"nginx", "traefik"}, Origins: []string{"go", "fast"}, Repeats: 2, DurationS: 5, FlagCells: true})
}

// wholeInputs returns the saved run's series, checked against their saved
// sha256. With -update it saves the inputs when they are missing: the
// manifest with a plan that has an SLO, a margin, a timeout and isolation.
func wholeInputs(t *testing.T) []byte {
	run := wholeRun()
	om := run.OpenMetrics()
	sum := fmt.Sprintf("%x\n", sha256.Sum256(om))
	hp, mp := filepath.Join(wholeDir, "metrics.om.sha256"), filepath.Join(wholeDir, "manifest.json")
	if _, err := os.Stat(mp); err != nil && *update {
		m := run.Manifest()
		m.Plan = []byte(`{"run":"whole-1","isolate":true,"timeout":"10s","margin":0.05,"keep_disturbed":false,"slo":{"p99":"5ms","error_ratio":0.01}}`)
		if err := os.MkdirAll(wholeDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(sum), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := manifest.Write(mp, m); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(hp)
	if err != nil {
		t.Fatalf("%v (run go test -update once to save the inputs)", err)
	}
	if string(want) != sum {
		t.Fatalf("package synth made other series than the saved run's (sha256 %s, saved %s): the input changed, not the reporter", sum, want)
	}
	return om
}

// TestWholeReportGolden builds the report of a saved run with real
// Prometheus and compares every file the reporter writes (report.json,
// report.md, report.html, the figures) byte for byte with the saved ones:
// from the saved manifest (the plan's settings read from its plan) and
// from the same manifest as written today (the settings carried).
func TestWholeReportGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	om := wholeInputs(t)
	srv := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, om)})
	c, err := promapi.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := manifest.Read(filepath.Join(wholeDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if saved.Settings != nil {
		t.Fatal("the saved manifest has settings: it stands for one written before manifests had them")
	}
	// Today's manifest: the plan's settings carried as Settings, no plan.
	set, err := saved.PlanSettings()
	if err != nil {
		t.Fatal(err)
	}
	today := *saved
	today.Settings, today.Plan = &set, nil
	for _, tc := range []struct {
		name string
		man  *manifest.Manifest
	}{{"saved", saved}, {"settings", &today}} {
		t.Run(tc.name, func(t *testing.T) { wholeReport(t, c, tc.man) })
	}
}

// wholeReport builds the report of the saved run with manifest man and
// compares its files with the goldens.
func wholeReport(t *testing.T, c *promapi.Client, man *manifest.Manifest) {
	runDir := t.TempDir()
	if err := manifest.Write(filepath.Join(runDir, "manifest.json"), man); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 15, 0, 0, 0, time.UTC)
	r, err := Report(context.Background(), Config{Prom: c, PromURL: "prometheus", Run: "whole-1", RunDir: runDir,
		Thresholds: report.DefaultThresholds, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r.Sources.PrometheusVersion = "" // the test binary's, not the run's
	out := t.TempDir()
	if err := output.Write(out, r); err != nil {
		t.Fatal(err)
	}
	var names []string
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			names = append(names, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if len(names) < 4 {
		t.Fatalf("the reporter wrote only %v", names)
	}
	for _, n := range names {
		got, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		gp := filepath.Join(wholeDir, filepath.Base(n)+".golden")
		if *update {
			if err := os.WriteFile(gp, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(gp)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run go test -update and review the diff)", n, gp)
		}
	}
}

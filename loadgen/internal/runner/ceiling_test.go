package runner

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/ceiling"
)

// The run measures the instrument's ceiling before the cells, as it will
// send (the plan's concurrency and max rate cap), and the manifest carries
// it; a failed measurement is recorded with its error and the run goes on.
func TestRunRecordsCeiling(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		dir := t.TempDir()
		var got ceiling.Options
		measure := func(_ context.Context, o ceiling.Options) (*manifest.Ceiling, error) {
			got = o
			if fail {
				return nil, errors.New("no trivial server")
			}
			return &manifest.Ceiling{RPS: 12345, Concurrency: o.Concurrency, MaxRate: o.MaxRate, Source: manifest.CeilingMeasured, MeasuredAt: time.Now()}, nil
		}
		srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil)}
		code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "7", "-max-rate", "900"),
			io.Discard, io.Discard, testLog(t), env{target: targets(srv), docker: noDocker, clock: &sleeper{}, ceiling: measure})
		if code != ExitOK {
			t.Fatalf("exit %d", code)
		}
		m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Concurrency != 7 || got.MaxRate != 900 || got.MaxAge != 30*time.Minute || got.Cache == "" {
			t.Errorf("measured with %+v: want the plan's concurrency 7, max rate 900, max age 30m and a cache", got)
		}
		switch c := m.Ceiling; {
		case c == nil:
			t.Fatal("manifest has no ceiling")
		case fail && (c.Error != "no trivial server" || c.RPS != 0):
			t.Errorf("failed measurement recorded as %+v", c)
		case !fail && (c.RPS != 12345 || c.Concurrency != 7 || c.MaxRate != 900):
			t.Errorf("ceiling %+v", c)
		}
		if len(m.Cells) != 1 || m.Cells[0].Status != manifest.CellOK {
			t.Errorf("cells %+v", m.Cells)
		}
	}
}

// A run with open-loop cells measures the open-loop engine's ceiling too,
// and a closed-loop run does not.
func TestRunRecordsOpenCeiling(t *testing.T) {
	t.Parallel()
	for _, rate := range []string{"0", "200"} {
		dir := t.TempDir()
		var models []bool
		measure := func(_ context.Context, o ceiling.Options) (*manifest.Ceiling, error) {
			models = append(models, o.Open)
			m := manifest.CeilingClosed
			if o.Open {
				m = manifest.CeilingOpen
			}
			return &manifest.Ceiling{RPS: 1000, Model: m, Source: manifest.CeilingMeasured, MeasuredAt: time.Now()}, nil
		}
		srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil)}
		code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-rate", rate),
			io.Discard, io.Discard, testLog(t), env{target: targets(srv), docker: noDocker, clock: &sleeper{}, ceiling: measure})
		if code != ExitOK {
			t.Fatalf("rate %s: exit %d", rate, code)
		}
		m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		open := rate != "0"
		if m.Ceiling == nil || m.Ceiling.Model != manifest.CeilingClosed || (m.OpenCeiling != nil) != open {
			t.Errorf("rate %s: ceiling %+v, open ceiling %+v", rate, m.Ceiling, m.OpenCeiling)
		}
		if open && (len(models) != 2 || !models[1] || m.OpenCeiling.Model != manifest.CeilingOpen) {
			t.Errorf("rate %s: measured %v, open ceiling %+v", rate, models, m.OpenCeiling)
		}
	}
}

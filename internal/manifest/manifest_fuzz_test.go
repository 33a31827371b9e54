package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
)

// full is a manifest with every field set, as a finished run leaves it.
func full() *Manifest {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ws, de := t0.Add(-5*time.Second), t0.Add(5*time.Second+20*time.Millisecond)
	cpu, psi := 1.25, 0.5
	wrong := int64(0)
	return &Manifest{
		Schema: SchemaVersion, Run: "r1", Status: "done", Started: t0, Updated: t0.Add(time.Minute),
		Plan:     json.RawMessage(`{"slo":{"p99":"100ms","error_ratio":0.01}}`),
		Versions: map[string]string{"nginx": "1.27.0"},
		Host:     Host{Hostname: "h", OS: "linux", Kernel: "6.1", CPUs: 2, CPUModel: "x", MemBytes: 1 << 34, Loadgen: "dev", Docker: "28"},
		Cells: []Cell{{
			Key:  cellid.Key{ID: "nginx.fast.auth.quick.r1", Proxy: "nginx", Origin: "fast", Scenario: "auth", Tier: "quick", Repeat: 1},
			Mode: "open", Concurrency: 10000, Rate: 500, Path: "/fast/", DurationS: 5, WarmupS: 5,
			WarmupStart: &ws, Start: t0, End: t0.Add(5 * time.Second), Status: CellOK,
			Requests: 2500, Errors: 1, Codes: map[string]int64{"200": 2250, "401": 250}, ErrorReasons: map[string]int64{"timeout": 1},
			Bytes: 1 << 20, Scheduled: 2500, Sent: 2500, WrongOrigin: 0,
			Latency: Latency{Count: 2501, Min: 1e-5, Mean: 1e-3, Stddev: 1e-4, P50: 1e-3, P90: 2e-3, P95: 3e-3, P99: 4e-3, P999: 5e-3, P9999: 6e-3, Max: 0.01},
			Late:    2, LateCodes: map[string]int64{"200": 1}, LateReasons: map[string]int64{"reset": 1}, DrainEnd: &de,
			Missed: 1, Capped: 2, LagP99S: 1e-4, Expected: []string{"2xx", "401"}, ProxyCPUSeconds: &cpu,
			Loadgen: &LoadgenCPU{CapacityCores: 2, CapacitySource: "gomaxprocs", CPUSeconds: 1, Periods: 50, ThrottledPeriods: 1,
				ThrottledSeconds: 0.01, RunDelaySeconds: 0.02, PressureSeconds: &psi, PressureScope: "host"},
			ScenarioData: &ScenarioData{
				Variants:  map[string]VariantCount{"valid": {Share: 0.9, Want: 200, Requests: 2250, Codes: map[string]int64{"200": 2250}}},
				AuthWrong: &wrong, LimitRPS: 100, LimitBurst: 50, OfferedRPS: 500, AcceptedRPS: 110, LimitedRPS: 390, Precision: 0.99,
				BodyBytes: 1024, BytesPerSec: 1e6, UploadBytes: 10, DelayS: 2,
				Memory: &ProxyMemory{Container: "nginx", IdleBytes: 1, PeakBytes: 2, Held: 3, PerConnBytes: 0.3, Samples: 4, Unavailable: ""},
				Churn:  &Churn{ConnsPerSec: 1000, TimeWait: 5, TimeWaitProxyPort: 4, PortRangeLow: 32768, PortRangeHigh: 60999, TwReuse: 2, PortPressure: 0.1},
			},
		}, {Key: cellid.Key{ID: "caddy.go.simple.quick.r1", Proxy: "caddy", Origin: "go", Scenario: "simple", Tier: "quick", Repeat: 1}, Status: CellSkipped, Reason: "n/a: no plugin",
			Skip: &Skip{Kind: SkipNotApplicable, Reason: "no plugin"}}},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "manifest.json")
	want := full()
	if err := Write(p, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the manifest:\n%s\n%s", a, b)
	}
}

func TestReadErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"garbage", "not json", "move it aside"},
		{"truncated", `{"schema":1,"run":"r1","cells":[{"id":`, "unexpected end of JSON input"},
		{"wrong type", `{"schema":1,"cells":[{"requests":"many"}]}`, "Cell.cells.requests of type int64"},
		{"huge", `{"schema":1,"cells":[{"requests":1e30}]}`, "cells.requests"},
		{"NaN", `{"schema":1,"cells":[{"rate_rps":NaN}]}`, "invalid character 'N'"},
		{"no schema", `{"run":"r1"}`, "not a loadgen manifest"},
		{"other schema", `{"schema":2}`, "has schema 2"},
	} {
		p := filepath.Join(dir, tc.name+".json")
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %s and saying %q", tc.name, err, p, tc.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "absent.json")); err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzRead: manifest.json as the reporter and diff read it back. Garbage,
// truncated JSON, wrong types, huge numbers: an error naming the file,
// never a panic; a manifest it accepts writes back and reads back the same.
func FuzzRead(f *testing.F) {
	b, err := json.MarshalIndent(full(), "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	for _, s := range []string{
		"", "null", "[]", "{}", `{"schema":1}`, `{"schema":2}`, `{"schema":"1"}`, `{"schema":1e400}`, `{"schema":1.5}`,
		`{"schema":1,"cells":[{"requests":"NaN"}]}`, `{"schema":1,"cells":[{"rate_rps":NaN}]}`, `{"schema":1,"cells":[{"rate_rps":1e309}]}`,
		`{"schema":1,"cells":[{"requests":9223372036854775808}]}`, `{"schema":1,"host":{"mem_bytes":-1}}`,
		`{"schema":1,"started":"10000-01-01T00:00:00Z"}`, `{"schema":1,"started":"0000-01-01T00:00:00+23:59"}`,
		`{"schema":1,"plan":{"slo":`, `{"schema":1,"plan":[1,2,{}]}`, `{"schema":1,"cells":[null,{}]}`,
		`{"schema":1,"cells":[{"scenario_data":{"variants":{"a":null}}}]}`, "\xef\xbb\xbf{\"schema\":1}", `{"schema":1,"Schema":2}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "manifest.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Read(p)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, p) || !strings.Contains(msg, notOurs) && !strings.Contains(msg, "matching proxybench version") {
				t.Fatalf("error %q does not name %s and say what to do", msg, p)
			}
			return
		}
		if m.Schema != SchemaVersion {
			t.Fatalf("accepted schema %d", m.Schema)
		}
		q := filepath.Join(dir, "again.json")
		if err := Write(q, m); err != nil {
			t.Fatalf("an accepted manifest does not write back: %v", err)
		}
		again, err := Read(q)
		if err != nil {
			t.Fatalf("a written manifest does not read back: %v", err)
		}
		want, err1 := json.Marshal(m)
		got, err2 := json.Marshal(again)
		if err1 != nil || err2 != nil || !bytes.Equal(want, got) {
			t.Fatalf("manifest does not round-trip (%v %v):\n%s\n%s", err1, err2, want, got)
		}
	})
}

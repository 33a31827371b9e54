package diff

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/decide"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// cellSpec is one repeat of a synthetic report cell.
type cellSpec struct {
	proxy, origin string
	repeat        int
	rps           float64
	p99           float64
	errRatio      float64
	verdict       string
	flags         []report.Flag
	failed        bool
	cpu           float64
	rate          float64 // offered req/s; 0 a closed loop
}

func mkCell(s cellSpec) report.Cell {
	if s.verdict == "" {
		s.verdict = report.Valid
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return report.Cell{Key: cellid.Key{ID: fmt.Sprintf("%s.%s.simple.quick.r%d", s.proxy, s.origin, s.repeat), Proxy: s.proxy, Origin: s.origin, Scenario: "simple", Tier: "quick", Repeat: s.repeat},
		Start: t0, End: t0.Add(5 * time.Second), DurationS: 5, Concurrency: 10, TargetRateRPS: report.Num(s.rate),
		Failed: s.failed, ServerSide: true, RPS: report.Num(s.rps), OKRPS: report.Num(s.rps), GoodputRPS: report.Num(s.rps), ErrorRatio: report.Num(s.errRatio),
		RateLimitedRatio: 0, InFlightMean: report.NaN(), Codes: map[string]int64{}, ErrorReasons: map[string]int64{},
		Latency:    report.Latency{Source: "native", Mean: report.Num(s.p99 / 3), P50: report.Num(s.p99 / 2), P90: report.NaN(), P95: report.NaN(), P99: report.Num(s.p99), P999: report.NaN(), Max: report.NaN()},
		ProxyRes:   report.Resources{CPUMeanCores: report.Num(s.cpu), CPUPeakCores: report.NaN(), MemMeanBytes: report.NaN(), MemPeakBytes: report.NaN(), MemSlopeMBPerMin: report.NaN()},
		LoadgenCPU: report.LoadgenCPU{MeanCores: report.NaN(), PeakCores: report.NaN(), LimitCores: report.NaN()},
		Validity:   report.Validity{Verdict: s.verdict, Flags: s.flags}}
}

// baseCells: nginx and haproxy x fast and go, three steady repeats each.
func baseCells() []cellSpec {
	var out []cellSpec
	for pi, p := range []string{"nginx", "haproxy"} {
		for oi, o := range []string{"fast", "go"} {
			for rep := 1; rep <= 3; rep++ {
				out = append(out, cellSpec{proxy: p, origin: o, repeat: rep, rps: float64(10000 - 1000*pi - 500*oi + 10*rep),
					p99: 0.002 + 0.0001*float64(rep), errRatio: 0.0001 * float64(rep), cpu: 0.9 + 0.02*float64(rep)})
			}
		}
	}
	return out
}

func mkReport(id string, specs []cellSpec, notRun ...report.NotRun) *report.Report {
	r := &report.Report{Schema: report.SchemaVersion, Run: id, NotRun: notRun}
	for _, s := range specs {
		r.Cells = append(r.Cells, mkCell(s))
	}
	r.Groups = report.BuildGroups(r.Cells)
	report.Tally(r)
	return r
}

// writeRuns stores both reports as results/<id>/report.json (A) and
// results/history/<id>/report.json (B), the two places diff reads, in
// the results directory given (a new one without).
func writeRuns(t *testing.T, a, b *report.Report, in ...string) string {
	t.Helper()
	res := t.TempDir()
	if len(in) > 0 {
		res = in[0]
	}
	for i, r := range []*report.Report{a, b} {
		if r == nil {
			continue
		}
		js, err := output.EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(res, r.Run)
		if i == 1 {
			dir = filepath.Join(res, "history", r.Run)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func failedFlag() report.Flag {
	return report.Flag{Code: report.FlagFailed, Severity: report.Invalid, Reason: "the loadgen marked this cell failed or aborted, or never published its end"}
}

func errorsFlag(r float64) report.Flag {
	return report.Flag{Code: report.FlagErrors, Severity: report.Invalid, Reason: fmt.Sprintf("error ratio %.2f %% above 1 %%", r*100)}
}

// gateCases are the golden cases: what B did to the baseline and what the
// diff must say about it.
func gateCases() []struct {
	name  string
	a, b  *report.Report
	opts  func(*Options)
	regs  int      // regressions counted
	lines []string // must appear in the output
} {
	base := baseCells()
	without := func(proxy string) []cellSpec {
		var out []cellSpec
		for _, s := range base {
			if s.proxy != proxy {
				out = append(out, s)
			}
		}
		return out
	}
	edit := func(f func(*cellSpec)) []cellSpec {
		out := append([]cellSpec(nil), base...)
		for i := range out {
			f(&out[i])
		}
		return out
	}
	one := func(rps float64) []cellSpec {
		return []cellSpec{{proxy: "nginx", origin: "fast", repeat: 1, rps: rps, p99: 0.002, errRatio: 0, cpu: 1}}
	}
	return []struct {
		name  string
		a, b  *report.Report
		opts  func(*Options)
		regs  int
		lines []string
	}{
		{name: "proxy_died", a: mkReport("A", base), b: mkReport("B", without("haproxy")), regs: 2,
			lines: []string{"- haproxy.fast.simple.quick: missing in B\n", "- haproxy.go.simple.quick: missing in B\n",
				"| haproxy.fast.simple.quick | 3 valid of 3 | – | **missing in B** |"}},
		{name: "skipped", a: mkReport("A", base), b: mkReport("B", without("haproxy"),
			report.NotRun{Key: cellid.Key{ID: "haproxy.fast.simple.quick.r1"}, Reason: "proxy haproxy exited (code 137)"},
			report.NotRun{Key: cellid.Key{ID: "haproxy.fast.simple.quick.r2"}, Reason: "proxy haproxy exited (code 137)"},
			report.NotRun{Key: cellid.Key{ID: "haproxy.fast.simple.quick.r3"}, Reason: "proxy haproxy exited (code 137)"}), regs: 2,
			lines: []string{"- haproxy.fast.simple.quick: skipped in B: proxy haproxy exited (code 137)\n", "- haproxy.go.simple.quick: missing in B\n",
				"| 0 valid of 3 (3 not run) |"}},
		{name: "failed", a: mkReport("A", base), b: mkReport("B", edit(func(s *cellSpec) {
			if s.proxy == "nginx" && s.origin == "go" {
				s.verdict, s.failed, s.flags = report.Invalid, true, []report.Flag{failedFlag()}
			}
		})), regs: 1, lines: []string{"- nginx.go.simple.quick: failed in B: the loadgen marked this cell failed", "0 valid of 3 (3 failed)"}},
		{name: "invalid_share", a: mkReport("A", base), b: mkReport("B", edit(func(s *cellSpec) {
			if s.proxy == "nginx" && s.origin == "fast" && s.repeat >= 2 {
				s.verdict, s.flags = report.Invalid, []report.Flag{{Code: report.FlagLoadgenBound, Severity: report.Invalid, Reason: "loadgen CPU 1.95 of 2 cores"}}
			}
		})), regs: 1, lines: []string{"- nginx.fast.simple.quick: invalid repeats 0/3 → 2/3: loadgen_bound: loadgen CPU 1.95 of 2 cores\n",
			"| nginx.fast.simple.quick | 3 valid of 3 | 1 valid of 3 (2 invalid) |"}},
		// One B repeat errs (and is invalid for it); A already had one
		// invalid repeat, so the share is unchanged. The error ratio, read
		// over every repeat, is answered (not resolved: one repeat of three
		// erred) and shown, but only a gated metric gates, and goodput over
		// the valid repeats did not change.
		{name: "errors_in_invalid_repeat", a: mkReport("A", edit(func(s *cellSpec) {
			if s.proxy == "haproxy" && s.origin == "go" && s.repeat == 1 {
				s.verdict, s.flags = report.Invalid, []report.Flag{{Code: report.FlagTooFewSamples, Severity: report.Invalid, Reason: "2 scrapes"}}
			}
		})), b: mkReport("B", edit(func(s *cellSpec) {
			if s.proxy == "haproxy" && s.origin == "go" && s.repeat == 3 {
				s.errRatio, s.verdict, s.flags = 0.06, report.Invalid, []report.Flag{errorsFlag(0.06)}
			}
		})), regs: 0,
			lines: []string{"| haproxy.go.simple.quick | error_ratio | 0.02 % | ±0.02 pp | 2.01 % | ±8.58 pp | +1.99 pp | ",
				"| 3/3 | not resolved at ±0.5 pp |", "**No regression: no cell missing, failed or newly invalid, and no gated metric worse by more than ±5 %.**"}},
		// nginx.fast's goodput 30 % lower, its repeats as steady as A's:
		// worse by more than 5 %, and goodput gates a closed loop; rps falls
		// alike, answered worse but never gated.
		{name: "goodput_cut", a: mkReport("A", base), b: mkReport("B", edit(func(s *cellSpec) {
			if s.proxy == "nginx" && s.origin == "fast" {
				s.rps *= 0.7
			}
		})), regs: 1, lines: []string{"- nginx.fast.simple.quick goodput_rps: worse by more than 5.0 %: -30.0 % [",
			"| nginx.fast.simple.quick | rps | 10020 | ±0.2 % | 7014 | ±0.2 % | -30.0 % | ",
			"| nginx.fast.simple.quick | ● goodput_rps | 10020 | ±0.2 % | 7014 | ±0.2 % | -30.0 % | "}},
		// The same cut asked at a margin of 50 %: equivalent within it.
		{name: "goodput_cut_margin_50", a: mkReport("A", base), b: mkReport("B", edit(func(s *cellSpec) {
			if s.proxy == "nginx" && s.origin == "fast" {
				s.rps *= 0.7
			}
		})), opts: func(o *Options) { o.Margin = 0.5 }, regs: 0, lines: []string{"| nginx.fast.simple.quick | ● goodput_rps | 10020 | ±0.2 % | 7014 | ±0.2 % | -30.0 % | ",
			"| 3/3 | equivalent within ±50 % |", "no gated metric worse by more than ±50 %"}},
		// At a fixed offered rate p50, p99 and CPU per request gate,
		// goodput does not: p99 (and p50) twice as high, goodput 30 %
		// lower, so the same CPU buys 30 % fewer requests (+43 % a request).
		{name: "open_loop", a: mkReport("A", edit(func(s *cellSpec) { s.rate = 5000 })), b: mkReport("B", edit(func(s *cellSpec) {
			s.rate = 5000
			if s.proxy == "haproxy" && s.origin == "go" {
				s.p99, s.rps = 2*s.p99, 0.7*s.rps
			}
		})), regs: 3, lines: []string{"- haproxy.go.simple.quick p50_seconds: worse by more than 5.0 %", "- haproxy.go.simple.quick p99_seconds: worse by more than 5.0 %",
			"- haproxy.go.simple.quick proxy_cpu_seconds_per_request: worse by more than 5.0 %: +42.9 %", "| haproxy.go.simple.quick | goodput_rps | 8520 | "}},
		{name: "identical", a: mkReport("A", base), b: mkReport("B", base), regs: 0,
			lines: []string{"**No regression: no cell missing, failed or newly invalid, and no gated metric worse by more than ±5 %.**",
				"| nginx.fast.simple.quick | 3 valid of 3 | 3 valid of 3 | ok |", "| 3/3 | equivalent within ±5 % |"}},
		// One repeat a side: -20 % goodput has no interval, so no data,
		// and no data never gates.
		{name: "one_repeat", a: mkReport("A", one(10000)), b: mkReport("B", one(8000)), regs: 0,
			lines: []string{"| nginx.fast.simple.quick | ● goodput_rps | 10000 | n/a | 8000 | n/a | -20.0 % | n/a | n/a | n/a | 1/1 | no data |",
				"Noise floor of A (shown, not used): not measured (1 repeat).", "Note: with 1 repeat on a side there is no spread, so no interval"}},
		{name: "only_in_b", a: mkReport("A", without("haproxy")), b: mkReport("B", base), regs: 0,
			lines: []string{"| haproxy.fast.simple.quick | – | 3 valid of 3 | only in B (not gated) |", "Only in B (not gated): haproxy.fast.simple.quick, haproxy.go.simple.quick"}},
	}
}

// TestGates compares each case's output with testdata/<name>.md.golden
// (go test -run TestGates -update rewrites them) and checks the lines that
// make the case.
func TestGates(t *testing.T) {
	t.Parallel()
	for _, tc := range gateCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := writeRuns(t, tc.a, tc.b)
			a, err := Load(res, "A")
			if err != nil {
				t.Fatal(err)
			}
			b, err := Load(res, "B")
			if err != nil {
				t.Fatal(err)
			}
			o := DefaultOptions
			if tc.opts != nil {
				tc.opts(&o)
			}
			r := Compare(a, b, o)
			var out bytes.Buffer
			if err := r.Markdown(&out); err != nil {
				t.Fatal(err)
			}
			if r.Regressions != tc.regs {
				t.Errorf("%d regressions, want %d\n%s", r.Regressions, tc.regs, out.String())
			}
			for _, l := range tc.lines {
				if !strings.Contains(out.String(), l) {
					t.Errorf("output lacks %q\n%s", l, out.String())
				}
			}
			if strings.Contains(out.String(), "±0.0 %") {
				t.Errorf("output shows a zero spread:\n%s", out.String())
			}
			checkGolden(t, filepath.Join("testdata", tc.name+".md.golden"), out.Bytes())
		})
	}
}

// checkGolden compares got with the golden file at p, or rewrites it
// with -update.
func checkGolden(t *testing.T, p string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update)", err, strings.SplitN(t.Name(), "/", 2)[0])
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -run %s -update to accept):\n%s", p, strings.SplitN(t.Name(), "/", 2)[0], got)
	}
}

// TestOneRepeatKeepsKeyGates: one repeat a side leaves a metric change
// unresolved (no data, never a gate), never a missing or failed cell.
func TestOneRepeatKeepsKeyGates(t *testing.T) {
	t.Parallel()
	o := DefaultOptions
	one := func(id string, rps float64) *report.Report {
		return mkReport(id, []cellSpec{{proxy: "nginx", origin: "fast", repeat: 1, rps: rps, p99: 0.002},
			{proxy: "caddy", origin: "fast", repeat: 1, rps: rps, p99: 0.002}})
	}
	if r := Compare(one("A", 10000), one("B", 8000), o); r.Regressions != 0 {
		t.Fatalf("n = 1, -20 %% goodput: %d regressions, want 0 (%+v)", r.Regressions, r.Rows)
	}
	if r := Compare(one("A", 10000), one("B", 8000), o); r.Rows[0].Metric != "goodput_rps" || !r.Rows[0].Gated || r.Rows[0].Decision.Outcome != decide.NoData {
		t.Fatalf("n = 1: goodput row %+v, want gated and no data", r.Rows[0])
	}
	b := one("B", 10000)
	b.Cells = b.Cells[:1]
	r := Compare(one("A", 10000), b, o)
	if r.Regressions != 1 || len(r.OnlyInA) != 1 || r.OnlyInA[0] != "caddy.fast.simple.quick" {
		t.Fatalf("missing caddy cell, one repeat: %d regressions, only in A %v", r.Regressions, r.OnlyInA)
	}
}

// TestFailedInBothDoesNotGate: a key the baseline could not measure either
// is listed, not gated.
func TestFailedInBothDoesNotGate(t *testing.T) {
	t.Parallel()
	dead := []cellSpec{{proxy: "nginx", origin: "fast", repeat: 1, verdict: report.Invalid, failed: true, flags: []report.Flag{failedFlag()}}}
	r := Compare(mkReport("A", dead), mkReport("B", dead), DefaultOptions)
	if r.Regressions != 0 || len(r.Keys) != 1 || r.Keys[0].Status != KeyFailedInAB || len(r.Rows) != 0 {
		t.Fatalf("regressions %d, keys %+v, rows %d", r.Regressions, r.Keys, len(r.Rows))
	}
	r = Compare(mkReport("A", dead), mkReport("B", nil), DefaultOptions)
	if r.Regressions != 0 || r.Keys[0].Status != KeyMissing || !strings.Contains(r.Keys[0].Reason, "failed in A too") {
		t.Fatalf("regressions %d, keys %+v", r.Regressions, r.Keys)
	}
}

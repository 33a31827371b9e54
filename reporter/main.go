// Command reporter builds proxybench reports from Prometheus and compares
// runs.
//
//	reporter build   -prom URL -run ID [-results DIR] [-slo-p99 120ms] [-slo-errors 0.01] [-force]
//	reporter diff    -a ID -b ID [-results DIR] [-margin 5%] [-error-margin 0.5%] [-alpha 0.05] [-json FILE]
//	reporter diff    -run ID [-results DIR] [-margin 5%] [-error-margin 0.5%] [-alpha 0.05] [-json FILE]
//	reporter history [-results DIR]
//	reporter study   -run ID [-results DIR]
//
// Exit codes: 0 success; 1 the report or diff could not be produced (or
// -run names a run without arms); 2 bad usage; 3 build: the report was
// written but a cell failed an SLO; 4 diff: a cell regressed (missing,
// failed or newly invalid, or a gated metric worse by more than the
// margin; with -run, of the duet's candidate). A build poorer than the report.json it
// would replace (fewer cells, server-side cells or exact latencies) leaves
// that report and the history as they are, writes report.partial.json/.md,
// warns on stderr and exits 0.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/atomicfile"
	"proxybench/internal/promapi"
	"proxybench/reporter/internal/build"
	"proxybench/reporter/internal/diff"
	"proxybench/reporter/internal/output"
	"proxybench/reporter/internal/report"
	"proxybench/reporter/internal/study"
)

// Exit codes.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitSLOFailed  = 3
	exitRegression = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, time.Now)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: reporter build|diff|history|study [flags] (reporter CMD -h for flags)")
		return exitUsage
	}
	switch args[0] {
	case "build":
		return cmdBuild(ctx, args[1:], stdout, stderr, now, log)
	case "diff":
		return cmdDiff(args[1:], stdout, stderr, log)
	case "history":
		return cmdHistory(args[1:], stdout, stderr)
	case "study":
		return cmdStudy(args[1:], stdout, stderr, now)
	default:
		fmt.Fprintf(stderr, "reporter: unknown command %q (want build, diff, history or study)\n", args[0])
		return exitUsage
	}
}

// ratio accepts "5%", "0.05" or "5 %".
type ratio struct{ v *float64 }

func (r ratio) String() string {
	if r.v == nil {
		return ""
	}
	return strconv.FormatFloat(*r.v, 'g', -1, 64)
}

func (r ratio) Set(s string) error {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want a ratio like 0.05 or 5%%, got %q", s)
	}
	if pct {
		v /= 100
	}
	*r.v = v
	return nil
}

func cmdBuild(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time, log *slog.Logger) int {
	fs := flag.NewFlagSet("reporter build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	promURL := fs.String("prom", "http://127.0.0.1:9090", "Prometheus base URL")
	runID := fs.String("run", "", "run id (required)")
	results := fs.String("results", "results", "results directory; the report goes to <results>/<run>/")
	sloP99 := fs.Duration("slo-p99", 0, "SLO: every cell's p99 latency must be below this (e.g. 120ms); overrides the plan")
	var sloErr float64
	fs.Var(ratio{&sloErr}, "slo-errors", "SLO: every cell's error ratio must be below this (e.g. 1% or 0.01); overrides the plan")
	conc := fs.Int("concurrency", 4, "cells queried in parallel")
	noHistory := fs.Bool("no-history", false, "do not archive the report in <results>/history/")
	force := fs.Bool("force", false, "replace <results>/<run>/report.json even when it holds more cells, server-side cells or exact latencies than the new report")
	th := report.DefaultThresholds
	fs.Var(ratio{&th.ErrorRatio}, "max-error-ratio", "validity: a cell with more errors than this is invalid")
	fs.Var(ratio{&th.UnexpectedStatus}, "max-unexpected-status", "validity: a cell with a larger share of statuses its scenario does not expect (5xx apart) is invalid (e.g. 0.1% or 0.001)")
	fs.Float64Var(&th.LoadgenCPUFraction, "loadgen-cpu-fraction", th.LoadgenCPUFraction, "validity: loadgen CPU at or above this fraction of its limit is loadgen-bound")
	fs.Int64Var(&th.MinRequests, "min-requests", th.MinRequests, "validity: fewer attempts than this are too few samples")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *runID == "" || strings.ContainsAny(*runID, `/\`) || *runID == "." || *runID == ".." {
		fmt.Fprintln(stderr, "reporter build: -run ID is required and must be a plain run id (see results/ or results/history/manifest.json)")
		return exitUsage
	}
	var client *promapi.Client
	if *promURL != "" {
		c, err := promapi.New(*promURL, nil)
		if err != nil {
			fmt.Fprintf(stderr, "reporter build: %v\n", err)
			return exitUsage
		}
		client = c
	}
	flagSLO := false
	fs.Visit(func(f *flag.Flag) { flagSLO = flagSLO || strings.HasPrefix(f.Name, "slo-") })
	dir := filepath.Join(*results, *runID)
	start := time.Now()
	r, err := build.Report(ctx, build.Config{Prom: client, PromURL: *promURL, Run: *runID, RunDir: dir,
		SLO: report.SLO{P99: *sloP99, ErrorRatio: sloErr}, SLOFromFlag: flagSLO, Thresholds: th, Concurrency: *conc, Now: now, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "reporter build: %v\n", err)
		return exitError
	}
	saved, err := build.Save(dir, r, *force)
	if err != nil {
		fmt.Fprintf(stderr, "reporter build: %v\n", err)
		return exitError
	}
	if !saved.Replaced {
		// The richer report stands; the poorer one is kept beside it.
		fmt.Fprintf(stderr, "reporter build: WARNING: kept %s (%s): the new report has less (%s) and went to %s instead; "+
			"history not updated. Rebuild when Prometheus holds the run's series, or pass -force to replace it.\n",
			saved.Report, saved.Old, saved.New, strings.Join(saved.Partial, " and "))
		fmt.Fprintf(stdout, "report %s: %d cells kept; poorer rebuild in %s\n", r.Run, saved.Old.Cells, saved.Partial[len(saved.Partial)-1])
		return exitOK
	}
	if !*noHistory {
		if err := output.Archive(*results, r); err != nil {
			fmt.Fprintf(stderr, "reporter build: %v\n", err)
			return exitError
		}
	}
	s := r.Summary
	fmt.Fprintf(stdout, "report %s: %d cells (%d valid, %d suspect, %d invalid) in %s\n  %s\n",
		r.Run, s.Cells, s.Valid, s.Suspect, s.Invalid, time.Since(start).Round(time.Millisecond), filepath.Join(dir, "report.md"))
	if s.SLOFailed > 0 {
		fmt.Fprintf(stdout, "SLO (%s) failed in %d cell(s)\n", r.SLO, s.SLOFailed)
		return exitSLOFailed
	}
	return exitOK
}

func cmdDiff(args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("reporter diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := fs.String("a", "", "baseline run id (with -b: two separate runs)")
	b := fs.String("b", "", "candidate run id")
	runID := fs.String("run", "", "one run with interleaved arms (a duet's candidate, the observer study, the A/A control): each arm against the plan's own cells, pair by repeat")
	results := fs.String("results", "results", "results directory")
	jsonOut := fs.String("json", "", "also write the comparison as JSON to this file (- for stdout instead of Markdown)")
	o := diff.DefaultOptions
	fs.Var(ratio{&o.Margin}, "margin", "the relative change that matters (e.g. 5% or 0.05): each metric is answered worse or better by more than it, equivalent within it, or not resolved (default: the run's own margin with -run, else 5%)")
	fs.Var(ratio{&o.ErrorMargin}, "error-margin", "the error ratio's margin, an absolute change (e.g. 0.5%)")
	fs.Float64Var(&o.Alpha, "alpha", o.Alpha, "the family's false-alarm rate: the gated metrics of every cell share it")
	metrics := fs.String("metrics", strings.Join(o.Metrics, ","), "metrics compared (goodput_rps, rps, p50_seconds, p99_seconds, p99_9_seconds, error_ratio, proxy_cpu_cores, proxy_mem_peak_bytes)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	interleaved := *runID != ""
	if interleaved == (*a != "" || *b != "") || (!interleaved && (*a == "" || *b == "")) {
		fmt.Fprintln(stderr, "reporter diff: give -a and -b (two runs) or -run (one run with interleaved arms), not both")
		return exitUsage
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := o.Question().Options("").Validate(); err != nil {
		fmt.Fprintf(stderr, "reporter diff: %v\n", err)
		return exitUsage
	}
	o.Metrics = strings.Split(*metrics, ",")
	for _, m := range o.Metrics {
		if _, ok := report.Metric(m); !ok {
			fmt.Fprintf(stderr, "reporter diff: unknown metric %q in -metrics\n", m)
			return exitUsage
		}
	}
	load := func(id string) (*report.Report, bool) {
		r, err := diff.Load(*results, id)
		if err != nil {
			fmt.Fprintf(stderr, "reporter diff: %v (build it first: make report RUN=%s)\n", err, id)
			return nil, false
		}
		return r, true
	}
	type output interface {
		Markdown(io.Writer) error
		JSON(io.Writer) error
	}
	var res output
	regressions := 0
	if interleaved {
		r, ok := load(*runID)
		if !ok {
			return exitError
		}
		if len(report.ArmsOf(r.Cells)) == 0 {
			fmt.Fprintf(stderr, "reporter diff: %v\n", diff.ErrNoArms(r.Run))
			return exitError
		}
		// Each margin not given is the run's own.
		q := report.QuestionOf(r)
		if !given["margin"] {
			o.Margin = q.Margin
		}
		if !given["error-margin"] {
			o.ErrorMargin = q.ErrorMargin
		}
		rr := diff.CompareRun(r, o)
		res, regressions = rr, rr.Regressions
	} else {
		ra, ok := load(*a)
		if !ok {
			return exitError
		}
		rb, ok := load(*b)
		if !ok {
			return exitError
		}
		cr := diff.Compare(ra, rb, o)
		res, regressions = cr, cr.Regressions
	}
	if *jsonOut != "-" {
		if err := res.Markdown(stdout); err != nil {
			fmt.Fprintf(stderr, "reporter diff: %v\n", err)
			return exitError
		}
	}
	if *jsonOut != "" {
		if err := writeJSON(*jsonOut, stdout, res.JSON); err != nil {
			fmt.Fprintf(stderr, "reporter diff: %v\n", err)
			return exitError
		}
	}
	log.Debug("diff done", "regressions", regressions)
	if regressions > 0 {
		return exitRegression
	}
	return exitOK
}

// writeJSON writes through enc to path (- = stdout), replacing the file
// through a synced temporary one.
func writeJSON(path string, stdout io.Writer, enc func(io.Writer) error) error {
	if path == "-" {
		return enc(stdout)
	}
	var b bytes.Buffer
	if err := enc(&b); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func cmdHistory(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reporter history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	results := fs.String("results", "results", "results directory")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	h, err := output.ReadHistory(*results)
	if err != nil {
		fmt.Fprintf(stderr, "reporter history: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, "| run | kind | start (UTC) | cells | valid | suspect | invalid | SLO failed | tiers | proxies |\n|:---|:---|:---|---:|---:|---:|---:|---:|:---|:---|")
	for _, e := range h.Runs {
		s := e.Summary
		kind := "bench"
		if e.Kind == output.KindStudy {
			kind = "study " + e.Study // cells = samples; invalid = failed samples and checks; tiers = scale
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %d | %d | %d | %d | %d | %s | %s |\n", e.Run, kind, e.Start.Format("2006-01-02 15:04:05"), s.Cells, s.Valid,
			s.Suspect, s.Invalid, s.SLOFailed, strings.Join(e.Tiers, " "), strings.Join(e.Proxies, " "))
	}
	return exitOK
}

func cmdStudy(args []string, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("reporter study", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runID := fs.String("run", "", "study run id (required): <results>/<run>/study.json, written by loadgen study")
	results := fs.String("results", "results", "results directory")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *runID == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "reporter study: set -run <study run id> (see <results>/history/manifest.json) and nothing else")
		return exitUsage
	}
	s, partial, err := study.Build(*results, *runID, now())
	if err != nil {
		fmt.Fprintf(stderr, "reporter study: %v\n", err)
		return exitError
	}
	dir := filepath.Join(*results, *runID)
	if partial {
		fmt.Fprintf(stderr, "reporter study: the record holds fewer samples (%d) than the report in %s: that report stays; this one is %s\n",
			s.Samples, dir, study.FilePartial)
		fmt.Fprintln(stdout, filepath.Join(dir, study.FilePartial))
		return exitOK
	}
	fmt.Fprintln(stdout, filepath.Join(dir, study.FileReport))
	if !s.ChecksOK {
		fmt.Fprintf(stderr, "reporter study: a mechanism check failed (section 2 of %s)\n", filepath.Join(dir, study.FileReport))
		return exitSLOFailed
	}
	return exitOK
}

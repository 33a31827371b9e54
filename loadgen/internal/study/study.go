// Package study owns `loadgen study`: the validity lab's controlled
// experiments, one file per study (netstack.go, cc.go, scaleout.go,
// ceiling.go), each a Func registered by name in Studies. A study fills an
// Env's record (internal/studydata) sample by sample; every Add rewrites
// results/<study-run>/study.json atomically, so a crash, a Ctrl-C or a dead
// container keeps every sample already measured. `reporter study` turns the
// record into the report, the figures and the CSV.
package study

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"proxybench/internal/hostinfo"
	"proxybench/internal/placement"
	"proxybench/internal/studydata"
)

// Scales.
const (
	ScaleTiny = "tiny" // seconds per sample, 1-2 repeats: `make test` checks the mechanics
	ScaleFull = "full" // the study as docs/studies.md reports it
)

// Func runs one study into e. It returns an error only for a failure that
// ends the study (bad input, a missing tool); a sample that fails is added
// with its Error and the study goes on.
type Func func(ctx context.Context, e *Env) error

// Studies maps a study's name to its Func.
var Studies = map[string]Func{}

// register adds a study; each study file calls it from init.
func register(name string, f Func) {
	if _, dup := Studies[name]; dup {
		panic("study: " + name + " registered twice")
	}
	Studies[name] = f
}

// Names lists the registered studies in order.
func Names() []string {
	out := make([]string, 0, len(Studies))
	for k := range Studies {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Env is what a study runs with: its scale, repeats, placement, log and the
// record it fills.
type Env struct {
	Scale     string
	Repeats   int // samples per group × variant; 0 = the study's default for its scale
	Dir       string
	Log       *slog.Logger
	Placement placement.Placement
	// Repo is the project's root (compose/, .cache/dist/): studies that
	// start containers mount files from it.
	Repo string

	mu  sync.Mutex
	rec *studydata.Record
}

// Record returns the record for a study to fill its description (title,
// question, method, metrics, groups, variants, checks, NA, original,
// notes); call Save after changing it. Samples go through Add.
func (e *Env) Record() *studydata.Record { return e.rec }

// Tiny reports whether the study runs at the tiny scale.
func (e *Env) Tiny() bool { return e.Scale == ScaleTiny }

// RepeatsOr returns the repeats asked for, or def when none were.
func (e *Env) RepeatsOr(def int) int {
	if e.Repeats > 0 {
		return e.Repeats
	}
	return def
}

// Add appends a sample (numbering its order) and saves the record.
func (e *Env) Add(s studydata.Sample) error {
	e.mu.Lock()
	s.Order = len(e.rec.Samples) + 1
	e.rec.Samples = append(e.rec.Samples, s)
	e.mu.Unlock()
	return e.Save()
}

// Note appends a note to the record, saved with the next sample or check.
func (e *Env) Note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rec.Notes = append(e.rec.Notes, fmt.Sprintf(format, args...))
}

// AddCheck records a mechanism check (replacing one of the same name) and
// saves the record.
func (e *Env) AddCheck(name string, ok bool, format string, args ...any) error {
	c := studydata.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)}
	e.mu.Lock()
	out := e.rec.Checks[:0]
	for _, x := range e.rec.Checks {
		if x.Name != name {
			out = append(out, x)
		}
	}
	e.rec.Checks = append(out, c)
	e.mu.Unlock()
	if !ok {
		e.Log.Warn("study check failed", "check", name, "detail", c.Detail)
	}
	return e.Save()
}

// Save writes the record now.
func (e *Env) Save() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return studydata.Write(filepath.Join(e.Dir, studydata.File), e.rec)
}

// Main is `loadgen study`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("loadgen study", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("study", "", "the study: "+strings.Join(Names(), ", "))
	run := fs.String("run", "", "study run id (default <study>-<UTC time>); results go to <results>/<run>/")
	results := fs.String("results", "results", "results directory")
	scale := fs.String("scale", ScaleFull, "tiny (seconds per sample, for make test) or full")
	repeats := fs.Int("repeats", 0, "samples per variant and condition (0 = the study's default for its scale)")
	mode := fs.String("placement", "", "CPU placement: auto (the default) or none; as for loadgen run")
	repo := fs.String("repo", ".", "the project's root directory (compose/, .cache/dist/)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen study -study NAME [flags]\n\nRuns one of the validity lab's studies and writes <results>/<run>/study.json;\n`reporter study -run <run>` renders it.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	f := Studies[*name]
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "loadgen study: unexpected argument %q: it takes only flags\n", fs.Arg(0))
		return 2
	case f == nil:
		fmt.Fprintf(stderr, "loadgen study: -study %q: choose one of %s\n", *name, strings.Join(Names(), ", "))
		return 2
	case *scale != ScaleTiny && *scale != ScaleFull:
		fmt.Fprintf(stderr, "loadgen study: -scale %q: use tiny or full\n", *scale)
		return 2
	case *repeats < 0:
		fmt.Fprintf(stderr, "loadgen study: -repeats %d: use 0 (the default) or more\n", *repeats)
		return 2
	}
	pl, err := placement.ForHost(placement.Spec{Mode: *mode})
	if err != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", err)
		return 2
	}
	if err := pl.PinLoadgen(); err != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", err)
		return 1
	}
	id := *run
	if id == "" {
		id = *name + "-" + time.Now().UTC().Format("20060102T150405Z")
	}
	if strings.ContainsAny(id, `/\ `) || id == "." || id == ".." {
		fmt.Fprintf(stderr, "loadgen study: -run %q: an id is one path element without spaces\n", id)
		return 2
	}
	dir := filepath.Join(*results, id)
	if _, err := os.Stat(filepath.Join(dir, studydata.File)); err == nil {
		fmt.Fprintf(stderr, "loadgen study: %s already holds a study record: choose another -run (a result is never replaced)\n", dir)
		return 2
	}
	h := hostinfo.Describe(ctx)
	e := &Env{Scale: *scale, Repeats: *repeats, Dir: dir, Log: log, Placement: pl, Repo: *repo,
		rec: &studydata.Record{Schema: studydata.Schema, Run: id, Study: *name, Scale: *scale,
			Status: studydata.StatusRunning, Start: time.Now().UTC(),
			Host: studydata.Host{Hostname: h.Hostname, Kernel: h.Kernel, CPUs: h.CPUs, Loadgen: h.Loadgen, Docker: h.Docker}}}
	if err := e.Save(); err != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", err)
		return 1
	}
	log.Info("study starting", "study", *name, "run", id, "scale", *scale, "placement", pl.Summary())
	err = f(ctx, e)
	e.mu.Lock()
	e.rec.End = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		e.rec.Status = studydata.StatusInterrupted
	case err != nil:
		e.rec.Status, e.rec.Error = studydata.StatusFailed, err.Error()
	default:
		e.rec.Status = studydata.StatusDone
	}
	status := e.rec.Status
	e.mu.Unlock()
	if serr := e.Save(); serr != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", serr)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", id)
	switch {
	case status == studydata.StatusInterrupted:
		fmt.Fprintf(stderr, "loadgen study: interrupted; the samples so far are in %s\n", dir)
		return 130
	case err != nil:
		fmt.Fprintf(stderr, "loadgen study %s: %v (the samples so far are in %s)\n", *name, err, dir)
		return 1
	}
	return 0
}

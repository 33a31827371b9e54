// Package study is the frame of `loadgen study`, the validity lab's
// controlled experiments: the command (Command, the studies by name), the
// Env a study runs in and the record it fills (internal/studydata), the
// shared measurement (Measure, the latency metrics), the retake of a sample
// the hypervisor stole from (RetakeOnSteal) and the studies' containers
// (Env.Start, through internal/dockerx). Each study is a package of its own
// below this one (netstack, cc, scaleout, ceiling) exporting a Study.
// Every Add rewrites results/<study-run>/study.json atomically, so a crash,
// a Ctrl-C or a dead container keeps every sample already measured.
// `reporter study` turns the record into the report, the figures and the
// CSV.
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

// Study is one study: the name `loadgen study -study` takes and its Func.
type Study struct {
	Name string
	Run  Func
}

// registry is the studies a command runs, by name.
type registry map[string]Func

// names lists the studies in order.
func (r registry) names() []string {
	out := make([]string, 0, len(r))
	for k := range r {
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

// Command is `loadgen study` over studies (each name once).
func Command(studies ...Study) func(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	reg := registry{}
	for _, s := range studies {
		if _, dup := reg[s.Name]; dup {
			panic("study: " + s.Name + " given twice")
		}
		reg[s.Name] = s.Run
	}
	return func(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
		return reg.main(ctx, args, stdout, stderr, log)
	}
}

// options are `loadgen study`'s flags.
type options struct {
	name, run, results, scale, mode, repo string
	repeats                               int
}

// main is `loadgen study` over r.
func (r registry) main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	o, code := r.parse(args, stderr)
	if code >= 0 {
		return code
	}
	pl, err := placement.ForHost(placement.Spec{Mode: o.mode})
	if err != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", err)
		return 2
	}
	if err := pl.PinLoadgen(); err != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", err)
		return 1
	}
	id := o.run
	if id == "" {
		id = o.name + "-" + time.Now().UTC().Format("20060102T150405Z")
	}
	if strings.ContainsAny(id, `/\ `) || id == "." || id == ".." {
		fmt.Fprintf(stderr, "loadgen study: -run %q: an id is one path element without spaces\n", id)
		return 2
	}
	dir := filepath.Join(o.results, id)
	if _, err := os.Stat(filepath.Join(dir, studydata.File)); err == nil {
		fmt.Fprintf(stderr, "loadgen study: %s already holds a study record: choose another -run (a result is never replaced)\n", dir)
		return 2
	}
	h := hostinfo.Describe(ctx)
	e := &Env{Scale: o.scale, Repeats: o.repeats, Dir: dir, Log: log, Placement: pl, Repo: o.repo,
		rec: &studydata.Record{Schema: studydata.Schema, Run: id, Study: o.name, Scale: o.scale,
			Status: studydata.StatusRunning, Start: time.Now().UTC(),
			Host: studydata.Host{Hostname: h.Hostname, Kernel: h.Kernel, CPUs: h.CPUs, Loadgen: h.Loadgen, Docker: h.Docker}}}
	if err := e.Save(); err != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", err)
		return 1
	}
	log.Info("study starting", "study", o.name, "run", id, "scale", o.scale, "placement", pl.Summary())
	return e.finish(ctx, r[o.name](ctx, e), o.name, stdout, stderr)
}

// parse reads the flags; code is the exit code when the command ends here,
// -1 when it goes on.
func (r registry) parse(args []string, stderr io.Writer) (o options, code int) {
	fs := flag.NewFlagSet("loadgen study", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.name, "study", "", "the study: "+strings.Join(r.names(), ", "))
	fs.StringVar(&o.run, "run", "", "study run id (default <study>-<UTC time>); results go to <results>/<run>/")
	fs.StringVar(&o.results, "results", "results", "results directory")
	fs.StringVar(&o.scale, "scale", ScaleFull, "tiny (seconds per sample, for make test) or full")
	fs.IntVar(&o.repeats, "repeats", 0, "samples per variant and condition (0 = the study's default for its scale)")
	fs.StringVar(&o.mode, "placement", "", "CPU placement: auto (the default) or none; as for loadgen run")
	fs.StringVar(&o.repo, "repo", ".", "the project's root directory (compose/, .cache/dist/)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen study -study NAME [flags]\n\nRuns one of the validity lab's studies and writes <results>/<run>/study.json;\n`reporter study -run <run>` renders it.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, 0
		}
		return o, 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "loadgen study: unexpected argument %q: it takes only flags\n", fs.Arg(0))
		return o, 2
	case r[o.name] == nil:
		fmt.Fprintf(stderr, "loadgen study: -study %q: choose one of %s\n", o.name, strings.Join(r.names(), ", "))
		return o, 2
	case o.scale != ScaleTiny && o.scale != ScaleFull:
		fmt.Fprintf(stderr, "loadgen study: -scale %q: use tiny or full\n", o.scale)
		return o, 2
	case o.repeats < 0:
		fmt.Fprintf(stderr, "loadgen study: -repeats %d: use 0 (the default) or more\n", o.repeats)
		return o, 2
	}
	return o, -1
}

// finish records how the study ended (err is what its Func returned),
// saves the record and returns the exit code.
func (e *Env) finish(ctx context.Context, err error, name string, stdout, stderr io.Writer) int {
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
	status, id := e.rec.Status, e.rec.Run
	e.mu.Unlock()
	if serr := e.Save(); serr != nil {
		fmt.Fprintf(stderr, "loadgen study: %v\n", serr)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", id)
	switch {
	case status == studydata.StatusInterrupted:
		fmt.Fprintf(stderr, "loadgen study: interrupted; the samples so far are in %s\n", e.Dir)
		return 130
	case err != nil:
		fmt.Fprintf(stderr, "loadgen study %s: %v (the samples so far are in %s)\n", name, err, e.Dir)
		return 1
	}
	return 0
}

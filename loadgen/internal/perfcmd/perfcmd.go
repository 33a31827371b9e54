// Package perfcmd owns `loadgen perf`: how efficient is the instrument?
// Side-by-side closed-loop throughput of the loadgen's engines and of the
// field's load tools (wrk, hey, vegeta; over TLS wrk and h2load) against
// one origin on loopback, the same connections and duration, each tool
// pinned with taskset to one CPU and the origin to another. The figure of
// merit is requests per CPU-second of the load tool (its user + system
// time, from the kernel's accounting of the child): on a shared machine
// the origin's speed varies, a tool's cost per request much less. It
// starts the origins it needs (the loadgen's trivial server, package
// fastserver, and a TLS origin, perf-tls-origin) unless something already
// answers, and stops only what it started. scripts/perf.sh installs the
// tools and runs it (make perf).
package perfcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"proxybench/internal/stats"
	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/cmdflags"
)

// config is one `loadgen perf` invocation.
type config struct {
	Self      string // this binary (loadgen attack, the origins)
	Conns     int
	Duration  time.Duration
	Repeats   int
	Streams   int
	Tools     []string
	TLSTools  []string
	URL       string
	TLSURL    string
	ToolCPU   string
	OriginCPU string
	Vegeta    string
	CertDir   string
}

// Main is `loadgen perf`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	c, rc, ok := parse(args, stderr)
	if !ok {
		return rc
	}
	if err := run(ctx, c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "loadgen perf: %v\n", err)
		return 1
	}
	return 0
}

func parse(args []string, stderr io.Writer) (config, int, bool) {
	fs := flag.NewFlagSet("loadgen perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen perf [flags]\n\n"+
			"Closed-loop throughput and requests per CPU-second of each load tool against one origin,\n"+
			"each tool pinned to -tool-cpu and the origin to -origin-cpu; a table per protocol on stdout.\n\n")
		fs.PrintDefaults()
	}
	var c config
	var plainList, tlsList string
	fs.IntVar(&c.Conns, "conns", 50, "connections of every tool")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "each tool's run, whole seconds")
	fs.IntVar(&c.Repeats, "repeats", 1, "rounds: each table holds the median")
	fs.IntVar(&c.Streams, "streams", 10, "HTTP/2 streams per connection (loadgen-h2, h2load)")
	fs.StringVar(&plainList, "tools", "loadgen,loadgen-netpoll,loadgen-nethttp,wrk,hey,vegeta", "plain HTTP tools, comma-separated (empty: none)")
	fs.StringVar(&tlsList, "tls-tools", "loadgen-tls,wrk-tls,loadgen-h2,h2load", "TLS tools, comma-separated (empty: none)")
	fs.StringVar(&c.URL, "url", "http://"+originAddr+"/", "the plain origin; when it is the default and nothing answers there, the trivial server is started on a free port")
	fs.StringVar(&c.TLSURL, "tls-url", "", "the TLS origin (default: a perf-tls-origin started on a free port)")
	fs.StringVar(&c.ToolCPU, "tool-cpu", "1", "CPUs of the load tool (taskset list)")
	fs.StringVar(&c.OriginCPU, "origin-cpu", "0", "CPUs of an origin this command starts (taskset list)")
	fs.StringVar(&c.Vegeta, "vegeta", "vegeta", "the vegeta binary (scripts/gobin.sh vegeta builds it)")
	fs.StringVar(&c.CertDir, "cert-dir", tlscert.DefaultDir, "the lab's CA and server certificate (loadgen certs makes them)")
	if rc, ok := cmdflags.Parse(fs, args, stderr); !ok {
		return c, rc, false
	}
	c.Tools, c.TLSTools = cmdflags.List(plainList), cmdflags.List(tlsList)
	bad := func(format string, a ...any) (config, int, bool) {
		fmt.Fprintf(stderr, "loadgen perf: "+format+"\n", a...)
		return c, 2, false
	}
	if c.Conns < 1 || c.Repeats < 1 || c.Streams < 1 {
		return bad("-conns %d, -repeats %d, -streams %d: each must be at least 1", c.Conns, c.Repeats, c.Streams)
	}
	if c.Duration < time.Second || c.Duration%time.Second != 0 {
		return bad("-duration %v: whole seconds, at least 1s (wrk, hey and h2load take seconds)", c.Duration)
	}
	for _, n := range append(slices.Clone(c.Tools), c.TLSTools...) {
		t, ok := tools[n]
		if !ok {
			return bad("unknown tool %q: one of %s", n, strings.Join(toolNames(), ", "))
		}
		if t.tls != slices.Contains(c.TLSTools, n) {
			return bad("tool %q belongs in -%s", n, map[bool]string{true: "tls-tools", false: "tools"}[t.tls])
		}
	}
	if len(c.Tools)+len(c.TLSTools) == 0 {
		return bad("no tools: set -tools and/or -tls-tools")
	}
	self, err := os.Executable()
	if err != nil {
		return bad("cannot find this binary: %v", err)
	}
	c.Self = self
	return c, 0, true
}

func toolNames() []string { return slices.Sorted(maps.Keys(tools)) }

// round is one tool's run.
type round struct {
	Requests int64
	CPU      time.Duration // the tool's user + system time
}

func (r round) rps(d time.Duration) float64 { return float64(r.Requests) / d.Seconds() }
func (r round) perCPUSecond() float64 {
	if r.CPU <= 0 {
		return 0
	}
	return float64(r.Requests) / r.CPU.Seconds()
}

// measure runs tool name once, pinned to c.ToolCPU, and reads its count
// and its CPU time.
func measure(ctx context.Context, c config, name string) (round, error) {
	t := tools[name]
	argv := append([]string{"taskset", "-c", c.ToolCPU}, t.argv(c)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if t.stdin != nil {
		cmd.Stdin = strings.NewReader(t.stdin(c))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return round{}, fmt.Errorf("%s: %v: %s", name, err, tail(out))
	}
	n, err := t.requests(string(out))
	if err != nil {
		return round{}, fmt.Errorf("%s: reading its request count: %v: %s", name, err, tail(out))
	}
	if n == 0 {
		return round{}, fmt.Errorf("%s completed no request (is the origin answering, and trusted over TLS?): %s", name, tail(out))
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var cpu time.Duration
	if ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return round{Requests: n, CPU: cpu}, nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	stop, note, err := ensureOrigins(ctx, &c, stderr)
	defer stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "perf: %d connections, %v per tool, %d round(s); tools pinned with taskset -c %s; origin: %s\n",
		c.Conns, c.Duration, c.Repeats, c.ToolCPU, note.plain)
	if len(c.TLSTools) > 0 {
		fmt.Fprintf(stderr, "perf: TLS origin: %s; h2 with %d streams per connection\n", note.tls, c.Streams)
	}
	fmt.Fprintf(stderr, "perf: load average before: %s\n", loadavg())
	got := map[string][]round{}
	for r := 1; r <= c.Repeats; r++ {
		for _, n := range append(slices.Clone(c.Tools), c.TLSTools...) {
			rd, err := measure(ctx, c, n)
			if err != nil {
				return err
			}
			got[n] = append(got[n], rd)
			fmt.Fprintf(stderr, "perf: round %d %-16s %9d requests  %7.2f CPU-s  %9.0f req/s  %9.0f req/CPU-s\n",
				r, n, rd.Requests, rd.CPU.Seconds(), rd.rps(c.Duration), rd.perCPUSecond())
		}
	}
	fmt.Fprintf(stderr, "perf: load average after: %s\n", loadavg())
	if len(c.Tools) > 0 {
		table(stdout, fmt.Sprintf("Closed loop, %d connections, %v, median of %d; load tool on CPU %s (taskset), origin: %s.",
			c.Conns, c.Duration, c.Repeats, c.ToolCPU, note.plain), c, c.Tools, got)
	}
	if len(c.TLSTools) > 0 {
		table(stdout, fmt.Sprintf("TLS, closed loop, %d connections (h2: %d streams each), %v, median of %d; load tool on CPU %s, origin: %s.",
			c.Conns, c.Streams, c.Duration, c.Repeats, c.ToolCPU, note.tls), c, c.TLSTools, got)
	}
	return nil
}

// table writes one Markdown table: each tool's median requests/s and
// requests per CPU-second, and the loadgen's efficiency against it.
func table(w io.Writer, title string, c config, names []string, got map[string][]round) {
	med := func(n string, f func(round) float64) (float64, bool) {
		var xs []float64
		for _, r := range got[n] {
			xs = append(xs, f(r))
		}
		if len(xs) == 0 {
			return 0, false
		}
		return stats.Median(xs), true
	}
	eff := func(r round) float64 { return r.perCPUSecond() }
	fmt.Fprintf(w, "\n%s\n\n", title)
	fmt.Fprintln(w, "| tool | requests/s | requests per tool CPU-second | loadgen's efficiency vs this tool | target |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for _, n := range names {
		rps, _ := med(n, func(r round) float64 { return r.rps(c.Duration) })
		e, _ := med(n, eff)
		ratio, target := "-", "-"
		t := tools[n]
		if be, ok := med(t.baseline, eff); ok && t.baseline != "" && e > 0 {
			ratio = fmt.Sprintf("%.2fx (%s)", be/e, t.baseline)
			if t.want > 0 {
				target = fmt.Sprintf(">= %gx: met", t.want)
				if be < t.want*e {
					target = fmt.Sprintf(">= %gx: NOT met", t.want)
				}
			}
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %s | %s |\n", n, rps, e, ratio, target)
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Package attackcmd owns the `loadgen attack` subcommand: one load against
// one URL with the engine of package attack, a wrk-like summary (or JSON) on
// stdout, progress on the log, and optionally the traffic metrics on
// -metrics-addr for Prometheus.
package attackcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"proxybench/internal/metricsserver"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/selfcpu"
	"proxybench/loadgen/internal/wire"
)

type options struct {
	spec       attack.Spec // its Load parsed from the load flags below
	mode       string
	conc       int
	rate       float64
	duration   time.Duration
	stages     string
	stageKind  string
	warmup     time.Duration
	bodyFile   string
	metrics    string
	linger     time.Duration
	json       bool
	engine     string
	knee       bool
	kneeOpts   attack.KneeOptions
	ceiling    float64
	headers    headerFlag
	noProgress bool
	cpuProfile string
	proto      string
	tlsMin     string
	tlsMax     string
	resume     bool
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("loadgen attack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &o.spec
	fs.StringVar(&s.URL, "url", "", "target URL (required), e.g. http://127.0.0.1:8882/fast/")
	fs.IntVar(&o.conc, "c", 50, "closed loop: connections (workers); open loop: max requests in flight (default there 10000)")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: requests per second (implies -mode open)")
	fs.Float64Var(&s.MaxRate, "max-rate", 0, "cap the send rate at this many requests/s, closed and open loop, like JMeter's throughput timer (0 = no cap); in open loop a held send's latency counts from its intended send time")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "measured duration (after warm-up)")
	fs.DurationVar(&o.warmup, "warmup", 0, "traffic before the measured window, excluded from the summary")
	fs.DurationVar(&s.Timeout, "timeout", attack.DefaultTimeout, "per-request timeout")
	fs.IntVar(&s.MaxHeaderBytes, "max-header-bytes", attack.DefaultMaxHeaderBytes, "a response head (1xx included) or trailers beyond this is an error, reason header_too_large")
	fs.Int64Var(&s.MaxBodyBytes, "max-body-bytes", attack.DefaultMaxBodyBytes, "a response body beyond this is an error, reason body_too_large")
	fs.StringVar(&o.mode, "mode", "", "closed, open or stages (default: open with -rate, stages with -stages, else closed)")
	fs.StringVar(&o.stages, "stages", "", `ramping stages "DUR:TARGET,...", e.g. "10s:100,20s:500"`)
	fs.StringVar(&o.stageKind, "stage-kind", load.KindRate, "what -stages ramps: rate (open loop) or concurrency (closed loop)")
	fs.BoolVar(&s.NewConnPerRequest, "new-conn", false, "a new TCP connection per request instead of keep-alive")
	fs.StringVar(&o.proto, "proto", "", "protocol: h1 (HTTP/1.1 over TCP), tls (HTTP/1.1 over TLS), h2 (HTTP/2 over TLS), h3 (HTTP/3 over QUIC); default h1 for http://, tls for https://")
	fs.IntVar(&s.Streams, "streams", 1, "h2, h3: requests in flight per connection (-c counts connections)")
	fs.StringVar(&o.tlsMin, "tls-min", "1.2", "lowest TLS version offered: 1.2 or 1.3")
	fs.StringVar(&o.tlsMax, "tls-max", "1.3", "highest TLS version offered: 1.2 or 1.3")
	fs.BoolVar(&o.resume, "resume", true, "TLS session resumption: the connections share a session cache (false: every handshake full)")
	fs.StringVar(&s.TLS.CAFile, "ca", "", "PEM file of the CAs to trust (default "+attack.DefaultCAFile+" when it exists, else the system roots)")
	fs.StringVar(&s.TLS.ServerName, "server-name", "", "TLS server name (SNI, and the name verified); default the URL's host")
	fs.StringVar(&s.Method, "method", "GET", "HTTP method")
	fs.StringVar(&o.bodyFile, "body-file", "", "file whose content is the request body")
	fs.Var(&o.headers, "H", `request header "Name: value" (repeatable)`)
	fs.StringVar(&s.ExpectOrigin, "expect-origin", "", "count 2xx responses whose X-Origin differs as wrong origin")
	fs.StringVar(&s.Labels.Proxy, "proxy", "none", "proxy label on the metrics")
	fs.StringVar(&s.Labels.Origin, "origin", "none", "origin label on the metrics")
	fs.StringVar(&s.Labels.Scenario, "scenario", "attack", "scenario label on the metrics")
	fs.StringVar(&o.metrics, "metrics-addr", "", `serve /metrics here, e.g. 127.0.0.1:9500 ("" = no server)`)
	fs.DurationVar(&o.linger, "linger", 0, "with -metrics-addr: keep serving this long after the attack")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON instead of the text summary")
	fs.StringVar(&o.engine, "engine", "auto", "auto (h1: the epoll event loop for closed loops on Linux, else a goroutine per connection; h2: the HTTP/2 loop for closed loops, else x/net/http2), netpoll (a goroutine per connection; h2: x/net/http2), net-http (net/http; h2: x/net/http2): the last two for comparison")
	fs.BoolVar(&o.noProgress, "quiet", false, "no progress lines on stderr")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the attack to this file")
	fs.BoolVar(&o.knee, "knee", false, "breaking-point search: open-loop steps up until p99 or the error ratio breaks")
	fs.Float64Var(&o.kneeOpts.StartRate, "knee-start", 100, "knee: first rate (requests/s)")
	fs.Float64Var(&o.kneeOpts.Step, "knee-step", 100, "knee: rate increment per step")
	fs.Float64Var(&o.kneeOpts.MaxRate, "knee-max", 100000, "knee: highest rate tried")
	fs.DurationVar(&o.kneeOpts.StepDuration, "knee-step-d", 10*time.Second, "knee: duration of each step")
	fs.DurationVar(&o.kneeOpts.P99, "knee-p99", 100*time.Millisecond, "knee: a step breaks when its p99 exceeds this")
	fs.Float64Var(&o.kneeOpts.MaxErrorRatio, "knee-max-errors", 0.01, "knee: a step breaks when errors/total exceeds this")
	fs.Float64Var(&o.ceiling, "ceiling", 0, "knee: the loadgen's own ceiling in requests/s (a trivial server under the same placement, as loadgen run records it); a knee at or above 80 % of it is reported invalid (0 = not judged)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every option is a flag (loadgen attack -h)", fs.Arg(0))
	}
	cSet := false
	fs.Visit(func(f *flag.Flag) { cSet = cSet || f.Name == "c" })
	s.Header = o.headers.h
	if o.proto != "" {
		p, err := wire.ParseProto(o.proto)
		if err != nil {
			return nil, fmt.Errorf("-proto: %w", err)
		}
		s.Proto = p
	}
	var err error
	if s.TLS.MinVersion, err = tlsVersion("-tls-min", o.tlsMin); err != nil {
		return nil, err
	}
	if s.TLS.MaxVersion, err = tlsVersion("-tls-max", o.tlsMax); err != nil {
		return nil, err
	}
	s.TLS.DisableResumption = !o.resume
	if o.bodyFile != "" {
		b, err := os.ReadFile(o.bodyFile)
		if err != nil {
			return nil, fmt.Errorf("-body-file: %w", err)
		}
		s.Body = b
	}
	if o.ceiling < 0 {
		return nil, fmt.Errorf("-ceiling %v is negative: give the ceiling in requests/s, or 0", o.ceiling)
	}
	if o.warmup < 0 {
		return nil, fmt.Errorf("-warmup %v is negative: use 0 for no warm-up", o.warmup)
	}
	set := load.Settings{Mode: o.mode, Concurrency: o.conc, Rate: o.rate, StageKind: o.stageKind, Duration: o.duration}
	if o.stages != "" {
		st, err := load.ParseStages(o.stages)
		if err != nil {
			return nil, fmt.Errorf("-stages: %w", err)
		}
		set.Stages = st
	}
	if !cSet && (set.OpenLoop() || o.knee) {
		set.Concurrency = load.DefaultMaxInFlight // an in-flight cap, not a pool size
	}
	o.conc = set.Concurrency
	m, err := set.Model()
	if err != nil {
		switch pr := load.Problems(err); {
		case len(pr) == 1 && pr[0].Field == "Mode":
			return nil, fmt.Errorf("-mode %q: use closed, open or stages", o.mode)
		case len(pr) == 1 && pr[0].Field == "StageKind":
			return nil, fmt.Errorf("-stage-kind %q: use rate (open loop) or concurrency (closed loop)", o.stageKind)
		}
		return nil, err
	}
	s.Load = m
	o.kneeOpts.MaxInFlight, o.kneeOpts.Warmup = o.conc, o.warmup
	return o, nil
}

// tlsVersion parses a -tls-min/-tls-max value: 1.2 or 1.3.
func tlsVersion(flag, v string) (uint16, error) {
	n, err := wire.ParseTLSVersion(v)
	if err == nil && n == 0 {
		err = errors.New(`"": use 1.2 or 1.3`)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	return n, nil
}

// Main runs `loadgen attack`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadgen attack:", err)
		return 2
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := []attack.Option{attack.WithLogger(log)}
	switch o.engine {
	case "auto":
	case "netpoll":
		opts = append(opts, attack.WithGoroutinePerConn())
	case "net-http":
		opts = append(opts, attack.WithNetHTTP())
	default:
		fmt.Fprintf(stderr, "loadgen attack: -engine %q: use auto, netpoll or net-http\n", o.engine)
		return 2
	}
	a := attack.New(attack.NewMetrics(reg), opts...)
	reg.MustRegister(selfcpu.New(log))

	if o.metrics != "" {
		stop, err := serveMetrics(o.metrics, reg, log)
		if err != nil {
			fmt.Fprintln(stderr, "loadgen attack:", err)
			return 1
		}
		defer stop()
	}
	var progress func(attack.Progress)
	if !o.noProgress {
		progress = func(p attack.Progress) {
			log.Info("progress", "elapsed", p.Elapsed.Round(time.Second), "requests", p.Requests, "errors", p.Errors,
				"rps", int64(p.RPS), "p99", p.P99, "in_flight", p.InFlight)
		}
	}

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "loadgen attack: -cpuprofile:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "loadgen attack: -cpuprofile:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	code := 0
	if o.knee {
		code = runKnee(ctx, a, o, progress, stdout, stderr)
	} else {
		run := func(ctx context.Context, s attack.Spec) (*attack.Result, error) { return a.Run(ctx, s, progress) }
		warmStart, err := attack.WarmUp(ctx, o.spec, o.warmup, 0, run, nil)
		var res *attack.Result
		if err == nil || ctx.Err() != nil { // cut short by ctx: the window reports the interruption
			res, err = run(ctx, o.spec)
		}
		switch {
		case res == nil:
			fmt.Fprintln(stderr, "loadgen attack:", err)
			return 2
		case err != nil:
			log.Warn("attack interrupted: the summary covers what was measured", "err", err)
			code = 1
		}
		if werr := writeResult(stdout, o, res, warmStart, err != nil); werr != nil {
			fmt.Fprintln(stderr, "loadgen attack:", werr)
			return 1
		}
	}
	if o.metrics != "" && o.linger > 0 && ctx.Err() == nil {
		log.Info("lingering so Prometheus scrapes the final values", "for", o.linger)
		select {
		case <-ctx.Done():
		case <-time.After(o.linger):
		}
	}
	return code
}

func runKnee(ctx context.Context, a *attack.Attacker, o *options, progress func(attack.Progress), stdout, stderr io.Writer) int {
	last, steps, err := a.Knee(ctx, o.spec, o.kneeOpts, progress)
	if len(steps) == 0 && err != nil {
		fmt.Fprintln(stderr, "loadgen attack:", err)
		return 2
	}
	if werr := writeKnee(stdout, o, last, steps); werr != nil {
		fmt.Fprintln(stderr, "loadgen attack:", werr)
		return 1
	}
	if err != nil {
		return 1
	}
	return 0
}

func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr %s: %w", addr, err)
	}
	srv := metricsserver.New(reg, log)
	srv.Serve(ln)
	log.Info("serving metrics", "addr", srv.Addr())
	return srv.Stop, nil
}

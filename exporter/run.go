package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"proxybench/exporter/internal/containers"
	"proxybench/exporter/internal/gcmetrics"
	"proxybench/exporter/internal/info"
	"proxybench/exporter/internal/nginxstatus"
	"proxybench/internal/dockerx"
	"proxybench/internal/logsource"
	"proxybench/internal/metricsserver"
)

type config struct {
	listen         string
	ln             net.Listener // when set, serve on it instead of listen (tests hold their port)
	project        string
	docker         bool
	cadvisor       bool
	gctraceFile    string
	gctraceService string
	nginxStatus    string
	housekeeping   time.Duration
	jitter         float64
	cgroupPrefixes string
	discover       time.Duration
	logLevel       slog.Level
	pprof          bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("exporter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9400", "address to serve /metrics on (loopback by default; the stack passes LISTEN:9400, and :9400 inside a bridge container)")
	fs.StringVar(&c.project, "project", "proxybench", "compose project whose containers are watched")
	fs.BoolVar(&c.docker, "docker", true, "use the Docker engine (DOCKER_HOST or the local socket): gctrace from containers labelled proxybench.gctrace=true, container stats, proxy info")
	fs.BoolVar(&c.cadvisor, "cadvisor", true, "serve cAdvisor's container_* series for the project's containers (needs -docker and /sys/fs/cgroup)")
	fs.StringVar(&c.gctraceFile, "gctrace-file", "", "also read gctrace from this file (followed like tail -F) or - for stdin, for a proxy run outside Docker")
	fs.StringVar(&c.gctraceService, "gctrace-service", "", "service label (and container label) of -gctrace-file's series; required with it")
	fs.StringVar(&c.nginxStatus, "nginx-status", "http://127.0.0.1:8982/stub_status", "nginx stub_status URL scraped into nginx_* series; empty to disable")
	fs.DurationVar(&c.housekeeping, "housekeeping", time.Second, "how often cAdvisor reads each container's cgroup (fixed, not dynamic)")
	fs.Float64Var(&c.jitter, "housekeeping-jitter", 1.0, "cAdvisor stretches each housekeeping period by a random factor up to this (its default 1.0: samples every 1-2 s, each timestamped; 0.1 samples every 1.0-1.1 s for about 0.2 % of a core more)")
	fs.StringVar(&c.cgroupPrefixes, "cgroup-prefixes", "", "comma-separated cgroup path prefixes under which cAdvisor looks for containers (empty: "+strings.Join(containers.DefaultConfig.CgroupPrefixes, ",")+", Docker's cgroupfs and systemd drivers); a daemon started with --cgroup-parent P puts them under /P/")
	fs.DurationVar(&c.discover, "discover-interval", 2*time.Second, "how often to look for new or removed containers")
	fs.BoolVar(&c.pprof, "pprof", false, "serve Go's profiler at /debug/pprof/ (to see where the exporter's own CPU goes)")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q: the exporter takes only flags (see -h)", fs.Args())
	case c.gctraceFile != "" && c.gctraceService == "":
		return c, errors.New("-gctrace-file needs -gctrace-service NAME to label its series (e.g. caddy)")
	case c.housekeeping <= 0 || c.discover <= 0:
		return c, errors.New("-housekeeping and -discover-interval must be positive durations such as 1s")
	case c.cadvisor && c.cgroupPrefixes != "" && len(splitPrefixes(c.cgroupPrefixes)) == 0:
		return c, errors.New("-cgroup-prefixes names no prefix: give cgroup path prefixes such as /docker/, or leave it empty for Docker's defaults")
	case c.jitter < 0:
		return c, errors.New("-housekeeping-jitter must be 0 or more, e.g. 1.0 (cAdvisor's default) or 0.1")
	case !c.docker && c.gctraceFile == "" && c.nginxStatus == "":
		return c, errors.New("nothing to export: -docker=false needs -gctrace-file or -nginx-status")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "exporter:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	if err := serve(ctx, cfg, stdin, log); err != nil {
		log.Error("exporter failed", "err", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg config, stdin io.Reader, log *slog.Logger) error {
	if os.Getenv("GOGC") == "" {
		// The heap is a few MB of short-lived scrape garbage; collecting it
		// less often measured about a fifth less exporter CPU at idle.
		debug.SetGCPercent(400)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	gc := gcmetrics.New(reg)

	ln := cfg.ln
	var err error
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.listen); err != nil {
			return fmt.Errorf("listen on %s (is another exporter running? pick another -listen): %w", cfg.listen, err)
		}
	}
	srv := metricsserver.New(reg, log)
	// The container healthcheck asks every 2 s; a whole scrape there was
	// a measurable part of the exporter's idle CPU.
	srv.Handle("/healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	srv.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "proxybench exporter: metrics at /metrics, liveness at /healthz")
	}))
	if cfg.pprof {
		srv.Handle("/debug/pprof/", http.HandlerFunc(pprof.Index))
		srv.Handle("/debug/pprof/profile", http.HandlerFunc(pprof.Profile))
	}

	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	errc := make(chan error, 2) // file source, docker: neither may block

	if cfg.nginxStatus != "" {
		reg.MustRegister(nginxstatus.New(cfg.nginxStatus, &http.Client{}, 900*time.Millisecond, log))
	}
	if cfg.gctraceFile != "" {
		src := gc.Source(cfg.gctraceService, cfg.gctraceService)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if cfg.gctraceFile == "-" {
				err = logsource.Reader(ctx, stdin, time.Now, src)
			} else {
				err = logsource.FollowFile(ctx, cfg.gctraceFile, 250*time.Millisecond, time.Now, src)
			}
			if err != nil {
				errc <- err
			}
		}()
	}
	if cfg.docker {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := withDocker(ctx, cfg, reg, gc, log); err != nil {
				errc <- err
			}
		}()
	}
	srv.Serve(ln)
	log.Info("exporter serving", "listen", ln.Addr().String(), "project", cfg.project, "docker", cfg.docker, "gctrace_file", cfg.gctraceFile)

	select {
	case <-ctx.Done():
	case err = <-errc:
	case err = <-srv.Err():
	}
	srv.Stop()
	return err
}

// withDocker connects to the engine, waiting with backoff while it is
// away, then runs everything that needs it until ctx ends.
func withDocker(ctx context.Context, cfg config, reg prometheus.Registerer, gc *gcmetrics.Metrics, log *slog.Logger) error {
	var cli *dockerx.Client
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		var err error
		if cli, err = dockerx.New(ctx); err == nil {
			break
		}
		log.Warn("waiting for the docker engine", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	defer cli.Close()

	if cfg.cadvisor {
		cc := containers.DefaultConfig
		cc.Project, cc.Housekeeping, cc.Jitter = cfg.project, cfg.housekeeping, cfg.jitter
		if cfg.cgroupPrefixes != "" {
			cc.CgroupPrefixes = splitPrefixes(cfg.cgroupPrefixes)
		}
		st, err := containers.Start(ctx, cc, cli, reg, log)
		if err != nil {
			return fmt.Errorf("container stats: %w (run with -cadvisor=false to go without)", err)
		}
		defer st.Stop()
	}
	ic := info.New(cli, cfg.project, log)
	reg.MustRegister(ic)
	go ic.Run(ctx, 10*time.Second)

	sources := &logsource.Docker{
		Engine: cli,
		Labels: []string{dockerx.LabelProject + "=" + cfg.project, dockerx.LabelGCTrace + "=true"},
		Open: func(c dockerx.Container) logsource.Sink {
			return gc.Source(c.Name, c.Service)
		},
		Close: func(_ dockerx.Container, s logsource.Sink) {
			s.(*gcmetrics.Source).Delete()
		},
		Log:        log,
		Interval:   cfg.discover,
		MaxBackoff: 30 * time.Second,
	}
	return sources.Run(ctx)
}

// splitPrefixes reads -cgroup-prefixes: comma-separated, blanks dropped,
// each made absolute ("/" first) as cAdvisor's cgroup names are.
func splitPrefixes(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		out = append(out, p)
	}
	return out
}

// Package ceiling owns the instrument's own ceiling: the most the loadgen
// reaches, closed loop at a run's concurrency and under its max rate cap,
// against a trivial server (the lab's minimal origin, package fastserver)
// run as a process of its own pinned to the placement's proxy CPUs, where
// the system under test runs, while the loadgen stays pinned as in the run.
// A saturation claim near it is the instrument's limit, not the proxy's
// (manifest.Ceiling.Near). It measures, caches a measurement by everything
// it depends on, and serves the trivial server (`loadgen trivial-server`).
package ceiling

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/atomicfile"
	"proxybench/internal/cgroup"
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/child"
	"proxybench/loadgen/internal/load"
	"proxybench/origins/fast/fastserver"
)

// Defaults of a measurement: short enough that a run pays about two
// seconds for one, long enough for a closed loop to settle.
const (
	DefaultWarmup = 500 * time.Millisecond
	DefaultWindow = 1500 * time.Millisecond
	// Windows is how many windows of Window/Windows are measured; the
	// best is the ceiling.
	Windows = 3
	// OpenProbeRate is the rate an open-loop measurement offers: more
	// than any loadgen sends, so that what it completes is its ceiling.
	OpenProbeRate = 1e6
	// MaxConcurrency bounds the connections of a measurement: an open
	// loop's max in flight defaults to 10,000, far more than any closed loop
	// of the lab.
	MaxConcurrency = 1000
)

// ServerName is the X-Origin of the trivial server.
const ServerName = "ceiling"

// Options are what a measurement depends on; all of it is in the cache key.
type Options struct {
	Placement   string           // the placement mode (auto, none, custom)
	ServerCPUs  placement.CPUSet // the trivial server's CPUs: the placement's proxy CPUs; empty = every CPU
	Workers     int              // the trivial server's GOMAXPROCS: the proxies' workers; 0 = its CPUs
	LoadgenCPUs placement.CPUSet // the loadgen's CPUs as pinned; recorded and keyed, not applied here
	Concurrency int              // closed-loop connections, an open loop's max in flight (clamped to 1..MaxConcurrency)
	// Open measures the open-loop engine instead: an open loop offered
	// far more than it can send (OpenProbeRate) with Concurrency in
	// flight at most; its ceiling is the rate it completed. An open loop's
	// sends, each paced by its own timer, cost the loadgen more than a
	// closed loop's, so its ceiling is the one an open-loop claim (an
	// offered rate, a knee) is held to.
	Open    bool
	MaxRate float64       // the loadgen's cap, requests/s; 0 = none
	NetHTTP bool          // the run sends through net/http
	Warmup  time.Duration // 0 = DefaultWarmup
	Window  time.Duration // 0 = DefaultWindow

	// Cache is the directory of cached measurements ("" = none); MaxAge how
	// old one may be to be reused (0 = always measure).
	Cache  string
	MaxAge time.Duration

	// Binary is the loadgen executable that serves the trivial server
	// (os.Executable when empty); its SHA-256 is in the key.
	Binary string
	// Env is added to the trivial server's environment (tests).
	Env []string
	Now func() time.Time // default time.Now
	Log *slog.Logger
}

func (o *Options) fill() error {
	o.Concurrency = min(max(o.Concurrency, 1), MaxConcurrency)
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("ceiling: the loadgen binary: %w", err)
		}
		o.Binary = exe
	}
	return load.CheckMaxRate(o.MaxRate)
}

// engine is the engine the measurement runs on.
func (o *Options) engine() string {
	a := attack.New(attack.NewMetrics(prometheus.NewRegistry()), o.attackOptions()...)
	return a.Engine(&attack.Spec{URL: "http://127.0.0.1/", Load: o.model(o.Window), MaxRate: o.MaxRate})
}

// model is the load of one window of d.
func (o *Options) model(d time.Duration) load.Model {
	if o.Open {
		return load.Open{Rate: OpenProbeRate, MaxInFlight: o.Concurrency, Duration: d}
	}
	return load.Closed{Connections: o.Concurrency, Duration: d}
}

// Model is "open" or "closed": which loop o measures.
func (o *Options) Model() string {
	if o.Open {
		return manifest.CeilingOpen
	}
	return manifest.CeilingClosed
}

func (o *Options) attackOptions() []attack.Option {
	if o.NetHTTP {
		return []attack.Option{attack.WithNetHTTP()}
	}
	return nil
}

// DefaultCache is where `loadgen run` caches measurements: the user's cache
// directory (shared by every results directory, so that runs into
// temporary results directories reuse one too), else the system's
// temporary one.
func DefaultCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "proxybench", "ceiling")
}

// key is the cache key of o (and of the loadgen's cgroup CPU quota) and the loadgen binary's SHA-256.
func (o *Options) key() (key, binary string, err error) {
	f, err := os.Open(o.Binary)
	if err != nil {
		return "", "", fmt.Errorf("ceiling: hash the loadgen binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", "", fmt.Errorf("ceiling: hash the loadgen binary: %w", err)
	}
	binary = hex.EncodeToString(h.Sum(nil))
	parts := []string{"v2", o.Model(), strconv.FormatFloat(loadgenQuota(), 'g', -1, 64), o.Placement, o.ServerCPUs.String(), strconv.Itoa(o.Workers), o.LoadgenCPUs.String(),
		strconv.Itoa(o.Concurrency), strconv.FormatFloat(o.MaxRate, 'g', -1, 64), o.engine(),
		o.Warmup.String(), o.Window.String(), strconv.Itoa(runtime.NumCPU()), binary}
	k := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(k[:12]), binary, nil
}

// loadgenQuota is the CPU quota of the loadgen's cgroup in cores (0 = none
// or unknown): a quota starves the loadgen and the trivial server it starts
// alike, so it is part of the key.
func loadgenQuota() float64 {
	g, err := cgroup.Self()
	if err != nil {
		return 0
	}
	cores, limited, err := g.Quota()
	if err != nil || !limited {
		return 0
	}
	return cores
}

// Resolve returns the ceiling of o: a cached measurement with the same key
// younger than MaxAge, else a new measurement (cached for the next run).
// A failed measurement is an error; a broken cache only a warning.
func Resolve(ctx context.Context, o Options) (*manifest.Ceiling, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	key, binary, err := o.key()
	if err != nil {
		return nil, err
	}
	file := ""
	if o.Cache != "" {
		file = filepath.Join(o.Cache, key+".json")
	}
	if file != "" && o.MaxAge > 0 {
		if c, err := readCached(file); err == nil && o.Now().Sub(c.MeasuredAt) < o.MaxAge && c.RPS > 0 {
			c.Source, c.CacheFile, c.CacheMaxAge = manifest.CeilingCached, file, o.MaxAge.Seconds()
			return c, nil
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			o.Log.Warn("ceiling: cached measurement unreadable: measuring again", "file", file, "err", err)
		}
	}
	c, err := Measure(ctx, o)
	if err != nil {
		return nil, err
	}
	c.Loadgen, c.CacheKey = binary, key
	if file != "" {
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := os.MkdirAll(o.Cache, 0o755); err == nil {
			err = atomicfile.WriteFile(file, append(b, '\n'), 0o644)
		}
		if err != nil {
			o.Log.Warn("ceiling: cannot cache the measurement", "file", file, "err", err)
		} else {
			c.CacheFile, c.CacheMaxAge = file, o.MaxAge.Seconds()
		}
	}
	return c, nil
}

func readCached(file string) (*manifest.Ceiling, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var c manifest.Ceiling
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Measure starts the trivial server pinned to o.ServerCPUs, drives it
// closed loop at o.Concurrency under o.MaxRate for o.Warmup, then for
// Windows windows splitting o.Window, and returns the best window.
func Measure(ctx context.Context, o Options) (*manifest.Ceiling, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	addr, stop, err := startServer(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer stop()
	a := attack.New(attack.NewMetrics(prometheus.NewRegistry()), o.attackOptions()...)
	s := attack.Spec{URL: "http://" + addr + "/", Load: o.model(o.Window), NoDrain: true,
		MaxRate: o.MaxRate, ExpectOrigin: ServerName, Labels: attack.Labels{Proxy: "none", Origin: ServerName, Scenario: "ceiling"}}
	run := func(ctx context.Context, s attack.Spec) (*attack.Result, error) { return a.Run(ctx, s, nil) }
	if _, err := attack.WarmUp(ctx, s, o.Warmup, 0, run, nil); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	// Windows back to back, the best kept: a burst of steal or of a
	// neighbour's work lowers one window, and a low ceiling would flag
	// cells the instrument could in fact drive.
	var res *attack.Result
	var rates []float64
	s.Load = o.model(o.Window / Windows)
	for i := 0; i < Windows; i++ {
		r, err := run(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("ceiling: %w", err)
		}
		if r.Requests == 0 {
			return nil, fmt.Errorf("ceiling: the trivial server at %s answered nothing (%d errors: %v)", addr, r.Errors, r.ErrorReasons)
		}
		rates = append(rates, r.RPS())
		if res == nil || r.RPS() > res.RPS() {
			res = r
		}
	}
	c := &manifest.Ceiling{WindowRPS: rates, Model: o.Model(),
		RPS: res.RPS(), Concurrency: o.Concurrency, MaxRate: o.MaxRate, Engine: o.engine(), WindowS: res.Window(),
		MeasuredAt: o.Now().UTC(), Source: manifest.CeilingMeasured, ServerCPUs: o.ServerCPUs.String(),
		LoadgenCPUs: o.LoadgenCPUs.String(), LoadgenQuota: loadgenQuota(), Errors: res.Errors, Placement: o.Placement,
		Server: fmt.Sprintf("origins/fast (package fastserver) as a process of its own, GOMAXPROCS %d", serverWorkers(&o)),
	}
	o.Log.Info("instrument ceiling measured", "rps", int64(c.RPS), "concurrency", c.Concurrency, "max_rate", c.MaxRate,
		"engine", c.Engine, "server_cpus", c.ServerCPUs, "loadgen_cpus", c.LoadgenCPUs)
	return c, nil
}

func serverWorkers(o *Options) int {
	switch {
	case o.Workers > 0:
		return o.Workers
	case len(o.ServerCPUs) > 0:
		return len(o.ServerCPUs)
	}
	return runtime.NumCPU()
}

// startServer runs `<binary> trivial-server` and returns its address; stop
// ends it (package child: closing its stdin ends it, so it never outlives
// us).
func startServer(ctx context.Context, o *Options) (string, func(), error) {
	args := []string{ServerCommand, "-workers", strconv.Itoa(serverWorkers(o))}
	if len(o.ServerCPUs) > 0 {
		args = append(args, "-cpus", o.ServerCPUs.String())
	}
	cmd := exec.Command(o.Binary, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	p, l, err := child.Start(ctx, cmd, 10*time.Second, nil)
	if err != nil {
		return "", nil, fmt.Errorf("ceiling: the trivial server %w", err)
	}
	if addr, ok := strings.CutPrefix(l, "listening "); ok {
		return addr, p.Stop, nil
	}
	p.Stop()
	return "", nil, fmt.Errorf("ceiling: the trivial server did not start: %q", l)
}

// ServerCommand is the loadgen subcommand that serves the trivial server.
const ServerCommand = "trivial-server"

// ServerMain is `loadgen trivial-server [-cpus LIST] [-workers N] [-listen
// ADDR]`: it pins itself to the CPUs, serves package fastserver (X-Origin
// "ceiling") on the address (default 127.0.0.1:0), prints "listening
// ADDR" on stdout, and exits when its stdin closes or ctx ends.
func ServerMain(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("loadgen "+ServerCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpus := fs.String("cpus", "", "pin the server to these CPUs (Linux cpuset list, e.g. 1); empty = every CPU")
	workers := fs.Int("workers", 0, "GOMAXPROCS (0 = the number of -cpus)")
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpus != "" {
		set, err := placement.ParseCPUSet(*cpus)
		if err == nil {
			err = placement.Pin(set)
		}
		if err != nil {
			fmt.Fprintln(stderr, "loadgen trivial-server: -cpus:", err)
			return 2
		}
	}
	if *workers > 0 {
		runtime.GOMAXPROCS(*workers)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen trivial-server:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }() //nolint:errcheck // EOF or error: the parent is gone
	fmt.Fprintln(stdout, "listening", ln.Addr().String())
	if err := fastserver.Serve(ctx, ln, ServerName, log); err != nil {
		fmt.Fprintln(stderr, "loadgen trivial-server:", err)
		return 1
	}
	return 0
}

// Main is `loadgen ceiling`: the instrument's ceiling under a placement, as
// `loadgen run` measures it before its cells, printed as JSON (always
// measured, never from the cache).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("loadgen ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("placement", "", "CPU placement: auto (the default) or none; as for loadgen run")
	conc := fs.Int("c", 50, "closed-loop connections: the run's concurrency")
	maxRate := fs.Float64("max-rate", 0, "the loadgen's cap on its send rate, requests/s (0 = none)")
	window := fs.Duration("d", DefaultWindow, "measured window")
	warmup := fs.Duration("warmup", DefaultWarmup, "warm-up before the window, excluded")
	netHTTP := fs.Bool("net-http", false, "send through net/http")
	open := fs.Bool("open", false, "measure the open-loop engine (offered far more than it can send, -c in flight at most) instead of the closed loop")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *window <= 0 || *warmup < 0 || *conc < 1 {
		fmt.Fprintln(stderr, "loadgen ceiling: -d must be positive, -warmup not negative, -c at least 1")
		return 2
	}
	pl, err := placement.ForHost(placement.Spec{Mode: *mode})
	if err != nil {
		fmt.Fprintln(stderr, "loadgen ceiling:", err)
		return 2
	}
	if err := pl.PinLoadgen(); err != nil {
		fmt.Fprintln(stderr, "loadgen ceiling:", err)
		return 1
	}
	if *warmup == 0 {
		*warmup = -1 // Options: 0 is the default, negative none
	}
	c, err := Measure(ctx, Options{Placement: pl.Mode, ServerCPUs: pl.Proxy, Workers: pl.Workers, LoadgenCPUs: pl.Loadgen,
		Concurrency: *conc, MaxRate: *maxRate, NetHTTP: *netHTTP, Warmup: *warmup, Window: *window, Open: *open, Log: log})
	if err != nil {
		fmt.Fprintln(stderr, "loadgen ceiling:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return 1
	}
	return 0
}

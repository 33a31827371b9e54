//go:build e2e

package dashcheck

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promtest"
)

// TestSyntheticStack runs the live check against a real Prometheus (the
// pinned binary, the repository's rules and flags) scraping two synthetic
// targets that publish the loadgen and exporter metrics of
// docs/design-notes.md. The targets are stand-ins for development before the
// stack exists; the acceptance is TestLiveQueriesReturnData after a real run.
//
//	PROXYBENCH_PROMETHEUS_BIN=$(scripts/gobin.sh prometheus) go test -tags e2e -run TestSyntheticStack ./grafana/dashcheck
func TestSyntheticStack(t *testing.T) {
	bin := os.Getenv("PROXYBENCH_PROMETHEUS_BIN")
	if bin == "" {
		t.Skip("set PROXYBENCH_PROMETHEUS_BIN to the Prometheus binary (scripts/gobin.sh prometheus)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	loadgen, exporter := prometheus.NewRegistry(), prometheus.NewRegistry()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); synthesize(ctx, loadgen, exporter) }()
	defer wg.Wait()
	lg := httptest.NewServer(promhttp.HandlerFor(loadgen, promhttp.HandlerOpts{}))
	defer lg.Close()
	ex := httptest.NewServer(promhttp.HandlerFor(exporter, promhttp.HandlerOpts{}))
	defer ex.Close()

	dir := t.TempDir()
	rules, err := filepath.Abs("../../prometheus/rules")
	if err != nil {
		t.Fatal(err)
	}
	// Prometheus binds port 0 and logs what it got; its self-scrape goes
	// through a port this test holds, forwarded once that is known.
	var promAddr atomic.Value
	self := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := promAddr.Load().(string)
		if a == "" {
			http.Error(w, "prometheus not listening yet", http.StatusServiceUnavailable)
			return
		}
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: a}).ServeHTTP(w, r)
	}))
	defer self.Close()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
  scrape_native_histograms: true
  always_scrape_classic_histograms: true
rule_files: [%q]
scrape_configs:
  - job_name: loadgen
    static_configs: [{targets: [%q]}]
  - job_name: exporter
    static_configs: [{targets: [%q]}]
  - job_name: prometheus
    static_configs: [{targets: [%q]}]
`, rules+"/*.rules.yml", strings.TrimPrefix(lg.URL, "http://"), strings.TrimPrefix(ex.URL, "http://"), strings.TrimPrefix(self.URL, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	flags, err := os.ReadFile("../../prometheus/flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:0", "--log.level=info"}
	args = append(args, strings.Fields(string(flags))...)
	cmd := exec.CommandContext(ctx, bin, args...)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", log)
		}
	}()

	lctx, lcancel := context.WithTimeout(ctx, 60*time.Second)
	addr, err := promtest.ListenAddr(lctx, func() string { b, _ := os.ReadFile(logf.Name()); return string(b) })
	lcancel()
	if err != nil {
		t.Fatal(err)
	}
	promAddr.Store(addr)
	base := "http://" + addr
	waitReady(t, base)
	// Two cells of 8 s with a 3 s settle run inside synthesize; give the
	// rules' 5 s windows time to fill behind them.
	time.Sleep(30 * time.Second)
	p := Prom{Base: base, Client: &http.Client{Timeout: 10 * time.Second}}
	CheckLive(t, p, "../dashboards", rulesGlob, 2*time.Minute, nil)

	// The same client must see "nothing" and "broken" for what they are,
	// or the check above could pass on an empty Prometheus.
	end := time.Now()
	if r, err := p.Range(ctx, "proxybench_no_such_series", end.Add(-time.Minute), end, time.Second); err != nil || r.Samples != 0 {
		t.Errorf("absent series: %d samples, %v; want 0 samples and no error", r.Samples, err)
	}
	if _, err := p.Range(ctx, "rate(proxybench_requests_total)", end.Add(-time.Minute), end, time.Second); err == nil {
		t.Error("a query Prometheus rejects did not return an error")
	}
	// Native histogram samples come back under "histograms", not "values".
	if r, err := p.Range(ctx, "proxy_origin_scenario:proxybench_request_duration_seconds:rate5s", end.Add(-2*time.Minute), end, time.Second); err != nil || r.Samples == 0 {
		t.Errorf("native histogram range query: %+v, %v; want histogram samples", r, err)
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("prometheus at %s not ready after 30 s", base)
}

// synthesize publishes plausible values for every contract metric the
// dashboards read, until ctx ends: traffic for two proxies x two origins,
// one closed-loop and one open-loop cell window, container and GC series.
func synthesize(ctx context.Context, loadgen, exporter *prometheus.Registry) {
	hist := func(d *metricdefs.Def) *prometheus.HistogramVec {
		return d.NewHistogramVec(prometheus.HistogramOpts{Buckets: []float64{0.0001, 0.001, 0.01, 0.1, 1},
			NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160})
	}
	reqs, errs := metricdefs.Requests.NewCounterVec(), metricdefs.RequestErrors.NewCounterVec()
	dur, lag := hist(metricdefs.RequestDuration), hist(metricdefs.OpenLoopLag)
	bytes, inflight := metricdefs.ResponseBytes.NewCounterVec(), metricdefs.RequestsInFlight.NewGaugeVec()
	sched, sent := metricdefs.OpenLoopScheduled.NewCounterVec(), metricdefs.OpenLoopSent.NewCounterVec()
	target, wrong := metricdefs.TargetRate.NewGaugeVec(), metricdefs.WrongOrigin.NewCounterVec()
	cStart, cEnd := metricdefs.CellWindowStart.NewGaugeVec(), metricdefs.CellWindowEnd.NewGaugeVec()
	cConc, cRate, cFailed := metricdefs.CellConcurrency.NewGaugeVec(), metricdefs.CellTargetRate.NewGaugeVec(), metricdefs.CellFailed.NewGaugeVec()
	cpuLimit := metricdefs.LoadgenCPULimit.NewGaugeVec()
	loadgen.MustRegister(reqs, errs, dur, lag, bytes, inflight, sched, sent, target, wrong, cStart, cEnd, cConc, cRate, cFailed, cpuLimit,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cpuLimit.WithLabelValues().Set(2)

	// cAdvisor's series with the two labels the dashboards select by.
	svc := []string{"service", "name"}
	counter := func(d *metricdefs.Def) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: "x"}, svc)
	}
	cpu, thrP := counter(metricdefs.ContainerCPUUsage), counter(metricdefs.ContainerCFSThrottledPeriods)
	per, thrS := counter(metricdefs.ContainerCFSPeriods), counter(metricdefs.ContainerCFSThrottledSeconds)
	mem := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricdefs.ContainerMemoryWorkingSet.Name, Help: "x"}, svc)
	info := metricdefs.ProxyInfo.NewGaugeVec()
	cycles, forced := metricdefs.GCCycles.NewCounterVec(), metricdefs.GCForcedCycles.NewCounterVec()
	pause := metricdefs.GCPause.NewHistogramVec(prometheus.HistogramOpts{Buckets: []float64{1e-5, 1e-4, 1e-3, 1e-2}, NativeHistogramBucketFactor: 1.1})
	gcCPU, frac := metricdefs.GCCPU.NewCounterVec(), metricdefs.GCCPUFraction.NewGaugeVec()
	live, goal := metricdefs.GCHeapLive.NewGaugeVec(), metricdefs.GCHeapGoal.NewGaugeVec()
	perr := metricdefs.GCTraceParseErrors.NewCounterVec()
	exporter.MustRegister(cpu, mem, thrP, per, thrS, info, cycles, forced, pause, gcCPU, frac, live, goal, perr)

	proxies, origins := []string{"nginx", "caddy"}, []string{"go", "fast"}
	for _, s := range []string{"nginx", "caddy", "origin-go", "origin-fast"} {
		cpu.WithLabelValues(s, "proxybench-"+s)
	}
	for _, p := range proxies {
		info.WithLabelValues("proxybench-"+p, p, p+":dev", "sha256:0", "1.0").Set(1)
		for _, o := range origins {
			for _, r := range []string{"timeout", "refused", "reset", "eof", "protocol", "canceled", "other"} {
				errs.WithLabelValues(p, o, "plain", r)
			}
			sched.WithLabelValues(p, o, "plain")
			sent.WithLabelValues(p, o, "plain")
			wrong.WithLabelValues(p, o, "plain")
		}
	}
	perr.WithLabelValues("proxybench-caddy", "caddy")
	forced.WithLabelValues("proxybench-caddy", "caddy")

	// Cells: nginx->go closed loop 2..10 s, caddy->fast open loop 13..21 s.
	type window struct {
		p, o       string
		from, to   time.Duration
		rate, conc float64
	}
	cells := []window{{"nginx", "go", 2 * time.Second, 10 * time.Second, 0, 8}, {"caddy", "fast", 13 * time.Second, 21 * time.Second, 400, 0}}
	t0 := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			el := now.Sub(t0)
			for _, c := range cells {
				labels := []string{"r1", c.p + "." + c.o + ".plain.quick.r1", c.p, c.o, "plain", "quick", "1"}
				if el >= c.from { // the same values every tick: a gauge set once
					cStart.WithLabelValues(labels...).Set(float64(t0.Add(c.from).UnixMilli()) / 1000)
					cConc.WithLabelValues(labels...).Set(c.conc)
					cRate.WithLabelValues(labels...).Set(c.rate)
					cFailed.WithLabelValues(labels...).Set(0)
				}
				if el >= c.to {
					cEnd.WithLabelValues(labels...).Set(float64(t0.Add(c.to).UnixMilli()) / 1000)
				}
				active := el >= c.from && el < c.to
				target.WithLabelValues(c.p, c.o, "plain").Set(ifActive(active, c.rate))
				inflight.WithLabelValues(c.p, c.o, "plain").Set(ifActive(active, 8))
				if !active {
					continue
				}
				for range 40 {
					v := 0.0005 + rng.ExpFloat64()*0.001
					dur.WithLabelValues(c.p, c.o, "plain").Observe(v)
					reqs.WithLabelValues(c.p, c.o, "plain", "200").Inc()
					bytes.WithLabelValues(c.p, c.o, "plain").Add(1300)
					if c.rate > 0 {
						sched.WithLabelValues(c.p, c.o, "plain").Inc()
						sent.WithLabelValues(c.p, c.o, "plain").Inc()
						lag.WithLabelValues(c.p, c.o, "plain").Observe(rng.ExpFloat64() * 0.0001)
					}
				}
				reqs.WithLabelValues(c.p, c.o, "plain", "502").Inc()
				errs.WithLabelValues(c.p, c.o, "plain", "reset").Inc()
			}
			for _, s := range []string{"nginx", "caddy", "origin-go", "origin-fast"} {
				cpu.WithLabelValues(s, "proxybench-"+s).Add(0.1 * rng.Float64())
				mem.WithLabelValues(s, "proxybench-"+s).Set(50e6 + 1e6*rng.Float64())
				per.WithLabelValues(s, "proxybench-"+s).Add(1)
				thrP.WithLabelValues(s, "proxybench-"+s).Add(float64(rng.IntN(2)))
				thrS.WithLabelValues(s, "proxybench-"+s).Add(0.001)
			}
			cycles.WithLabelValues("proxybench-caddy", "caddy").Inc()
			pause.WithLabelValues("proxybench-caddy", "caddy").Observe(2e-5 + rng.ExpFloat64()*5e-5)
			gcCPU.WithLabelValues("proxybench-caddy", "caddy").Add(0.002)
			frac.WithLabelValues("proxybench-caddy", "caddy").Set(0.03)
			live.WithLabelValues("proxybench-caddy", "caddy").Set(4e6)
			goal.WithLabelValues("proxybench-caddy", "caddy").Set(8e6)
		}
	}
}

func ifActive(active bool, v float64) float64 {
	if active {
		return v
	}
	return 0
}

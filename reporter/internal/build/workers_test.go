package build

import (
	"context"
	"maps"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
	"proxybench/internal/promtest"
	"proxybench/reporter/internal/report"
)

// loadgenSeries are the series of one loadgen process a cell's report
// reads: its traffic (the worker label on a loadgen worker's) and the
// capacity gauge its scrapes are told by.
type loadgenSeries struct {
	reqs, errs *prometheus.CounterVec
	lat        *prometheus.HistogramVec
	srv        *httptest.Server
}

func newLoadgenSeries(t *testing.T, worker string) (*loadgenSeries, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	var r prometheus.Registerer = reg
	if worker != "" {
		r = prometheus.WrapRegistererWith(prometheus.Labels{metricdefs.WorkerLabel: worker}, reg)
	}
	s := &loadgenSeries{reqs: metricdefs.Requests.NewCounterVec(), errs: metricdefs.RequestErrors.NewCounterVec(),
		// The loadgen's native histogram: factor 1.1 (schema 3).
		lat: metricdefs.RequestDuration.NewHistogramVec(prometheus.HistogramOpts{Buckets: prometheus.DefBuckets,
			NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramZeroThreshold: 1e-6})}
	limit := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricdefs.LoadgenCPULimit.Name, Help: metricdefs.LoadgenCPULimit.Help})
	limit.Set(1)
	r.MustRegister(s.reqs, s.errs, s.lat, limit)
	s.srv = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(s.srv.Close)
	return s, reg
}

// TestWorkersSumExactly: three loadgen workers' series (the worker label,
// one scrape target each), scraped by the real Prometheus, make one cell
// whose counts are their exact sum and whose native-histogram quantiles are
// those of the union of their observations: the same observations made by
// one loadgen under another label set give the same codes, count and
// quantiles, to the last bit. A worker whose scrapes stop mid-window
// (its /metrics gone) flags its cell prometheus_gap, named.
func TestWorkersSumExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and waits for scrapes")
	}
	t.Parallel()
	lg, lgReg := newLoadgenSeries(t, "") // the coordinator, and the one loadgen of the union cell
	start, end, workers := metricdefs.CellWindowStart.NewGaugeVec(), metricdefs.CellWindowEnd.NewGaugeVec(), metricdefs.CellLoadgenWorkers.NewGaugeVec()
	lgReg.MustRegister(start, end, workers)
	ws := make([]*loadgenSeries, 3)
	targets := []string{strings.TrimPrefix(lg.srv.URL, "http://")}
	for i := range ws {
		ws[i], _ = newLoadgenSeries(t, strconv.Itoa(i))
		targets = append(targets, strings.TrimPrefix(ws[i].srv.URL, "http://"))
	}
	// Born before the windows, at 0, on every worker: code 200 and a
	// timeout error; code 502 is born inside the first window, on worker 2.
	for _, w := range append([]*loadgenSeries{lg}, ws...) {
		for _, o := range []string{"fast", "go", "python"} {
			w.reqs.WithLabelValues("nginx", o, "simple", "h1", "200")
			w.errs.WithLabelValues("nginx", o, "simple", "h1", "timeout")
		}
	}
	prom := promtest.Start(t, promtest.Options{Targets: targets, Native: true})
	c, err := promapi.New(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Prometheus's scrape manager takes its targets up on its first
	// reload tick (up to 5 s after the start), not at once.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		up, err := c.Query(context.Background(), "count(up == 1)", time.Now())
		if err == nil && len(up) == 1 && up[0].Value == float64(len(targets)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus does not scrape the %d targets: %v %v", len(targets), up, err)
		}
	}
	time.Sleep(2500 * time.Millisecond) // scrapes before the first window

	cellOf := func(origin string) []string {
		return []string{"w1", "nginx." + origin + ".simple.quick.r1", "nginx", origin, "simple", "quick", "", "1"}
	}
	merged, union, gapped := cellOf("fast"), cellOf("go"), cellOf("python")
	begin := func(cells ...[]string) {
		now := float64(time.Now().UnixMilli()) / 1000
		for _, c := range cells {
			start.WithLabelValues(c...).Set(now)
		}
	}
	// finish ends the cells, n loadgen workers' (0: the loadgen's alone,
	// which publishes no worker count).
	finish := func(n int, cells ...[]string) {
		now := float64(time.Now().UnixMilli()) / 1000
		for _, c := range cells {
			end.WithLabelValues(c...).Set(now)
			if n > 0 {
				workers.WithLabelValues(c...).Set(float64(n))
			}
		}
	}

	// The first window: 3000 observations, each on worker i % 3 and on the
	// one loadgen of the union cell.
	begin(merged, union)
	var obs []float64
	codes := map[string]int64{}
	for i := range 3000 {
		v := 0.0005 * (1 + 20*math.Pow(float64(i%1000)/1000, 6)) * (1 + float64(i%7)/10)
		obs = append(obs, v)
		w := ws[i%3]
		code := "200"
		if i%97 == 0 && i%3 == 2 {
			code = "502"
		}
		codes[code]++
		for _, s := range []struct {
			l      *loadgenSeries
			origin string
		}{{w, "fast"}, {lg, "go"}} {
			s.l.lat.WithLabelValues("nginx", s.origin, "simple", "h1").Observe(v)
			s.l.reqs.WithLabelValues("nginx", s.origin, "simple", "h1", code).Inc()
			if i%500 == 1 {
				s.l.errs.WithLabelValues("nginx", s.origin, "simple", "h1", "timeout").Inc()
			}
		}
		if i%100 == 0 {
			time.Sleep(110 * time.Millisecond)
		}
	}
	finish(3, merged)
	finish(0, union)
	time.Sleep(3500 * time.Millisecond) // quiet: the last values get scraped

	// The second window: worker 1's /metrics goes away early in it.
	begin(gapped)
	for i := range 300 {
		ws[i%3].reqs.WithLabelValues("nginx", "python", "simple", "h1", "200").Inc()
		if i == 10 { // 0.1 s into its 3 s
			ws[1].srv.Close()
		}
		if i%10 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	finish(3, gapped)
	time.Sleep(3500 * time.Millisecond)

	r, err := Report(context.Background(), Config{Prom: c, PromURL: prom.URL, Run: "w1", RunDir: t.TempDir(), Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]report.Cell{}
	for _, c := range r.Cells {
		byID[c.ID] = c
	}
	m, u, g := byID[merged[1]], byID[union[1]], byID[gapped[1]]
	if !m.ServerSide || !u.ServerSide || m.PrometheusGap != nil || u.PrometheusGap != nil {
		t.Fatalf("server side %t/%t, gaps %+v / %+v: both cells' traffic must come from Prometheus", m.ServerSide, u.ServerSide, m.PrometheusGap, u.PrometheusGap)
	}
	for _, f := range m.Validity.Flags {
		if f.Code == report.FlagNoServerSide || f.Code == report.FlagPrometheusGap {
			t.Errorf("the merged cell: %s: %s", f.Code, f.Reason)
		}
	}
	errs := int64(6) // i % 500 == 1: 1, 501, ..., 2501
	if m.Codes["200"] != codes["200"] || m.Codes["502"] != codes["502"] || len(m.Codes) != 2 || m.ErrorReasons["timeout"] != errs || m.Latency.Count != 3000 {
		t.Errorf("merged codes %v, errors %v, latency count %d; the workers sent %v, %d timeouts, 3000 observations", m.Codes, m.ErrorReasons, m.Latency.Count, codes, errs)
	}
	if !maps.Equal(m.Codes, u.Codes) || !maps.Equal(m.ErrorReasons, u.ErrorReasons) || m.Latency.Count != u.Latency.Count || m.Latency.Source != "native" || u.Latency.Source != "native" {
		t.Errorf("merged %v %v %d (%s), the union's %v %v %d (%s)", m.Codes, m.ErrorReasons, m.Latency.Count, m.Latency.Source, u.Codes, u.ErrorReasons, u.Latency.Count, u.Latency.Source)
	}
	for _, q := range []struct {
		name string
		m, u report.Num
	}{{"p50", m.Latency.P50, u.Latency.P50}, {"p90", m.Latency.P90, u.Latency.P90}, {"p95", m.Latency.P95, u.Latency.P95},
		{"p99", m.Latency.P99, u.Latency.P99}, {"p99.9", m.Latency.P999, u.Latency.P999}, {"max", m.Latency.Max, u.Latency.Max}} {
		if !q.m.Known() || float64(q.m) != float64(q.u) {
			t.Errorf("%s of the summed native histogram %v, of the union's %v", q.name, float64(q.m), float64(q.u))
		}
	}
	if d := math.Abs(float64(m.Latency.Mean - u.Latency.Mean)); !m.Latency.Mean.Known() || d > 1e-12 {
		t.Errorf("mean %v, the union's %v", float64(m.Latency.Mean), float64(u.Latency.Mean))
	}
	inNativeBucket(t, "summed latency", obs, []quantileEstimate{{0.5, m.Latency.P50}, {0.99, m.Latency.P99}, {0.999, m.Latency.P999}})

	if g.PrometheusGap == nil || len(g.PrometheusGap.Workers) != 1 || g.PrometheusGap.Workers[0].Worker == nil || *g.PrometheusGap.Workers[0].Worker != 1 {
		t.Fatalf("the cell whose worker 1 went away: gap %+v", g.PrometheusGap)
	}
	sev, why := "", ""
	for _, f := range g.Validity.Flags {
		if f.Code == report.FlagPrometheusGap {
			sev, why = f.Severity, f.Reason
		}
	}
	if sev != report.Invalid || !strings.Contains(why, "Prometheus scraped the loadgen worker 1 ") || len(g.Codes) != 0 {
		t.Errorf("the cell whose worker 1 went away: %s %q, codes %v: want invalid, naming the worker, no counts (no manifest)", sev, why, g.Codes)
	}
	t.Logf("merged p50 %.6f p99 %.6f; gap: %s", float64(m.Latency.P50), float64(m.Latency.P99), why)
}

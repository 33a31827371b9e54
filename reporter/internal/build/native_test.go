package build

import (
	"context"
	"math"
	"net/http/httptest"
	"sort"
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

// TestNativeHistogramScraped drives a real registry with exactly known
// observations, lets the real Prometheus scrape it every second with native
// histograms on, and checks the report's native-histogram percentiles
// against the truth within the schema's bucket error. Factor 1.1 gives
// schema 3: bucket i is (2^((i-1)/8), 2^(i/8)], 9.05 % wide, and
// histogram_quantile interpolates inside the bucket that holds the true
// quantile, so the estimate lies in that same bucket: at most 9.05 % above
// or 8.3 % below the truth (README "Reading the numbers"). Half the width
// (~4.5 %) would bound only an estimator that took the bucket's middle.
// The TLS handshake histogram is read the same way, every handshake and
// the full and the resumed ones apart (its resumed label).
func TestNativeHistogramScraped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and waits for scrapes")
	}
	t.Parallel()
	reg := prometheus.NewRegistry()
	reqs, errs := metricdefs.Requests.NewCounterVec(), metricdefs.RequestErrors.NewCounterVec()
	opts := prometheus.HistogramOpts{Buckets: prometheus.DefBuckets, NativeHistogramBucketFactor: 1.1, NativeHistogramZeroThreshold: 1e-6}
	lat, hs := metricdefs.RequestDuration.NewHistogramVec(opts), metricdefs.TLSHandshakeDuration.NewHistogramVec(opts)
	start, end := metricdefs.CellWindowStart.NewGaugeVec(), metricdefs.CellWindowEnd.NewGaugeVec()
	reg.MustRegister(reqs, errs, lat, hs, start, end)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	reqs.WithLabelValues("nginx", "fast", "simple", "h1", "200") // born before the window, at 0
	errs.WithLabelValues("nginx", "fast", "simple", "h1", "timeout")
	h := lat.WithLabelValues("nginx", "fast", "simple", "h1")
	hsFull, hsResumed := hs.WithLabelValues("nginx", "fast", "simple", "h1", "false"), hs.WithLabelValues("nginx", "fast", "simple", "h1", "true")
	prom := promtest.Start(t, promtest.Options{Targets: []string{strings.TrimPrefix(srv.URL, "http://")}, Native: true})
	time.Sleep(2500 * time.Millisecond) // a few scrapes before the window

	cl := []string{"n1", "nginx.fast.simple.quick.r1", "nginx", "fast", "simple", "quick", "", "1"}
	t0 := time.Now()
	start.WithLabelValues(cl...).Set(float64(t0.UnixMilli()) / 1000)
	var obs, full, resumed []float64
	for i := 0; i < 3000; i++ {
		v := 0.0005 * (1 + 20*math.Pow(float64(i%1000)/1000, 6)) * (1 + float64(i%7)/10)
		obs = append(obs, v)
		h.Observe(v)
		if i%10 == 0 { // a full handshake, 4 to 8 ms
			full = append(full, 0.004*(1+float64(i%100)/100))
			hsFull.Observe(full[len(full)-1])
		} else { // a resumed one, a tenth of v
			resumed = append(resumed, v/10)
			hsResumed.Observe(v / 10)
		}
		reqs.WithLabelValues("nginx", "fast", "simple", "h1", "200").Inc()
		if i%100 == 0 {
			reqs.WithLabelValues("nginx", "fast", "simple", "h1", "502").Inc() // born inside the window
			time.Sleep(100 * time.Millisecond)
		}
	}
	t1 := time.Now()
	end.WithLabelValues(cl...).Set(float64(t1.UnixMilli()) / 1000)
	time.Sleep(3500 * time.Millisecond) // quiet: the last values get scraped

	c, err := promapi.New(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Report(context.Background(), Config{Prom: c, PromURL: prom.URL, Run: "n1", RunDir: t.TempDir(), Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 1 {
		t.Fatalf("%d cells", len(r.Cells))
	}
	g := r.Cells[0]
	if g.Codes["200"] != 3000 || g.Codes["502"] != 30 || g.Latency.Count != 3000 || g.Latency.Source != "native" {
		t.Fatalf("codes %v, latency count %d source %q; want 3000 x 200, 30 x 502, native", g.Codes, g.Latency.Count, g.Latency.Source)
	}
	sort.Float64s(obs)
	sum := 0.0
	for _, v := range obs {
		sum += v
	}
	if m := float64(g.Latency.Mean); math.Abs(m-sum/3000) > 1e-12 {
		t.Errorf("mean %v, want %v", m, sum/3000)
	}
	inNativeBucket(t, "latency", obs, []quantileEstimate{{0.5, g.Latency.P50}, {0.9, g.Latency.P90}, {0.95, g.Latency.P95}, {0.99, g.Latency.P99},
		{0.999, g.Latency.P999}, {1, g.Latency.Max}})
	if hs := g.Handshake; hs == nil || hs.Count != 3000 {
		t.Fatalf("handshakes %+v, want 3000", hs)
	}
	for _, k := range []struct {
		name string
		h    *report.HandshakeLatency
		obs  []float64
	}{{"full handshakes", g.HandshakeFull, full}, {"resumed handshakes", g.HandshakeResumed, resumed}} {
		if k.h == nil || k.h.Count != int64(len(k.obs)) {
			t.Errorf("%s: %+v, want %d", k.name, k.h, len(k.obs))
			continue
		}
		inNativeBucket(t, k.name, k.obs, []quantileEstimate{{0.5, k.h.P50}, {0.99, k.h.P99}})
	}
}

// quantileEstimate is a native histogram's estimate v of quantile q.
type quantileEstimate struct {
	q float64
	v report.Num
}

// inNativeBucket checks each estimate falls in the schema-3 bucket of the true
// quantile of obs.
func inNativeBucket(t *testing.T, name string, obs []float64, qs []quantileEstimate) {
	t.Helper()
	obs = append([]float64(nil), obs...)
	sort.Float64s(obs)
	for _, q := range qs {
		truth := obs[int(math.Ceil(q.q*float64(len(obs))))-1]
		t.Logf("%s q=%v native estimate %.6f s, true %.6f s (%+.2f %%)", name, q.q, float64(q.v), truth, 100*(float64(q.v)/truth-1))
		i := math.Ceil(8 * math.Log2(truth))
		lo, hi := math.Pow(2, (i-1)/8), math.Pow(2, i/8)
		if est := float64(q.v); !q.v.Known() || est < lo*(1-1e-12) || est > hi*(1+1e-12) {
			t.Errorf("%s p%s = %v, true %v: %.2f %% off, outside the true value's schema-3 bucket [%v, %v]",
				name, strconv.FormatFloat(q.q*100, 'f', -1, 64), est, truth, 100*(est/truth-1), lo, hi)
		}
	}
}

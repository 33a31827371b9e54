package build

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/metricdefs"
	"proxybench/internal/metricsserver"
	"proxybench/internal/promapi"
	"proxybench/internal/promtest"
	"proxybench/reporter/internal/report"
)

// TestFirstWindowRightAfterFirstScrape: a loadgen process B takes the
// place of process A at the same address within one scrape interval (no
// failed scrape between them, so no staleness marker before B's first
// scrape), and B's first window begins as soon as Prometheus's first
// scrape of B was served. A left 5000 requests with code 200 and 3 with
// code 502 under the cell's labels; B had code 200 at zero at its first
// scrape, and its 502s are born inside the window. The real Prometheus
// scrapes both; the report must count B's own 3000 and 10 exactly: its
// span begins at B's first scrape (the processes told apart by
// process_start_time_seconds, a gauge of each fake process here since both
// live in this test's process), where A's series are stale. Counting from
// 1 s before the window would take A's 3 as the 502s' baseline (7, logged).
func TestFirstWindowRightAfterFirstScrape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and waits for scrapes")
	}
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	proc := func(startTime float64) (*prometheus.Registry, *prometheus.CounterVec) {
		reg := prometheus.NewRegistry()
		st := prometheus.NewGauge(prometheus.GaugeOpts{Name: "process_start_time_seconds", Help: "Start time of the process since unix epoch in seconds."})
		st.Set(startTime)
		limit := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricdefs.LoadgenCPULimit.Name, Help: metricdefs.LoadgenCPULimit.Help})
		limit.Set(1)
		reqs := metricdefs.Requests.NewCounterVec()
		reg.MustRegister(st, limit, reqs)
		return reg, reqs
	}
	regA, reqsA := proc(1000)
	reqsA.WithLabelValues("nginx", "fast", "simple", "h1", "200").Add(5000)
	reqsA.WithLabelValues("nginx", "fast", "simple", "h1", "502").Add(3)
	a := metricsserver.New(regA, log)
	a.Serve(ln)
	prom := promtest.Start(t, promtest.Options{Targets: []string{addr}, Job: "loadgen"})
	c, err := promapi.New(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if v, err := c.Query(context.Background(), `count_over_time(process_start_time_seconds{job="loadgen"}[10s])`, time.Now()); err == nil && len(v) == 1 && v[0].Value >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Prometheus did not scrape process A twice")
		}
	}
	// A's last scrape: B starts right after it, well within the interval.
	<-a.ScrapedAfter(time.Now())
	a.Stop()
	regB, reqsB := proc(2000)
	start, end := metricdefs.CellWindowStart.NewGaugeVec(), metricdefs.CellWindowEnd.NewGaugeVec()
	regB.MustRegister(start, end)
	reqsB.WithLabelValues("nginx", "fast", "simple", "h1", "200") // at zero, as the loadgen's own are before a window
	lnB, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b := metricsserver.New(regB, log)
	b.Serve(lnB)
	defer b.Stop()
	<-b.Scraped()
	cell := []string{"r1", "nginx.fast.simple.quick.r1", "nginx", "fast", "simple", "quick", "", "1"}
	began := time.Now()
	start.WithLabelValues(cell...).Set(float64(began.UnixMilli()) / 1000)
	for i := range 3000 {
		reqsB.WithLabelValues("nginx", "fast", "simple", "h1", "200").Inc()
		if i%300 == 0 {
			reqsB.WithLabelValues("nginx", "fast", "simple", "h1", "502").Inc()
			time.Sleep(200 * time.Millisecond)
		}
	}
	ended := time.Now()
	end.WithLabelValues(cell...).Set(float64(ended.UnixMilli()) / 1000)
	<-b.ScrapedAfter(ended)            // the loadgen's linger
	time.Sleep(500 * time.Millisecond) // stored

	r, err := Report(context.Background(), Config{Prom: c, PromURL: prom.URL, Run: "r1", RunDir: t.TempDir(), Thresholds: report.DefaultThresholds, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 1 {
		t.Fatalf("%d cells", len(r.Cells))
	}
	got := r.Cells[0]
	old, _ := c.Query(context.Background(), fmt.Sprintf(`increase(proxybench_requests_total{code="502"}[%dms] anchored @ %.3f)`,
		ended.Add(1500*time.Millisecond).Sub(began.Add(-time.Second)).Milliseconds(), float64(ended.Add(1500*time.Millisecond).UnixMilli())/1000), ended)
	t.Logf("codes %v; counted from 1 s before the window, the 502s would read %v", got.Codes, old)
	if got.Codes["200"] != 3000 || got.Codes["502"] != 10 || !got.ServerSide || got.PrometheusGap != nil {
		t.Errorf("codes %v (server side %t, gap %+v): want B's own 3000 and 10", got.Codes, got.ServerSide, got.PrometheusGap)
	}
}

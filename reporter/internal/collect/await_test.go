package collect

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
	"proxybench/internal/promtest"
)

// TestAwaitFinalScrape runs a real Prometheus scraping a stand-in loadgen
// every second. Asked right after a window's end, AwaitFinalScrape returns
// only once Prometheus holds a scrape that began after it, within the
// counting span's margin; with the target gone (no scrape will come) it
// gives up at that margin instead of waiting on.
func TestAwaitFinalScrape(t *testing.T) {
	if _, ok := promtest.Lookup("prometheus"); !ok {
		t.Skip("no Prometheus binary (scripts/gobin.sh prometheus builds it)")
	}
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricdefs.LoadgenCPULimit.Name, Help: "test"})
	g.Set(1)
	reg.MustRegister(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go srv.Serve(ln)
	defer srv.Close()
	prom := promtest.Start(t, promtest.Options{Targets: []string{ln.Addr().String()}, Job: "loadgen"})
	c, err := promapi.New(prom.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scraped := func(from time.Time) map[string][]time.Time {
		ts, err := rawTimes(ctx, c, loadgenScrapeSeries, metricdefs.WorkerLabel, from, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for len(scraped(time.Now().Add(-time.Minute))[""]) < 2 {
		if ctx.Err() != nil {
			t.Fatal("Prometheus never scraped the stand-in loadgen")
		}
		time.Sleep(100 * time.Millisecond)
	}
	bound := MarginAfter + awaitSlack + 300*time.Millisecond

	// Three ends at different phases of the scrape interval.
	for i := range 3 {
		time.Sleep(time.Duration(170+230*i) * time.Millisecond)
		end := time.Now()
		if err := AwaitFinalScrape(ctx, c, []Window{{End: end}}, time.Now); err != nil {
			t.Fatal(err)
		}
		took := time.Since(end)
		if !scrapedAfter(scraped(end.Add(-Quiet)), end) {
			t.Errorf("end %d: returned after %v without a scrape after the end in Prometheus", i, took)
		}
		if took > bound {
			t.Errorf("end %d: waited %v, more than the span's margin", i, took)
		}
		t.Logf("end %d: a scrape after it stored %v later", i, took.Round(time.Millisecond))
	}

	// A run ended long ago: nothing to wait for.
	begin := time.Now()
	if err := AwaitFinalScrape(ctx, c, []Window{{End: begin.Add(-time.Minute)}}, time.Now); err != nil || time.Since(begin) > 100*time.Millisecond {
		t.Errorf("an old run: %v after %v, want at once", err, time.Since(begin))
	}

	// The target gone: no scrape after the end will come.
	srv.Close()
	end := time.Now()
	if err := AwaitFinalScrape(ctx, c, []Window{{End: end}}, time.Now); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(end); took < MarginAfter || took > bound {
		t.Errorf("target gone: returned after %v, want the margin (%v)", took, MarginAfter+awaitSlack)
	}
}

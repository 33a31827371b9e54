package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"proxybench/internal/promtest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/manifest"
	"proxybench/internal/metricsserver"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/plan"
)

// prometheusBin is the pinned Prometheus built by scripts/gobin.sh; the test
// skips without it rather than building it (minutes).
func prometheusBin(t *testing.T) string {
	t.Helper()
	p, ok := promtest.Lookup("prometheus")
	if !ok {
		t.Skip("no Prometheus binary (scripts/gobin.sh prometheus builds it)")
	}
	return p
}

// TestTimingGuaranteeWithPrometheus checks the contract of design-notes
// against a real Prometheus scraping the loadgen every second: for every
// cell the counter difference between (start - 1 s) and (end + 1.5 s)
// equals the manifest's exact request count, warm-up excluded, and the cell
// window series in Prometheus are the manifest's window.
func TestTimingGuaranteeWithPrometheus(t *testing.T) {
	t.Parallel()
	prometheusBin(t) // skips without the pinned binary
	dir := t.TempDir()
	loadgenLn := listenLocal(t)
	loadgenAddr := loadgenLn.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prom := promtest.Start(t, promtest.Options{Targets: []string{loadgenAddr}, Job: "loadgen"})
	promAddr := strings.TrimPrefix(prom.URL, "http://")

	reg := prometheus.NewRegistry()
	ms := metricsserver.New(reg, testLog(t))
	ms.Serve(loadgenLn)
	defer ms.Stop()
	// Prometheus applies new targets up to 5 s after start: wait for the
	// first scrape, as a stack that is up long before a run would have had.
	for query(t, ctx, promAddr, `count(up{job="loadgen"} == 1) or vector(0)`, time.Now()) != 1 {
		if ctx.Err() != nil {
			t.Fatal("Prometheus never scraped the loadgen")
		}
		time.Sleep(200 * time.Millisecond)
	}

	p, err := plan.Load(args(t, dir, "-tier", "2s", "-proxies", "nginx", "-origins", "fast,go", "-linger", "3s"), time.Now(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := p.Expand()
	for i := range x.Cells {
		x.Cells[i].Warmup = plan.Duration(time.Second) // as a >= 30 s cell would have
	}
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil)}
	r := &Runner{Plan: x, Attacker: attack.New(attack.NewMetrics(reg)), Cells: cellmetrics.New(reg), Target: targets(srv),
		Clock: RealClock{}, Log: testLog(t)}
	out, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The loadgen left right after its first scrape past the last drain:
	// the staleness marker of its exit may lie inside the last span, which
	// is read, as the reporter reads it, through range selections (they skip
	// the marker). Asked once the spans are over.
	last := out.Manifest.Cells[len(out.Manifest.Cells)-1]
	time.Sleep(time.Until(last.End.Add(2 * time.Second)))
	for _, c := range out.Manifest.Cells {
		if c.Status != manifest.CellOK {
			t.Fatalf("%s %s", c.ID, c.Status)
		}
		// Every completion is counted, the late ones (after the planned
		// end, drained) apart as well: in-window = all - late.
		count := func(metric string) int64 {
			sel := fmt.Sprintf(`%s{job="loadgen",proxy=%q,origin=%q,scenario=%q}`, metric, c.Proxy, c.Origin, c.Scenario)
			before := query(t, ctx, promAddr, "sum("+sel+") or vector(0)", c.Start.Add(-time.Second))
			after := query(t, ctx, promAddr, "sum(last_over_time("+sel+"[2500ms])) or vector(0)", c.End.Add(1500*time.Millisecond))
			return int64(after - before)
		}
		all, late := count("proxybench_requests_total"), count("proxybench_requests_late_total")
		var lateResponses int64
		for _, n := range c.LateCodes {
			lateResponses += n
		}
		if all-late != c.Requests || late != lateResponses {
			t.Errorf("%s: Prometheus counts %d requests in (start-1s, end+1.5s], %d of them late; manifest %d in the window and %d late", c.ID, all, late, c.Requests, lateResponses)
		}
		win := fmt.Sprintf(`{job="loadgen",cell=%q}`, c.ID)
		s := query(t, ctx, promAddr, "last_over_time(proxybench_cell_window_start_timestamp_seconds"+win+"[2500ms])", c.End.Add(1500*time.Millisecond))
		e := query(t, ctx, promAddr, "last_over_time(proxybench_cell_window_end_timestamp_seconds"+win+"[2500ms])", c.End.Add(1500*time.Millisecond))
		if math.Abs(s-seconds(c.Start)) > 1e-6 || math.Abs(e-seconds(c.End)) > 1e-6 {
			t.Errorf("%s: window in Prometheus %f..%f, manifest %f..%f", c.ID, s, e, seconds(c.Start), seconds(c.End))
		}
		t.Logf("%s: manifest %d requests, Prometheus %d (%d late), window %s", c.ID, c.Requests, all, late, c.End.Sub(c.Start))
	}
}

func seconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

// query runs an instant query at ts and returns its single value.
func query(t *testing.T, ctx context.Context, addr, q string, ts time.Time) float64 {
	t.Helper()
	u := fmt.Sprintf("http://%s/api/v1/query?query=%s&time=%s", addr, url.QueryEscape(q), strconv.FormatFloat(seconds(ts), 'f', 3, 64))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct{ Value [2]any }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" || len(body.Data.Result) != 1 {
		t.Fatalf("query %s at %s: %v %s %+v", q, ts, err, body.Error, body.Data.Result)
	}
	v, _ := strconv.ParseFloat(body.Data.Result[0].Value[1].(string), 64)
	return v
}

package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/fleet"
	"proxybench/loadgen/internal/fleet/fleettest"
	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire/wiretest"
)

func TestMain(m *testing.M) { fleettest.Main(m) }

func coordinator(t *testing.T, n int) *fleet.Coordinator {
	t.Helper()
	c := &fleet.Coordinator{Workers: n, Launcher: fleettest.Launcher(t)}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The V2 encoding a worker sends its histogram in is lossless: every
// bucket's count comes back, through JSON too.
func TestHistogramTravelsExactly(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 9))
	for _, n := range []int{0, 1, 17, 5000, 200000} {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for range n {
			h.RecordValue(min(60_000_000, int64(1+rng.ExpFloat64()*3000*float64(1+rng.IntN(3)*rng.IntN(1000))))) //nolint:errcheck // in range
		}
		h.RecordValue(60_000_000) //nolint:errcheck // the top of the range
		w, err := fleet.ResultOf(&attack.Result{Requests: int64(n), Codes: map[int]int64{200: int64(n)}, Hist: h})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var back fleet.Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, err := back.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if !got.Hist.Equals(h) || got.Requests != int64(n) || got.Codes[200] != int64(n) {
			t.Fatalf("%d samples: the histogram or the counts changed on the way (%d of %d)", n, got.Hist.TotalCount(), h.TotalCount())
		}
		for _, q := range []float64{50, 99, 99.9, 100} {
			if got.Hist.ValueAtQuantile(q) != h.ValueAtQuantile(q) {
				t.Fatalf("%d samples: p%v %d, sent %d", n, q, got.Hist.ValueAtQuantile(q), h.ValueAtQuantile(q))
			}
		}
	}
}

// Three worker processes as one instrument against one server: the merged
// count is exactly the sum of the workers' and exactly what the server
// received; the merged histogram is the union of theirs; each took its
// segment, its clock offset was measured and it started at the barrier.
func TestThreeWorkersAreOneInstrument(t *testing.T) {
	t.Parallel()
	srv := wiretest.NewCounted(t, wiretest.Hello)
	c := coordinator(t, 3)
	for _, tc := range []struct {
		name  string
		m     load.Model
		conns []int
	}{
		{"closed", load.Closed{Connections: 8, Duration: 700 * time.Millisecond}, []int{3, 3, 2}},
		{"open", load.Open{Rate: 900, MaxInFlight: 30, Duration: 700 * time.Millisecond}, []int{10, 10, 10}},
	} {
		before := srv.Handled.Load()
		var edges []time.Time
		res, err := c.Run(t.Context(), attack.Spec{URL: srv.URL + "/", Load: tc.m, Timeout: 2 * time.Second,
			OnEdge: func(_ bool, at time.Time) { edges = append(edges, at) }}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(res.Workers) != 3 {
			t.Fatalf("%s: %d workers in the result", tc.name, len(res.Workers))
		}
		var reqs, late, inHist, scheduled int64
		union := hdrhistogram.New(1, 60_000_000, 3)
		for i, w := range res.Workers {
			r := w.Result
			if w.Index != i || w.Err != "" || r == nil || r.Requests == 0 {
				t.Fatalf("%s: worker %d: %+v", tc.name, i, w)
			}
			if w.Concurrency != tc.conns[i] || (tc.name == "open" && w.Rate != 300) {
				t.Errorf("%s: worker %d got %d connections at %v/s, want %d", tc.name, i, w.Concurrency, w.Rate, tc.conns[i])
			}
			if w.OffsetBound <= 0 || w.OffsetBound > 50*time.Millisecond || w.Offset.Abs() > w.OffsetBound+10*time.Millisecond {
				t.Errorf("%s: worker %d offset %v ± %v: one host's clocks agree within the round trip", tc.name, i, w.Offset, w.OffsetBound)
			}
			if w.Skew < 0 || w.Skew > 100*time.Millisecond {
				t.Errorf("%s: worker %d began %v after the barrier", tc.name, i, w.Skew)
			}
			if w.Loadgen == nil || w.CPU == nil || w.CPU.Worker == nil || *w.CPU.Worker != i || w.Pid <= 0 || w.Pid == os.Getpid() {
				t.Errorf("%s: worker %d: CPU %+v %+v, pid %d", tc.name, i, w.Loadgen, w.CPU, w.Pid)
			}
			reqs += r.Requests + r.Errors
			late += r.Late
			scheduled += r.Scheduled
			inHist += r.Hist.TotalCount()
			union.Merge(r.Hist)
		}
		if res.Requests+res.Errors != reqs || res.Late != late || res.Hist.TotalCount() != inHist || !res.Hist.Equals(union) {
			t.Errorf("%s: merged %d requests, %d late, %d in its histogram; the workers' %d, %d, %d", tc.name,
				res.Requests+res.Errors, res.Late, res.Hist.TotalCount(), reqs, late, inHist)
		}
		if got := srv.Handled.Load() - before; res.Requests+res.Late != got || res.Errors != 0 {
			t.Errorf("%s: the server handled %d requests, the instrument counts %d (+%d late, %d errors)", tc.name, got, res.Requests, res.Late, res.Errors)
		}
		if tc.name == "open" {
			want := load.CountDue(tc.m.Pacer(), 0, tc.m.Window())
			if scheduled != want || res.Scheduled != want || res.Sent+res.Missed != want {
				t.Errorf("open: %d scheduled (merged %d, sent %d + missed %d), the schedule has %d", scheduled, res.Scheduled, res.Sent, res.Missed, want)
			}
		}
		if len(edges) != 2 || edges[1].Sub(edges[0]) != tc.m.Window() {
			t.Errorf("%s: edges %v", tc.name, edges)
		}
	}
	// A load of fewer connections than workers goes to as many workers as
	// it has connections, one each.
	res, err := c.Run(t.Context(), attack.Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 2, Duration: 200 * time.Millisecond}, Timeout: time.Second}, nil)
	if err != nil || len(res.Workers) != 2 || res.Workers[0].Concurrency != 1 || res.Workers[1].Concurrency != 1 || res.Workers[1].Result.Requests == 0 {
		t.Errorf("2 connections over 3 workers: %v, %+v", err, res)
	}
	// The workers publish their traffic with their index as a label.
	resp, err := http.Get("http://" + c.Handles()[2].Addr + fleet.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `proxybench_requests_total{code="200",origin="",protocol="h1",proxy="",scenario="",worker="2"}`) {
		t.Errorf("worker 2's metrics have no traffic series labelled worker=\"2\":\n%.2000s", b)
	}
}

// A worker killed mid-cell fails the cell naming it and what happened; the
// other workers' data are kept; the next attack starts it again.
func TestKilledWorkerFailsTheCellKeepsTheOthers(t *testing.T) {
	t.Parallel()
	srv := wiretest.NewCounted(t, wiretest.Hello)
	c := coordinator(t, 3)
	victim := c.Handles()[1]
	go func() {
		time.Sleep(fleet.DefaultLead + 400*time.Millisecond)
		syscall.Kill(victim.Pid, syscall.SIGKILL) //nolint:errcheck // our own child, by its pid
	}()
	res, err := c.Run(t.Context(), attack.Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 6, Duration: 1500 * time.Millisecond}, Timeout: time.Second}, nil)
	if err == nil || !strings.Contains(err.Error(), "loadgen worker 1 (pid ") || !strings.Contains(err.Error(), "died mid-cell (signal: killed)") ||
		!strings.Contains(err.Error(), "the data of 2 of the 3 workers are kept") {
		t.Fatalf("err %v", err)
	}
	if res == nil || len(res.Workers) != 3 {
		t.Fatalf("result %+v", res)
	}
	if w := res.Workers[1]; w.Err == "" || w.Result != nil {
		t.Errorf("the killed worker: %+v", w)
	}
	var sum int64
	for _, i := range []int{0, 2} {
		w := res.Workers[i]
		if w.Err != "" || w.Result == nil || w.Result.Requests == 0 {
			t.Fatalf("worker %d: %+v", i, w)
		}
		sum += w.Result.Requests
	}
	if res.Requests != sum || res.Hist.TotalCount() == 0 {
		t.Errorf("merged %d requests, workers 0 and 2 %d", res.Requests, sum)
	}
	res, err = c.Run(t.Context(), attack.Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 3, Duration: 200 * time.Millisecond}, Timeout: time.Second}, nil)
	if err != nil || res.Workers[1].Result == nil || res.Workers[1].Pid == victim.Pid {
		t.Fatalf("after the kill: %v, worker 1 %+v", err, res.Workers[1])
	}
}

// Ctrl-C ends every worker's window at once and keeps what each measured.
func TestCancelKeepsEveryWorkersPart(t *testing.T) {
	t.Parallel()
	srv := wiretest.NewCounted(t, wiretest.Hello)
	c := coordinator(t, 2)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(fleet.DefaultLead+300*time.Millisecond, cancel)
	began := time.Now()
	res, err := c.Run(ctx, attack.Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 2, Duration: 5 * time.Second}, Timeout: time.Second}, nil)
	if err != context.Canceled || time.Since(began) > 2*time.Second {
		t.Fatalf("%v after %v", err, time.Since(began))
	}
	for _, w := range res.Workers {
		if w.Err != "" || w.Result == nil || w.Result.Requests == 0 || w.Result.End.Sub(w.Result.Start) > time.Second {
			t.Errorf("worker %d: %+v", w.Index, w)
		}
	}
}

// A cell cancelled before it reached the worker (Ctrl-C while the
// coordinator was sending it) ends at once when it arrives.
func TestCancelBeforeTheCell(t *testing.T) {
	t.Parallel()
	srv := wiretest.NewCounted(t, wiretest.Hello)
	w, _ := fleet.NewWorker(0, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	w.Routes(mux)
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	if resp, err := http.Post(api.URL+fleet.PathCancel+"?id=c1", "", nil); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	spec, err := fleet.SpecOf(attack.Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 1, Duration: 5 * time.Second}}, "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(fleet.CellRequest{ID: "c1", Barrier: time.Now(), Spec: spec})
	began := time.Now()
	resp, err := http.Post(api.URL+fleet.PathCell, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if time.Since(began) > 2*time.Second || !strings.Contains(string(b), `"end":`) || !strings.Contains(string(b), "context canceled") {
		t.Errorf("after %v: %s", time.Since(began), b)
	}
}

// scraper stands in for Prometheus's file_sd: every 100 ms it reads the
// targets file and scrapes every target listed, remembering when it first
// scraped each.
func scraper(t *testing.T, file string) func() map[string]time.Time {
	t.Helper()
	var mu sync.Mutex
	first := map[string]time.Time{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			b, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			var groups []struct{ Targets []string }
			if err := json.Unmarshal(b, &groups); err != nil {
				t.Errorf("targets file %s: %v", b, err)
				return
			}
			for _, g := range groups {
				for _, addr := range g.Targets {
					began := time.Now()
					resp, err := http.Get("http://" + addr + fleet.PathMetrics)
					if err != nil {
						continue
					}
					io.Copy(io.Discard, resp.Body) //nolint:errcheck // a scrape
					resp.Body.Close()
					mu.Lock()
					if _, ok := first[addr]; !ok {
						first[addr] = began
					}
					mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() map[string]time.Time {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(first)
	}
}

// The coordinator lists its workers in the targets file while they run and
// waits for their first scrape (then the counting baseline's margin)
// before the first window, and, when asked, for a scrape past a time; a
// Prometheus that never comes is waited for only so long, and the file is
// removed by Close.
func TestPrometheusFindsTheWorkers(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "targets", "loadgen-workers.json")
	scraped := scraper(t, file)
	c := &fleet.Coordinator{Workers: 2, Launcher: fleettest.Launcher(t), Targets: file, ScrapeWait: 10 * time.Second}
	t.Cleanup(c.Close)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first := scraped()
	for i, h := range c.Handles() {
		if !strings.Contains(string(b), `"`+h.Addr+`"`) {
			t.Errorf("worker %d at %s is not in the targets %s", i, h.Addr, b)
		}
		if f, ok := first[h.Addr]; !ok || started.Sub(f) < manifest.AfterFirstScrape {
			t.Errorf("worker %d: Start returned %v after its first scrape (scraped: %t), want at least %v", i, started.Sub(f), ok, manifest.AfterFirstScrape)
		}
	}
	select {
	case <-c.ScrapedAfter(time.Now().Add(300 * time.Millisecond)):
		if d := time.Since(started); d < 300*time.Millisecond {
			t.Errorf("scraped after a time 300 ms ahead in %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Error("the workers' scrapes past a time were not seen")
	}
	c.Close()
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the targets file after Close: %v", err)
	}

	// Nobody reads the targets: Start waits ScrapeWait, no more, and
	// nothing waits for the scrapes that never came.
	lone := &fleet.Coordinator{Workers: 1, Launcher: fleettest.Launcher(t), Targets: filepath.Join(t.TempDir(), "unread.json"), ScrapeWait: 300 * time.Millisecond}
	t.Cleanup(lone.Close)
	began := time.Now()
	if err := lone.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("Start with an unread targets file took %v, want ScrapeWait (300ms) and the worker's start", d)
	}
	select {
	case <-lone.ScrapedAfter(time.Now()):
	case <-time.After(time.Second):
		t.Error("a worker Prometheus never scraped is waited for")
	}
}

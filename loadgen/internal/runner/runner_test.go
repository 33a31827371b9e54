package runner

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/cellmetrics"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

// TestRunManifestAfterEachCell runs 2 proxies x 1 origin of 1 s cells
// against real HTTP servers: the manifest is readable mid-run with every
// finished cell, /metrics carries the cell windows, the settles are asked
// for, and history indexes the run.
func TestRunManifestAfterEachCell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil), "caddy": fakeProxy(t, nil)}
	a := args(t, dir, "-tier", "1s", "-proxies", "nginx,caddy", "-origins", "fast")
	ln := listenLocal(t)
	metricsAddr := ln.Addr().String()
	clock := &sleeper{}
	var midRun []string
	h := &hooks{start: func(n int, c plan.Cell) {
		m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
		if err != nil {
			t.Errorf("cell %d: manifest unreadable mid-run: %v", n, err)
			return
		}
		if m.Status != "running" || len(m.Cells) != n-1 {
			t.Errorf("cell %d: manifest status %s with %d cells, want running with %d", n, m.Status, len(m.Cells), n-1)
		}
		if n == 2 {
			resp, err := http.Get("http://" + metricsAddr + "/metrics")
			if err != nil {
				t.Errorf("scrape mid-run: %v", err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			midRun = strings.Split(string(b), "\n")
		}
	}}
	var stdout strings.Builder
	code := run(context.Background(), a, &stdout, io.Discard, testLog(t),
		env{target: targets(srv), docker: noDocker, clock: clock, metrics: ln, display: func(d progress.Display) progress.Display { h.Display = d; return h }})
	if code != ExitOK {
		t.Fatalf("exit %d, stdout %s", code, stdout.String())
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != "done" || len(m.Cells) != 2 || m.Host.CPUs == 0 || m.Host.Kernel == "" || len(m.Plan) == 0 {
		t.Fatalf("manifest %+v", m)
	}
	for i, c := range m.Cells {
		if want := []string{"nginx.fast.simple.1s.r1", "caddy.fast.simple.1s.r1"}[i]; c.ID != want || c.Status != manifest.CellOK {
			t.Errorf("cell %d: %s %s (%s), want %s ok", i, c.ID, c.Status, c.Reason, want)
		}
		w := c.End.Sub(c.Start)
		if c.Requests < 100 || c.Codes["200"] != c.Requests || c.Errors != 0 || c.Latency.Count != c.Requests+c.Late ||
			c.Latency.P99 <= 0 || w < 900*time.Millisecond || w > 2*time.Second || c.WarmupStart != nil {
			t.Errorf("cell %s: %d req, codes %v, %d errors, latency %+v, window %s", c.ID, c.Requests, c.Codes, c.Errors, c.Latency, w)
		}
	}
	// Between the two cells (other label sets) the quiet of a counting
	// span's margin, then the wait for a scrape past the first cell's end,
	// which nothing makes here: it ends at the settle (1.5 s more); short
	// cells: no cooldown; linger 0.
	if got := clock.got(); !slices.Equal(got, []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}) {
		t.Errorf("sleeps %v, want [1.5s 1.5s]", got)
	}
	for _, want := range []string{
		`proxybench_cell_window_end_timestamp_seconds{arm="",cell="nginx.fast.simple.1s.r1",origin="fast",proxy="nginx",repeat="1",run="t1",scenario="simple",tier="1s"}`,
		`proxybench_cell_window_start_timestamp_seconds{arm="",cell="caddy.fast.simple.1s.r1"`,
		`proxybench_cell_concurrency{arm="",cell="caddy.fast.simple.1s.r1",origin="fast",proxy="caddy",repeat="1",run="t1",scenario="simple",tier="1s"} 4`,
		`proxybench_requests_total{code="200",origin="fast",protocol="h1",proxy="nginx",scenario="simple"}`,
		`process_cpu_seconds_total`, `go_goroutines`,
	} {
		if !slices.ContainsFunc(midRun, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("mid-run /metrics lacks %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "t1", "plan.json")); err != nil {
		t.Error(err)
	}
	if m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json")); err != nil || m.Status != "done" || len(m.Cells) != 2 {
		t.Errorf("final manifest %+v %v", m, err)
	}
	if !strings.Contains(stdout.String(), "run t1 done: 2 ok, 0 failed, 0 aborted, 0 skipped") {
		t.Errorf("stdout %q", stdout.String())
	}
}

// TestInterrupt cancels the context 1 s into the second of three 2 s cells:
// the first stays ok, the second is aborted with its partial data, the third
// is listed as not run, the manifest says interrupted and the exit is 130.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &hooks{start: func(n int, _ plan.Cell) {
		if n == 2 {
			time.AfterFunc(time.Second, cancel)
		}
	}}
	code := run(ctx, args(t, dir, "-tier", "2s", "-proxies", "nginx", "-origins", "fast,go,node"), io.Discard, io.Discard, testLog(t),
		env{target: targets(srv), docker: noDocker, clock: &sleeper{}, display: func(d progress.Display) progress.Display { h.Display = d; return h }})
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d", code, ExitInterrupted)
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != "interrupted" || len(m.Cells) != 3 {
		t.Fatalf("status %s, %d cells", m.Status, len(m.Cells))
	}
	ok, ab, skip := m.Cells[0], m.Cells[1], m.Cells[2]
	if ok.Status != manifest.CellOK || ok.Requests == 0 {
		t.Errorf("first cell %s %d req", ok.Status, ok.Requests)
	}
	if ab.Status != manifest.CellAborted || ab.Requests == 0 || !strings.Contains(ab.Reason, "interrupted after") ||
		ab.End.Sub(ab.Start) > 1500*time.Millisecond || ab.Latency.P99 <= 0 {
		t.Errorf("aborted cell %s (%s) %d req, window %s", ab.Status, ab.Reason, ab.Requests, ab.End.Sub(ab.Start))
	}
	if skip.Status != manifest.CellSkipped || !strings.Contains(skip.Reason, "interrupted") {
		t.Errorf("third cell %s (%s)", skip.Status, skip.Reason)
	}
}

// TestProxyDiesMidCell closes nginx's server 1 s into its first 2 s cell:
// that cell fails with the reason, nginx's next cell is skipped, caddy's
// cells still run, the exit is 3.
func TestProxyDiesMidCell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	nginx := fakeProxy(t, nil)
	srv := map[string]*httptest.Server{"nginx": nginx, "caddy": fakeProxy(t, nil)}
	h := &hooks{start: func(n int, _ plan.Cell) {
		if n == 1 {
			time.AfterFunc(time.Second, func() { nginx.CloseClientConnections(); nginx.Close() })
		}
	}}
	code := run(context.Background(), args(t, dir, "-tier", "2s", "-proxies", "nginx,caddy", "-origins", "fast,go"), io.Discard, io.Discard, testLog(t),
		env{target: targets(srv), docker: noDocker, clock: &sleeper{}, display: func(d progress.Display) progress.Display { h.Display = d; return h }})
	if code != ExitCellsBroken {
		t.Errorf("exit %d, want %d", code, ExitCellsBroken)
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ status, reason string }{
		{manifest.CellFailed, "proxy nginx stopped answering (refused) during the cell"},
		{manifest.CellSkipped, "not run: proxy nginx stopped answering (refused) during cell nginx.fast.simple.2s.r1"},
		{manifest.CellOK, ""}, {manifest.CellOK, ""},
	}
	if m.Status != "done" || len(m.Cells) != len(want) {
		t.Fatalf("status %s, %d cells", m.Status, len(m.Cells))
	}
	for i, w := range want {
		c := m.Cells[i]
		if c.Status != w.status || c.Reason != w.reason {
			t.Errorf("%s: %s %q, want %s %q", c.ID, c.Status, c.Reason, w.status, w.reason)
		}
	}
	if f := m.Cells[0]; f.Requests == 0 || f.Errors == 0 {
		t.Errorf("failed cell keeps its data: %d req, %d errors %v", f.Requests, f.Errors, f.ErrorReasons)
	}
}

// TestPreflightSkipsBrokenRoute: caddy sends /go/ to the wrong origin; its
// go cells are skipped with the preflight's reason, fast cells run.
func TestPreflightSkipsBrokenRoute(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caddy := fakeProxy(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/go/") {
			w.Header().Set("X-Origin", "node")
			io.WriteString(w, "proxybench origin ok\n")
			return
		}
		origin(w, r)
	})
	code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "caddy", "-origins", "go,fast", "-scenarios", "simple,ratelimit"),
		io.Discard, io.Discard, testLog(t), env{target: targets(map[string]*httptest.Server{"caddy": caddy}), docker: noDocker, clock: &sleeper{}})
	if code != ExitCellsBroken {
		t.Errorf("exit %d", code)
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range m.Cells {
		got[c.ID] = c.Status + ": " + c.Reason
		if c.Skip != nil {
			got[c.ID] += " (" + string(c.Skip.Kind) + ")"
		}
	}
	// A scenario caddy cannot do natively is n/a, not broken, and never
	// sent: only the broken route makes the exit code ExitCellsBroken.
	caddyNoRateLimit := mustScenario(t, "ratelimit").Skip("caddy").Text() + " (not_applicable)"
	want := map[string]string{
		"caddy.go.simple.1s.r1":      `skipped: preflight: caddy -> go: X-Origin "node", want "go": the proxy routes /go/ to the wrong origin (preflight)`,
		"caddy.go.ratelimit.1s.r1":   "skipped: " + caddyNoRateLimit,
		"caddy.fast.simple.1s.r1":    "ok: ",
		"caddy.fast.ratelimit.1s.r1": "skipped: " + caddyNoRateLimit,
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
}

// TestQuietRules drives the runner with short cells but a plan marked long
// (as a 60 s tier would be) and a warm-up on the cells, with a recording
// sleeper: settle between cells, the cooldown before the second proxy,
// nothing before the first cell, and warm-up kept out of the window.
func TestQuietRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := plan.Load(args(t, dir, "-tier", "1s", "-proxies", "nginx,haproxy", "-origins", "fast,go", "-settle", "3s", "-cooldown", "10s", "-linger", "5s"),
		time.Now(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	x.LongRun = true
	for i := range x.Cells {
		x.Cells[i].Warmup = plan.Duration(300 * time.Millisecond)
	}
	clock := &sleeper{}
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil), "haproxy": fakeProxy(t, nil)}
	r := &Runner{Plan: x, Attacker: attack.New(attack.NewMetrics(prometheus.NewRegistry())), Cells: cellmetrics.New(prometheus.NewRegistry()),
		Target: targets(srv), Clock: clock, Log: testLog(t)}
	out, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := time.Second
	// Each cell: warm-up, quiet gap (settle), window. Between cells of other
	// label sets 1.5 s, before the second proxy the cooldown, at the end
	// the linger.
	want := []time.Duration{3 * s, 1500 * time.Millisecond, 3 * s, 10 * s, 3 * s, 1500 * time.Millisecond, 3 * s, 5 * s}
	if got := clock.got(); !slices.Equal(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
	for _, c := range out.Manifest.Cells {
		// The sleeper does not sleep, so the window starts right after the
		// 300 ms warm-up attack.
		if c.WarmupStart == nil || c.Start.Sub(*c.WarmupStart) < 300*time.Millisecond || c.WarmupS != 0.3 || c.Status != manifest.CellOK ||
			c.End.Sub(c.Start) < 900*time.Millisecond {
			t.Errorf("%s: warm-up start %v, window %v .. %v, status %s", c.ID, c.WarmupStart, c.Start, c.End, c.Status)
		}
	}
}

// TestFirstTrafficWaitsForSeen: the run prepares its first proxy (its
// preflight request here) while it waits for Prometheus's first scrape
// (Seen), and the first window starts only after it. Seen is released by
// the preflight's request, or after 5 s if the run waited for Seen before
// preparing.
func TestFirstTrafficWaitsForSeen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := plan.Load(args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast"), time.Now(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	var once sync.Once
	var seenAt time.Time
	byRequest := false
	release := func(req bool) {
		once.Do(func() { seenAt, byRequest = time.Now(), req; close(seen) })
	}
	timer := time.AfterFunc(5*time.Second, func() { release(false) })
	defer timer.Stop()
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, func(w http.ResponseWriter, r *http.Request) {
		release(true)
		origin(w, r)
	})}
	r := &Runner{Plan: x, Attacker: attack.New(attack.NewMetrics(prometheus.NewRegistry())), Cells: cellmetrics.New(prometheus.NewRegistry()),
		Target: targets(srv), Clock: &sleeper{}, Log: testLog(t), Seen: seen}
	out, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	<-seen
	if !byRequest {
		t.Error("Seen was released by its 5 s timer: the run waited for it before preparing the proxy")
	}
	if c := out.Manifest.Cells[0]; c.Status != manifest.CellOK || c.Start.Before(seenAt) {
		t.Errorf("%s: %s, window from %v, Seen at %v: the first window must start after Seen", c.ID, c.Status, c.Start, seenAt)
	}
}

func TestMainUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "taken"), 0o755)
	os.WriteFile(filepath.Join(dir, "taken", "manifest.json"), []byte("{}"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("tier: quick\nproxies: [nginx]\nrepeat: 3\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown yaml field", []string{"-plan", bad}, ExitUsage, bad + ": line 3: field repeat not found"},
		{"bad tier", []string{"-tier", "quik"}, ExitUsage, `"quik" is neither a tier`},
		{"bad proxy", []string{"-proxies", "nginx,envoy"}, ExitUsage, `unknown proxy "envoy"`},
		{"run exists", []string{"-run", "taken", "-results", dir}, ExitUsage, `run "taken" already exists`},
		{"help", []string{"-h"}, ExitOK, "-metrics-addr address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var errOut strings.Builder
			if code := Main(context.Background(), tc.args, io.Discard, &errOut, testLog(t)); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.want)
			}
		})
	}
}

// TestModes: each load model of the plan reaches the engine as a valid spec
// and its cell records the load it was given.
func TestModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		check func(c manifest.Cell) bool
	}{
		{"closed", []string{"-concurrency", "3"}, func(c manifest.Cell) bool { return c.Mode == "closed" && c.Concurrency == 3 && c.Scheduled == 0 }},
		{"open", []string{"-rate", "200"}, func(c manifest.Cell) bool {
			return c.Mode == "open" && c.Rate == 200 && c.Scheduled >= 150 && c.Scheduled <= 250 && c.Sent+c.Missed == c.Scheduled
		}},
		{"rate stages", []string{"-stages", "500ms:100,500ms:300"}, func(c manifest.Cell) bool {
			// The schedule's average: (0+100)/2 over 0.5 s, (100+300)/2 over 0.5 s.
			return c.Mode == "stages" && c.Tier == "stages" && c.Rate == 125 && c.DurationS == 1 && c.Scheduled > 50
		}},
		{"concurrency stages", []string{"-stages", "1s:3", "-stage-kind", "concurrency"}, func(c manifest.Cell) bool {
			return c.Mode == "stages" && c.Concurrency == 3 && c.Rate == 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			srv := map[string]*httptest.Server{"haproxy": fakeProxy(t, nil)}
			code := run(context.Background(), args(t, dir, append([]string{"-tier", "1s", "-proxies", "haproxy", "-origins", "node"}, tc.flags...)...),
				io.Discard, io.Discard, testLog(t), env{target: targets(srv), docker: noDocker, clock: &sleeper{}})
			m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
			if err != nil {
				t.Fatalf("exit %d: %v", code, err)
			}
			c := m.Cells[0]
			if code != ExitOK || c.Status != manifest.CellOK || c.Requests == 0 || !tc.check(c) {
				t.Errorf("exit %d, cell %s %q: mode %s conc %d rate %g sched %d sent %d req %d dur %g", code, c.Status, c.Reason,
					c.Mode, c.Concurrency, c.Rate, c.Scheduled, c.Sent, c.Requests, c.DurationS)
			}
		})
	}
}

// Rounds: the proxies alternate repeat by repeat, a proxy's routes are
// checked once for the whole run, and the A/A control's copies end each
// round; a proxy broken in round 1 stays skipped in round 2.
func TestRoundsAndControl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	probes := map[string]int{}
	counting := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("User-Agent") != "proxybench-loadgen" { // the attack's; the preflight's is Go's
				mu.Lock()
				probes[name]++
				mu.Unlock()
			}
			origin(w, r)
		}
	}
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, counting("nginx")), "caddy": fakeProxy(t, counting("caddy"))}
	a := args(t, dir, "-tier", "1s", "-proxies", "nginx,caddy,haproxy", "-origins", "fast", "-repeats", "2", "-concurrency", "1")
	code := run(context.Background(), a, io.Discard, io.Discard, testLog(t), env{target: targets(srv), docker: noDocker, clock: &sleeper{}, metrics: listenLocal(t)})
	if code == ExitOK {
		t.Fatal("a run with a broken proxy (haproxy has no server) exited 0")
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range m.Cells {
		got = append(got, c.ID+" "+c.Status)
	}
	want := []string{
		"nginx.fast.simple.1s.r1 ok", "nginx.fast.simple.1s.aa.r1 ok", "caddy.fast.simple.1s.r1 ok", "haproxy.fast.simple.1s.r1 skipped",
		"nginx.fast.simple.1s.aa.r2 ok", "nginx.fast.simple.1s.r2 ok", "caddy.fast.simple.1s.r2 ok", "haproxy.fast.simple.1s.r2 skipped",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cells\n got %v\nwant %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if probes["nginx"] == 0 || probes["caddy"] == 0 {
		t.Fatalf("no preflight seen: %v", probes)
	}
	once := map[string]int{"nginx": probes["nginx"], "caddy": probes["caddy"]}
	// Every preflight of a proxy asks its routes once (no retries here): a
	// second round would double them.
	if once["nginx"] != 1 || once["caddy"] != 1 {
		t.Errorf("preflight requests per proxy %v: routes checked more than once per run", once)
	}
}

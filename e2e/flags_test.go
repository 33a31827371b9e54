//go:build e2e

package e2e

import (
	"context"
	"math"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The flag tests make every validity flag fire on the real stack with a
// real fault (a CPU quota on the loadgen, a proxy answering the wrong
// status, an origin frozen mid-window, a dead proxy, a stopped exporter),
// each beside a control cell in which the same flag stays quiet. The numbers
// they check are compared with a reading the reporter never sees: the test
// proxy's own access log, a cgroup counter sampled by the test.

// TestFlagLoadgenBound holds the loadgen to a tenth of a core: the same
// cell that is clean without the quota must be judged loadgen_bound from
// the CPU the loadgen could really get (its cgroup quota, not GOMAXPROCS).
func TestFlagLoadgenBound(t *testing.T) {
	results := t.TempDir()
	id := "nginx.fast.simple.5s.r1"
	// The unthrottled control: the quick bench's nginx → fast cell (the
	// same 20 connections) when make test-e2e ran it, else one of our own.
	free := quickBenchOr(t, func() flagCell {
		return cell(t, runCells(t, results, "lgfree", nil, "-tier", "5s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "20", "-isolate=false"), id)
	})
	starved := cell(t, runCells(t, results, "lgquota", cpuQuota(t, 0.1), "-tier", "5s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "20", "-isolate=false"), id)
	mustFire(t, starved, "loadgen_bound", "invalid", "of 0.1 cores")
	// Unthrottled, the loadgen has its 2 cores: nothing says it ran out of
	// CPU (on 2 shared cores it may still wait for one: that is the
	// suspect run-delay signal, quiet in the light control below).
	for _, f := range free.Validity.Flags {
		if f.Code == "loadgen_bound" && f.Severity == "invalid" {
			t.Errorf("control %s: loadgen_bound fired without a quota: %s", free.ID, f.Reason)
		}
	}
	// 1000 req/s keeps the loadgen's timers busy: a lone late wake-up of
	// an idle runtime stays far below the p99, which sits at 4-9 ms on a
	// busy 2-core host. A stall of the whole host (a compaction, a GC
	// elsewhere) of D ms delays about D sends: over 10 s (10,000 sends) it
	// moves the send lag's p99 past 10 ms only when D is over about 110
	// ms, and a stall that long (over 1 % of the window) makes the cell
	// contended by the host, which no control is judged under
	// (mustStayQuiet).
	lightID := "nginx.fast.simple.10s.r1"
	light := cell(t, runCells(t, results, "lglight", nil, "-tier", "10s", "-proxies", "nginx", "-origins", "fast", "-rate", "1000", "-concurrency", "20", "-isolate=false"), lightID)
	mustStayQuiet(t, light, "loadgen_bound")
	if starved.Validity.Verdict != "invalid" {
		t.Errorf("starved cell verdict %s, want invalid", starved.Validity.Verdict)
	}
	if free.RPS != nil && starved.RPS != nil && *starved.RPS > 0.7**free.RPS {
		t.Errorf("the quota did not starve the loadgen: %.0f req/s vs %.0f unthrottled", *starved.RPS, *free.RPS)
	}
	t.Logf("unthrottled %.0f req/s (%s), quota 0.1: %.0f req/s (%s)", deref(free.RPS), free.Validity.Verdict, deref(starved.RPS), starved.flags())
}

// TestFlagLateStall freezes the origin for the last 2.5 s of a 5 s window:
// req/s must equal the completions the proxy itself logged inside the
// planned window (within 2 %), the requests caught by the end are late, and
// the stall shows in latency, not as a stretched window.
func TestFlagLateStall(t *testing.T) {
	testProxy(t, passthrough)
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = exec.Command("docker", "unpause", "proxybench-origin-fast").Run() })
	cmd, lines := startRun(t, ctx, results, "stall", "-tier", "5s", "-proxies", "custom", "-origins", "fast", "-concurrency", "20", "-isolate=false")
	waitLine(t, lines, "cell=custom.fast.simple.5s.r1", 60*time.Second)
	time.Sleep(2500 * time.Millisecond)
	docker(t, "pause", "proxybench-origin-fast")
	time.Sleep(3 * time.Second) // past the window's end
	docker(t, "unpause", "proxybench-origin-fast")
	for range lines {
	}
	if code := exitCode(cmd.Wait()); code != 0 && code != 3 {
		t.Fatalf("loadgen exit %d", code)
	}
	c := cell(t, reportCells(t, results, "stall"), "custom.fast.simple.5s.r1")
	if got := c.End.Sub(c.Start); math.Abs(got.Seconds()-5) > 0.001 {
		t.Errorf("window %s, want the planned 5 s", got)
	}
	at, status := accessLog(t)
	var inWindow int64
	for i, ts := range at {
		if !ts.Before(c.Start) && !ts.After(c.End) && status[i] == "200" {
			inWindow++
		}
	}
	want := float64(inWindow) / c.End.Sub(c.Start).Seconds()
	if c.RPS == nil || math.Abs(*c.RPS-want) > 0.02*want {
		t.Errorf("req/s %v, want %.1f (the proxy logged %d completions in the planned window)", c.RPS, want, inWindow)
	}
	if c.Late == 0 {
		t.Errorf("no late requests counted, though the origin was frozen at the window's end")
	}
	t.Logf("req/s %.1f vs %.1f from the proxy's log, %d late", deref(c.RPS), want, c.Late)
}

// TestFlagFailedDiffDeadProxy: a proxy dead in the candidate run gates
// `reporter diff` (exit 4) and the output names its missing cells.
func TestFlagFailedDiffDeadProxy(t *testing.T) {
	results := t.TempDir()
	base := runCells(t, results, "diffa", nil, "-tier", "3s", "-proxies", "nginx,haproxy", "-origins", "fast", "-concurrency", "10", "-isolate=false")
	cell(t, base, "haproxy.fast.simple.3s.r1")
	t.Cleanup(func() {
		_ = exec.Command("docker", "start", "proxybench-haproxy").Run()
		waitHealthy(t, "proxybench-haproxy", 60*time.Second)
	})
	docker(t, "stop", "-t", "1", "proxybench-haproxy")
	runCells(t, results, "diffb", nil, "-tier", "3s", "-proxies", "nginx,haproxy", "-origins", "fast", "-concurrency", "10", "-isolate=false")
	out, err := exec.Command(bin(t, "reporter"), "diff", "-a", "diffa", "-b", "diffb", "-results", results).CombinedOutput()
	if code := exitCode(err); code != 4 {
		t.Errorf("reporter diff exit %d, want 4 (a proxy died)\n%s", code, out)
	}
	if !strings.Contains(string(out), "haproxy.fast.simple.3s") {
		t.Errorf("diff output does not name the dead proxy's cell:\n%s", out)
	}
	// Control: the same run against itself does not gate.
	if out, err := exec.Command(bin(t, "reporter"), "diff", "-a", "diffa", "-b", "diffa", "-results", results).CombinedOutput(); exitCode(err) != 0 {
		t.Errorf("diff of a run with itself: exit %d, want 0\n%s", exitCode(err), out)
	}
}

// TestFlagTooFewSamples: 2 s at 20 req/s is 40 attempts, under the 100 a
// verdict needs.
func TestFlagTooFewSamples(t *testing.T) {
	results := t.TempDir()
	c := cell(t, runCells(t, results, "few", nil, "-tier", "2s", "-proxies", "nginx", "-origins", "fast", "-rate", "20", "-isolate=false"), "nginx.fast.simple.2s.r1")
	mustFire(t, c, "too_few_samples", "invalid", "attempts")
	ctl := cell(t, runCells(t, results, "enough", nil, "-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-rate", "200", "-isolate=false"), "nginx.fast.simple.3s.r1")
	mustStayQuiet(t, ctl, "too_few_samples", "sut_saturated")
}

// TestFlagSUTSaturated: an open loop offered 400 req/s to 2 connections
// on a 50 ms route (40 req/s) waits for its max in flight: the proxy is
// saturated, not the loadgen. What is still queued at the window's end is
// sent after it, its latency from the intended time, until the 2 s
// timeout of that drain: the request due at t is sent near 10t, so p99
// shows the queue, over 3.5 s where the 3 s window alone could not hold
// more than about 3 s; with 90 % of the sends queued past the end or
// never sent, the cell is invalid (sut_saturated). The controls (a rate
// the route carries) are TestFlagTooFewSamples's.
func TestFlagSUTSaturated(t *testing.T) {
	results := t.TempDir()
	c := cell(t, runCells(t, results, "sat", nil, "-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-scenarios", "slow",
		"-slow-delay", "50ms", "-rate", "400", "-concurrency", "2", "-timeout", "2s", "-isolate=false"), "nginx.fast.slow.3s.r1")
	mustFire(t, c, "sut_saturated", "invalid", "still queued at the window's end")
	if sev, why := c.flag("loadgen_bound"); sev == "invalid" {
		t.Errorf("saturated proxy judged loadgen_bound: %s", why)
	}
	if c.Queued == nil || *c.Queued < 20 || c.Latency.P99 == nil || *c.Latency.P99 < 3.5 {
		t.Errorf("%s: queued past the end %v, missed %v, p99 %v s: want the queue sent after the window and its latency from the intended time (p99 > 3.5 s)",
			c.ID, deref(c.Queued), deref(c.Missed), deref(c.Latency.P99))
	}
}

// TestFlagMissingMetrics stops the exporter for a whole cell: the proxy's
// memory series are missing (its CPU still comes from the loadgen's edge
// readings of the cgroup). The control is the quick bench's nginx → fast
// cell when make test-e2e ran it, else the same cell once the exporter is
// back.
func TestFlagMissingMetrics(t *testing.T) {
	results := t.TempDir()
	t.Cleanup(func() {
		_ = exec.Command("docker", "start", "proxybench-exporter").Run()
		waitHealthy(t, "proxybench-exporter", 60*time.Second)
	})
	docker(t, "stop", "-t", "2", "proxybench-exporter")
	time.Sleep(2 * time.Second) // past Prometheus's last scrape of it
	c := cell(t, runCells(t, results, "noexp", nil, "-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "10", "-isolate=false"), "nginx.fast.simple.3s.r1")
	mustFire(t, c, "missing_metrics", "suspect", "container_memory_working_set_bytes")
	docker(t, "start", "proxybench-exporter")
	waitHealthy(t, "proxybench-exporter", 60*time.Second)
	ctl := quickBenchOr(t, func() flagCell {
		time.Sleep(3 * time.Second) // cAdvisor's first housekeeping
		return cell(t, runCells(t, results, "withexp", nil, "-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "10", "-isolate=false"), "nginx.fast.simple.3s.r1")
	})
	mustStayQuiet(t, ctl, "missing_metrics")
}

// TestFlagLittlesLaw stops the loadgen itself (SIGSTOP) for a second in the
// middle of an open-loop window: the requests due meanwhile wait unsent, so
// their coordinated-omission-corrected latency is not matched by requests
// in flight, and Little's law no longer holds. The same stall is judged
// per second: the cell is contended, its reason naming how long the
// loadgen could not run and when. The same cell without the stop is the
// control of both.
func TestFlagLittlesLaw(t *testing.T) {
	results := t.TempDir()
	args := []string{"-tier", "4s", "-proxies", "nginx", "-origins", "fast", "-scenarios", "slow", "-slow-delay", "20ms",
		"-rate", "500", "-concurrency", "100", "-isolate=false"}
	id := "nginx.fast.slow.4s.r1"
	ctl := cell(t, runCells(t, results, "little-ok", nil, args...), id)
	mustStayQuiet(t, ctl, "littles_law")
	// Nobody stopped the control's loadgen: the host may still have (a
	// stall of 50 ms or more is then a true finding), but not for half
	// of the second the stopped cell lost.
	if ctl.Stall != nil {
		t.Logf("control %s: the loadgen's longest stall in the window %.0f ms", ctl.ID, 1000*ctl.Stall.Seconds)
		if ctl.Stall.Seconds >= 0.5 {
			t.Errorf("control %s: a stall of %.3f s although nobody stopped the loadgen", ctl.ID, ctl.Stall.Seconds)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, lines := startRun(t, ctx, results, "little-stop", args...)
	waitLine(t, lines, "cell="+id, 60*time.Second)
	time.Sleep(2 * time.Second)
	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if code := exitCode(cmd.Wait()); code != 0 && code != 3 {
		t.Fatalf("loadgen exit %d", code)
	}
	c := cell(t, reportCells(t, results, "little-stop"), id)
	mustFire(t, c, "littles_law", "suspect", "in-flight")
	mustFire(t, c, "contended", "suspect", "the loadgen could not run for")
	switch {
	case c.Stall == nil:
		t.Errorf("%s: no stall recorded, stopped for 1 s", c.ID)
	case c.Stall.Seconds < 0.9 || c.Stall.Seconds > 1.5:
		t.Errorf("%s: stall %.3f s, stopped for 1 s", c.ID, c.Stall.Seconds)
	case c.Stall.At.Sub(stopped).Abs() > 200*time.Millisecond:
		t.Errorf("%s: stall due %v after the stop began, want within 200 ms", c.ID, c.Stall.At.Sub(stopped))
	default:
		t.Logf("%s: stall %.3f s due %v after the stop began", c.ID, c.Stall.Seconds, c.Stall.At.Sub(stopped))
	}
}

// TestFlagNoServerSide runs a cell whose loadgen serves /metrics where
// Prometheus does not scrape: the report still has the cell, from the
// manifest, and says its server-side series are missing. The same cell
// scraped as usual is the control: the quick bench's nginx → fast cell when
// make test-e2e ran it, else one of our own.
func TestFlagNoServerSide(t *testing.T) {
	results := t.TempDir()
	args := []string{"-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "10", "-isolate=false"}
	id := "nginx.fast.simple.3s.r1"
	c := cell(t, runCells(t, results, "unscraped", nil, append(args, "-metrics-addr", "127.0.0.1:0")...), id)
	mustFire(t, c, "no_server_side_series", "suspect", "manifest")
	if c.Requests == 0 {
		t.Errorf("the unscraped cell lost its counts: the manifest has them")
	}
	ctl := quickBenchOr(t, func() flagCell { return cell(t, runCells(t, results, "scraped", nil, args...), id) })
	mustStayQuiet(t, ctl, "no_server_side_series")
}

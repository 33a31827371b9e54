//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Outages in the middle of a real run: the engine restarting, Prometheus
// away for a whole cell, the results disk filling up. Each keeps what was
// measured and says what it could not keep.

var gcCyclesRE = regexp.MustCompile(`(?m)^proxybench_gc_cycles_total\{container="([^"]+)",[^}]*\} (\S+)$`)

// exporterCycles reads the exporter's gc cycle counter per container.
func exporterCycles(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:9400/metrics")
	if err != nil {
		t.Fatalf("exporter: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, m := range gcCyclesRE.FindAllStringSubmatch(string(b), -1) {
		out[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	return out
}

var gcLogRE = regexp.MustCompile(`(?m)^gc \d+ @`)

// logCycles counts the gc lines a container logged since t0, as the engine
// holds them (an independent reading of what the exporter counts).
func logCycles(t *testing.T, container string, t0 time.Time) int {
	t.Helper()
	out, err := exec.Command("docker", "logs", "--since", t0.UTC().Format(time.RFC3339Nano), container).CombinedOutput()
	if err != nil {
		t.Fatalf("docker logs %s: %v\n%s", container, err, out)
	}
	return len(gcLogRE.FindAll(out, -1))
}

// TestDockerdRestartMidRun restarts the engine in the middle of a cell of a
// real run through both Go proxies. The containers live on (live-restore),
// the run goes on, and the exporter, reconnecting through the docker
// filter, still counts exactly the gc lines each proxy logged.
func TestDockerdRestartMidRun(t *testing.T) {
	if on := docker(t, "info", "-f", "{{.LiveRestoreEnabled}}"); on != "true" {
		t.Fatalf("dockerd runs without live-restore (scripts/engine.sh turns it on): a restart would stop the stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gcProxies := []string{"proxybench-caddy", "proxybench-traefik"}
	// The boundary must be quiet: a gc line still on its way to the
	// exporter when its counts are read would count over the run but not in
	// the log since then (an earlier test's load leaves the proxies
	// collecting for a while): wait for a second with no gc line in either
	// log and the counts unchanged.
	var before map[string]float64
	var since time.Time
	for deadline := time.Now().Add(30 * time.Second); ; {
		b0 := exporterCycles(t)
		time.Sleep(time.Second)
		before, since = exporterCycles(t), time.Now()
		quiet := true
		for _, p := range gcProxies {
			quiet = quiet && b0[p] == before[p] && logCycles(t, p, since.Add(-3*time.Second)) == 0
		}
		if quiet {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Go proxies collected garbage in every second of 30 s while idle")
		}
	}
	results := t.TempDir()
	cmd, lines := startRun(t, ctx, results, "dockerd", "-tier", "8s", "-proxies", "caddy,traefik", "-origins", "go", "-concurrency", "16")
	waitLine(t, lines, "cell=caddy.go.simple.8s.r1", time.Minute)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	if out, err := exec.Command("../scripts/engine.sh", "restart").CombinedOutput(); err != nil {
		t.Fatalf("restart dockerd: %v\n%s", err, out)
	}
	t.Logf("dockerd back after %s", time.Since(t0).Round(time.Millisecond))
	for range lines {
	}
	code := exitCode(cmd.Wait())
	m := readManifest(t, filepath.Join(results, "dockerd"))
	for _, c := range m.Cells {
		switch {
		case c.Status == "ok" && c.Requests > 0:
		case c.Status == "failed" && strings.Contains(strings.ToLower(c.Reason), "docker"):
			t.Logf("cell %s failed with the reason named: %s", c.ID, c.Reason)
		default:
			t.Errorf("cell %s: %s (%q, %d requests): want ok, or failed with the engine named", c.ID, c.Status, c.Reason, c.Requests)
		}
	}
	if code != 0 && code != 3 {
		t.Errorf("loadgen exit %d, want 0 (or 3 with a failed cell)", code)
	}
	for _, p := range append(gcProxies, "proxybench-nginx", "proxybench-haproxy", "proxybench-exporter", "proxybench-docker-filter", "proxybench-prometheus") {
		if st := docker(t, "inspect", "-f", "{{.State.Status}}", p); st != "running" {
			t.Errorf("%s is %s after the engine restarted, want running", p, st)
		}
	}
	// The last lines reach the exporter within a few seconds.
	for _, p := range gcProxies {
		var got float64
		var want int
		for i := 0; i < 40; i++ {
			got, want = exporterCycles(t)[p]-before[p], logCycles(t, p, since)
			if got == float64(want) && i >= 4 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("%s: exporter counted %v gc cycles over the run, the engine's log holds %d gc lines", p, got, want)
		if got != float64(want) {
			t.Errorf("%s: exporter counted %v gc cycles through the restart, its log holds %d", p, got, want)
		}
		if want < 3 {
			t.Errorf("%s: only %d gc lines over the run: not a test of counting (GODEBUG=gctrace=1?)", p, want)
		}
	}
}

// TestResultsDiskFull runs on a results directory on a small tmpfs that is
// filled up after the first cell: the run stops with an error naming the
// path, the manifest on disk stays whole with the cell saved before, and
// the complete manifest is still given out (stderr), so nothing measured is
// lost.
func TestResultsDiskFull(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs (the test needs root): %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t, "loadgen"), "run", "-run", "full", "-results", dir, "-linger", "1s",
		"-tier", "2s", "-repeats", "3", "-control=false", "-proxies", "nginx", "-origins", "fast", "-concurrency", "4", "-isolate=false")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	filled := false
	buf := make([]byte, 64<<10)
	for {
		n, err := stderr.Read(buf)
		log.Write(buf[:n])
		if !filled && strings.Contains(log.String(), "cell start") && strings.Contains(log.String(), "cell=nginx.fast.simple.2s.r2") {
			// Cell 1 is saved; fill the disk while cell 2 runs.
			filler, _ := os.Create(filepath.Join(dir, "filler"))
			_, ferr := io.Copy(filler, io.LimitReader(zeros{}, 1<<30))
			filler.Close()
			filled = true
			t.Logf("filled %s: %v", dir, ferr)
		}
		if err != nil {
			break
		}
	}
	code := exitCode(cmd.Wait())
	out := log.String()
	t.Log(out)
	mpath := filepath.Join(dir, "full", "manifest.json")
	if code == 0 {
		t.Errorf("loadgen exit 0 with a full results disk")
	}
	if !strings.Contains(out, "results disk full") || !strings.Contains(out, mpath) || !strings.Contains(out, "no space left on device") {
		t.Errorf("stderr does not name the full disk and %s", mpath)
	}
	m := readManifest(t, filepath.Join(dir, "full"))
	if len(m.Cells) < 1 || m.Cells[0].ID != "nginx.fast.simple.2s.r1" || m.Cells[0].Status != "ok" || m.Cells[0].Requests == 0 {
		t.Errorf("manifest on the full disk: %+v, want whole with cell r1 ok", m.Cells)
	}
	// The complete manifest on stderr holds cell 2 as measured.
	i := strings.Index(out, "the complete manifest")
	if i < 0 {
		t.Fatalf("the complete manifest was not given out on stderr")
	}
	j := strings.IndexByte(out[i:], '\n')
	var full runManifest
	dec := json.NewDecoder(strings.NewReader(out[i+j+1:]))
	if err := dec.Decode(&full); err != nil {
		t.Fatalf("the manifest on stderr: %v", err)
	}
	got := map[string]string{}
	for _, c := range full.Cells {
		got[c.ID] = fmt.Sprintf("%s/%d", c.Status, c.Requests)
	}
	if !strings.HasPrefix(got["nginx.fast.simple.2s.r2"], "ok/") || got["nginx.fast.simple.2s.r2"] == "ok/0" ||
		!strings.HasPrefix(got["nginx.fast.simple.2s.r3"], "skipped/") {
		t.Errorf("complete manifest cells %v: want r2 measured and r3 skipped (the run stopped)", got)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestPrometheusOutageMidRun stops Prometheus as soon as the first of
// five cells ends and starts it again as the second begins (it is back
// 5-17 s later: with placement it starts on the CPU the loadgen and the
// origin load, so the fifth cell, which starts 21 s after the second
// with the plan's default settle of 3 s, is measured after it): every cell
// of the manifest is in the report, none is called failed, every count
// equals the manifest's exact one, each cell whose counting span met the
// outage is flagged prometheus_gap (numbers from the manifest, none from
// before the outage), and each cell measured after Prometheus was back is
// not.
func TestPrometheusOutageMidRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		_ = exec.Command("docker", "start", "proxybench-prometheus").Run()
		waitHealthy(t, "proxybench-prometheus", 90*time.Second)
	})
	prom := promURL()
	results := t.TempDir()
	run := "promgap-" + time.Now().UTC().Format("150405")
	cmd, lines := startRun(t, ctx, results, run, "-tier", "4s", "-settle", "3s", "-repeats", "5", "-control=false", "-proxies", "nginx", "-origins", "fast", "-concurrency", "8", "-isolate=false")
	waitLine(t, lines, "cell end", time.Minute) // r1 ended
	down := time.Now()
	docker(t, "stop", "-t", "1", "proxybench-prometheus")
	// Prometheus may still scrape while it stops: it is back only with a
	// scrape after the stop returned.
	stopped := time.Now()
	waitLine(t, lines, "cell=nginx.fast.simple.4s.r2", 30*time.Second)
	docker(t, "start", "proxybench-prometheus")
	// Back is its first scrape of the loadgen, which comes a few seconds
	// after ready (the scrape manager applies targets every 5 s).
	var up time.Time
	for deadline := time.Now().Add(60 * time.Second); up.IsZero(); {
		if ts, ok := lastScrape(prom); ok && ts.After(stopped) {
			up = ts
		}
		if time.Now().After(deadline) {
			t.Fatal("Prometheus did not scrape the loadgen within 60 s of its start")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("Prometheus away from %s to %s", down.Format("15:04:05.0"), up.Format("15:04:05.0"))
	for range lines {
	}
	if code := exitCode(cmd.Wait()); code != 0 {
		t.Errorf("loadgen exit %d, want 0: the run does not need Prometheus", code)
	}
	time.Sleep(2 * time.Second)

	man := readManifest(t, filepath.Join(results, run))
	cells := reportCells(t, results, run)
	if len(cells) != len(man.Cells) || len(cells) != 5 {
		t.Errorf("report has %d cells, the manifest %d, want 5", len(cells), len(man.Cells))
	}
	met, after := 0, 0
	for _, mc := range man.Cells {
		c := cell(t, cells, mc.ID)
		t.Logf("%s [%s, %s]: %s, %d requests (manifest %d), flags %s", c.ID, c.Start.Format("15:04:05.0"), c.End.Format("15:04:05.0"),
			c.Validity.Verdict, c.Requests, mc.Requests, c.flags())
		if sev, _ := c.flag("failed"); sev != "" {
			t.Errorf("%s: called failed, but the manifest says %s", c.ID, mc.Status)
		}
		if c.Requests != mc.Requests || c.Requests == 0 {
			t.Errorf("%s: %d requests in the report, the manifest counted %d", c.ID, c.Requests, mc.Requests)
		}
		gap, _ := c.flag("prometheus_gap")
		// The counting span is (start - 1 s, end + 1.5 s], its baseline a
		// scrape up to 3 s before start: an outage that ends within those
		// 3 s leaves a baseline or not depending on the scrapes' phase, so
		// either verdict is right there. So is it for an outage that
		// begins after the window's end, within the last 1.5 s: the final
		// values were scraped before it or not, depending on the phase.
		// Either way the counts must be the manifest's (checked above).
		span1 := c.End.Add(1500 * time.Millisecond)
		switch span0, base0 := c.Start.Add(-time.Second), c.Start.Add(-3*time.Second); {
		case span0.Before(up) && c.End.After(down):
			met++
			if gap != "suspect" {
				t.Errorf("%s: its counting span met the outage but it is not flagged prometheus_gap suspect (%q)", c.ID, gap)
			}
		case span0.Before(up) && span1.After(down):
			t.Logf("%s: the outage began after its window, within the counting span's last 1.5 s: %q either way", c.ID, gap)
		case base0.Before(up) && span1.After(down):
			t.Logf("%s: only its baseline lookback met the outage: %q either way", c.ID, gap)
		case base0.After(up):
			after++
			if gap != "" {
				t.Errorf("%s: measured after Prometheus was back, yet flagged prometheus_gap", c.ID)
			}
		}
	}
	if met == 0 || after == 0 {
		t.Errorf("%d cells met the outage and %d came after it: the test did not test both", met, after)
	}
}

// lastScrape is when Prometheus last scraped the loadgen.
func lastScrape(prom string) (time.Time, bool) {
	resp, err := http.Get(prom + `/api/v1/query?query=timestamp(up{job="loadgen"})`)
	if err != nil {
		return time.Time{}, false
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) == 0 {
		return time.Time{}, false
	}
	v, _ := r.Data.Result[0].Value[1].(string)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f * 1000)), true
}

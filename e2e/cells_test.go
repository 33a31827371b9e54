//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What the end-to-end tests share: running `loadgen run` and reading the
// report's cells, the flag checks, the quick bench's cells as controls.

// flagCell is what these tests read of a report.json cell.
type flagCell struct {
	ID        string           `json:"id"`
	Proxy     string           `json:"proxy"`
	Start     time.Time        `json:"start"`
	End       time.Time        `json:"end"`
	DurationS float64          `json:"duration_seconds"`
	Requests  int64            `json:"requests"`
	Codes     map[string]int64 `json:"codes"`
	RPS       *float64         `json:"rps"`
	Goodput   *float64         `json:"goodput_rps"`
	Late      int64            `json:"late"`
	// LateErrors are the late completions that failed (timeouts among
	// them); SLO the cell's SLO checks.
	LateErrors  int64            `json:"late_errors"`
	LateCodes   map[string]int64 `json:"late_codes"`
	LateReasons map[string]int64 `json:"late_reasons"`
	SLO         []struct {
		Name  string   `json:"name"`
		Value *float64 `json:"value"`
	} `json:"slo"`
	ProxyRes struct {
		CPUMean *float64 `json:"cpu_mean_cores"`
	} `json:"proxy_resources"`
	Latency struct {
		P99 *float64 `json:"p99"`
	} `json:"latency"`
	Queued *float64 `json:"open_loop_queued"`
	Missed *float64 `json:"open_loop_missed"`
	Stall  *struct {
		Seconds float64   `json:"seconds"`
		At      time.Time `json:"at"`
	} `json:"stall"`
	Validity validity `json:"validity"`
	// ServerSide: the cell's traffic numbers are Prometheus's; Gap: a hole
	// in its scrapes left some unused.
	ServerSide bool            `json:"server_side"`
	Gap        json.RawMessage `json:"prometheus_gap"`
}

// validity is a report.json cell's verdict and flags.
type validity struct {
	Verdict string `json:"verdict"`
	Flags   []struct {
		Code     string `json:"code"`
		Severity string `json:"severity"`
		Reason   string `json:"reason"`
	} `json:"flags"`
}

// flag returns the cell's flag with code ("" severity when absent).
func (c flagCell) flag(code string) (severity, reason string) {
	for _, f := range c.Validity.Flags {
		if f.Code == code {
			return f.Severity, f.Reason
		}
	}
	return "", ""
}

func (c flagCell) flags() string {
	var out []string
	for _, f := range c.Validity.Flags {
		out = append(out, f.Code+"("+f.Severity+"): "+f.Reason)
	}
	return strings.Join(out, "; ")
}

// mustFire and mustStayQuiet are the two halves of every flag test.
func mustFire(t *testing.T, c flagCell, code, severity string, reasonHas ...string) {
	t.Helper()
	sev, why := c.flag(code)
	if sev == "" {
		t.Errorf("%s: flag %s did not fire (flags: %s)", c.ID, code, c.flags())
		return
	}
	if severity != "" && sev != severity {
		t.Errorf("%s: flag %s is %s, want %s: %s", c.ID, code, sev, severity, why)
	}
	for _, s := range reasonHas {
		if !strings.Contains(why, s) {
			t.Errorf("%s: flag %s reason %q lacks %q", c.ID, code, why, s)
		}
	}
}

func mustStayQuiet(t *testing.T, c flagCell, codes ...string) {
	t.Helper()
	// A control the host starved is no control: its flags may be true
	// findings about the host (a VM can lose a third of a CPU to steal in
	// bursts, or stall the loadgen), which the lab cannot place away.
	if _, why := c.flag("contended"); why != "" && hostOnly(why) {
		t.Logf("control %s: the hypervisor starved it (%s): its flags %s are not judged", c.ID, why, c.flags())
		return
	}
	for _, code := range codes {
		if sev, why := c.flag(code); sev != "" {
			t.Errorf("control %s: flag %s fired (%s): %s", c.ID, code, sev, why)
		}
	}
}

// hostOnly tells a contended flag whose every reason is the host's: the
// hypervisor's steal, or a stall that kept the loadgen from running.
func hostOnly(why string) bool {
	for _, part := range strings.Split(why, "; ") {
		if !strings.Contains(part, "the hypervisor stole") && !strings.Contains(part, "the loadgen could not run for") {
			return false
		}
	}
	return why != ""
}

// runCells runs `loadgen run` to the end, builds its report and returns the
// report's cells by id. extra are loadgen flags; wrap, when set, prefixes
// the command (a cgroup, for example).
func runCells(t *testing.T, results, run string, wrap []string, extra ...string) map[string]flagCell {
	t.Helper()
	args := append(runArgs(run, results), extra...)
	argv := append(append(append([]string{}, wrap...), bin(t, "loadgen")), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 0 && code != 3 {
		t.Fatalf("loadgen %v: exit %d\n%s", extra, code, out)
	}
	ran := time.Since(start)
	cells := reportCells(t, results, run)
	// Where make test's time goes: each run's cost beyond its windows.
	var windows float64
	for _, c := range cells {
		windows += c.DurationS
	}
	t.Logf("run %s: %d cells, windows %.1f s; loadgen %.1f s (%d ceiling measurements), report %.1f s", run, len(cells), windows,
		ran.Seconds(), bytes.Count(out, []byte("instrument ceiling measured")), (time.Since(start) - ran).Seconds())
	if n := countsAgree(t, filepath.Join(results, run), cells); n < len(cells) {
		t.Logf("run %s: %d of %d cells counted by Prometheus and judged against the loadgen's count", run, n, len(cells))
	}
	return cells
}

// countsAgree checks the timing guarantee on every run these tests make:
// each cell's request count, which the reporter took from Prometheus, is
// the loadgen's own exact count in its manifest, the last cell's too (the
// loadgen leaves right after its first scrape past the last drain, and the
// reporter, built at once, waits for that sample). Cells Prometheus could
// not count (a gap the report names, no server-side series) are not judged.
func countsAgree(t *testing.T, dir string, cells map[string]flagCell) (judged int) {
	t.Helper()
	for _, mc := range readManifest(t, dir).Cells {
		c, ok := cells[mc.ID]
		if !ok || mc.Status != "ok" || !c.ServerSide || len(c.Gap) > 0 && string(c.Gap) != "null" {
			continue
		}
		judged++
		if c.Requests != mc.Requests {
			t.Errorf("%s: Prometheus counted %d requests in the window, the loadgen %d", mc.ID, c.Requests, mc.Requests)
		}
	}
	return judged
}

// runArgs are what every `loadgen run` of these tests starts with: its
// id and results, and a linger long enough for the last scrape. The settle
// between cells is the plan's default (3 s): a closed loop that fills the
// loadgen's CPU, which Prometheus shares, leaves it the gap to scrape in
// (with 1.5 s, a cell's final values went unscraped in one run). A cached
// instrument ceiling is reused for a day rather than 30 minutes: its key
// holds the loadgen binary, the placement and the load, these tests judge
// flags and counts rather than the ceiling's freshness (the ceiling's own
// tests measure afresh), and some 15 distinct keys measured again cost
// about 35 s of make test (about 2 s each, before the first window).
func runArgs(run, results string) []string {
	return []string{"run", "-run", run, "-results", results, "-linger", "2s", "-ceiling-max-age", "24h"}
}

// promURL is the stack's Prometheus (PROXYBENCH_PROM, default the local one).
func promURL() string {
	if p := os.Getenv("PROXYBENCH_PROM"); p != "" {
		return p
	}
	return "http://127.0.0.1:9090"
}

// reportCells runs `reporter build` and returns report.json's cells by id.
func reportCells(t *testing.T, results, run string) map[string]flagCell {
	t.Helper()
	return reportCellsFrom(t, promURL(), results, run)
}

// reportCellsFrom is reportCells with the report built from Prometheus at
// prom.
func reportCellsFrom(t *testing.T, prom, results, run string) map[string]flagCell {
	t.Helper()
	out, err := exec.Command(bin(t, "reporter"), "build", "-prom", prom, "-run", run, "-results", results).CombinedOutput()
	if code := exitCode(err); code != 0 && code != 3 { // 3: report written, an SLO failed
		t.Fatalf("reporter: %v\n%s", err, out)
	}
	got := map[string]flagCell{}
	for _, c := range readCells[flagCell](t, results, run) {
		got[c.ID] = c
	}
	return got
}

// readCells decodes the cells of results/<run>/report.json into C, the
// part of a cell a test reads.
func readCells[C any](t *testing.T, results, run string) []C {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(results, run, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Cells []C `json:"cells"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Cells
}

func cell(t *testing.T, cells map[string]flagCell, id string) flagCell {
	t.Helper()
	c, ok := cells[id]
	if !ok {
		var ids []string
		for k := range cells {
			ids = append(ids, k)
		}
		t.Fatalf("report has no cell %s (cells: %v)", id, ids)
	}
	return c
}

// cpuQuota makes a cgroup limited to cores CPUs and returns the argv
// prefix that runs a command inside it (cgroup v1 cpu controller or v2
// cpu.max). The cgroup is removed when the test ends.
func cpuQuota(t *testing.T, cores float64) []string {
	t.Helper()
	name := fmt.Sprintf("proxybench-e2e-%d", os.Getpid())
	period := 100000
	quota := strconv.Itoa(int(cores * float64(period)))
	var dir string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // v2
		dir = filepath.Join("/sys/fs/cgroup", name)
		mustMkdir(t, dir)
		mustWrite(t, filepath.Join(dir, "cpu.max"), quota+" "+strconv.Itoa(period))
	} else {
		dir = filepath.Join("/sys/fs/cgroup/cpu", name)
		mustMkdir(t, dir)
		mustWrite(t, filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(period))
		mustWrite(t, filepath.Join(dir, "cpu.cfs_quota_us"), quota)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	return []string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		t.Skipf("cannot create a cgroup (needs root and a writable cgroupfs): %v", err)
	}
}

func mustWrite(t *testing.T, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// quickBenchOr is the quick bench's nginx → fast cell (20 connections,
// closed loop), the control of several tests, when make test-e2e ran the
// quick bench; else the control own measures.
func quickBenchOr(t *testing.T, own func() flagCell) flagCell {
	t.Helper()
	if c, ok := quickBenchCell(t, "nginx.fast.simple.3s.r1"); ok {
		return c
	}
	return own()
}

// quickBenchCell is the cell id of the quick bench scripts/e2e.sh ran
// (PROXYBENCH_RUN_DIR), ok false when there is none.
func quickBenchCell(t *testing.T, id string) (flagCell, bool) {
	t.Helper()
	dir := os.Getenv("PROXYBENCH_RUN_DIR")
	if dir == "" {
		return flagCell{}, false
	}
	for _, c := range readCells[flagCell](t, filepath.Dir(dir), filepath.Base(dir)) {
		if c.ID == id {
			return c, true
		}
	}
	t.Fatalf("the quick bench in %s has no cell %s", dir, id)
	return flagCell{}, false
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

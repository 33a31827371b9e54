//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/headless"
)

// livePage is what the test reads off the live view's rendered DOM.
type livePage struct {
	Cell, CellText   string
	RPS, RPSValue, T string
	Source, SrcText  string
	Status           string
	Gone             bool
	Rows             []struct{ ID, Status, Text string }
}

const readPage = `(() => {
  const q = (id) => document.getElementById(id);
  return {Cell: q("cell").dataset.id, CellText: q("cell").textContent, RPS: q("rps").textContent,
    RPSValue: q("rps").dataset.value, T: q("rps").dataset.t, Source: q("source").dataset.source,
    SrcText: q("source").textContent, Status: q("status").dataset.status, Gone: !q("gone").hidden,
    Rows: Array.from(document.querySelectorAll("#cells tbody tr")).map((tr) => ({ID: tr.dataset.id, Status: tr.dataset.status, Text: tr.textContent}))};
})()`

// waitPage reads the page until ok says it shows what is waited for.
func waitPage(t *testing.T, b *headless.Browser, within time.Duration, what string, ok func(livePage) bool) livePage {
	t.Helper()
	var p livePage
	for deadline := time.Now().Add(within); ; time.Sleep(250 * time.Millisecond) {
		p = livePage{}
		err := b.Eval(readPage, &p) // fails while the page loads
		if err == nil && ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show %s within %s: %+v (%v)", what, within, p, err)
		}
	}
}

func (p livePage) row(id string) string {
	for _, r := range p.Rows {
		if r.ID == id {
			return r.Status
		}
	}
	return ""
}

// promAt is Prometheus's value of expr at the unix time ts (one series),
// read with the test's own query.
func promAt(t *testing.T, expr, ts string) float64 {
	t.Helper()
	resp, err := http.PostForm(promURL()+"/api/v1/query", url.Values{"query": {expr}, "time": {ts}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Data.Result) != 1 {
		t.Fatalf("query %s at %s: %v, %d series", expr, ts, err, len(r.Data.Result))
	}
	v, err := strconv.ParseFloat(r.Data.Result[0].Value[1].(string), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var liveURLRE = regexp.MustCompile(`url=(http://\S+/)`)

// TestLiveView watches a real run's live view in headless Chromium: the
// current cell and its req/s as Prometheus has them, a finished cell's
// status, the loadgen's own counters while Prometheus is paused, and the
// page's last state after Ctrl-C. The screenshot is kept in the run's
// results folder (live.png).
func TestLiveView(t *testing.T) {
	bin, err := headless.Find()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = exec.Command("docker", "unpause", "proxybench-prometheus").Run() })
	results := t.TempDir()
	if d := os.Getenv("PROXYBENCH_RUN_DIR"); d != "" {
		results = filepath.Dir(d) // scripts/e2e.sh's results: the screenshot stays
	}
	run := "live-" + time.Now().UTC().Format("150405")
	cmd, lines := startRun(t, ctx, results, run, "-tier", "8s", "-repeats", "3", "-control=false", "-proxies", "nginx", "-origins", "fast",
		"-concurrency", "8", "-isolate=false", "-dashboard", "127.0.0.1:0")
	defer func() { _ = cmd.Process.Kill() }()
	m := liveURLRE.FindStringSubmatch(waitLine(t, lines, "live view", 30*time.Second))
	if m == nil || !strings.HasPrefix(m[1], "http://127.0.0.1:") {
		t.Fatalf("the live view's address is not logged, or not on loopback: %v", m)
	}
	b, err := headless.Open(ctx, bin, t.TempDir(), m[1], 1400, 1300)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r1, r2 := "nginx.fast.simple.8s.r1", "nginx.fast.simple.8s.r2"

	// Mid-cell: r2 running, its req/s from Prometheus, r1's status shown.
	p := waitPage(t, b, 40*time.Second, "cell r2 with a req/s from Prometheus and r1 ok", func(p livePage) bool {
		v, _ := strconv.ParseFloat(p.RPSValue, 64)
		return p.Cell == r2 && p.Source == "prometheus" && v > 0 && p.row(r1) == "ok"
	})
	if !strings.Contains(p.CellText, r2) {
		t.Errorf("current cell shown as %q, want %s", p.CellText, r2)
	}
	want := promAt(t, `sum(proxy_origin_scenario:proxybench_requests:rate5s{proxy="nginx",origin="fast",scenario="simple"})`, p.T)
	shown, err := strconv.ParseFloat(p.RPS, 64)
	if err != nil || math.Abs(shown-want) > 0.5 {
		t.Errorf("req/s shown %q, Prometheus has %.2f at %s (the page rounds to 1)", p.RPS, want, p.T)
	}
	t.Logf("page: %s at %s req/s (Prometheus %.2f at %s); r1 %s", p.Cell, p.RPS, want, p.T, p.row(r1))
	shot, err := b.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	// A blank page has neither; the charts' thin lines early in a run
	// colour 0.1-0.3 % of the page.
	if inked, colored := headless.Ink(img); inked < 0.03 || colored < 0.0005 {
		t.Errorf("screenshot looks blank: %.1f %% inked, %.2f %% coloured", 100*inked, 100*colored)
	}
	if err := os.WriteFile(filepath.Join(results, run, "live.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	// Prometheus paused: the loadgen's own counters, and the page says so.
	docker(t, "pause", "proxybench-prometheus")
	p = waitPage(t, b, 15*time.Second, "the loadgen's counters with Prometheus away", func(p livePage) bool {
		v, _ := strconv.ParseFloat(p.RPSValue, 64)
		return p.Source == "loadgen" && p.Cell != "" && v > 0
	})
	if !strings.Contains(p.SrcText, "Prometheus is away") {
		t.Errorf("Prometheus paused, the page says %q", p.SrcText)
	}
	t.Logf("Prometheus paused: %s at %s req/s from the loadgen", p.Cell, p.RPS)
	docker(t, "unpause", "proxybench-prometheus")

	// Ctrl-C: the page ends with the run's final state and keeps it.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	p = waitPage(t, b, 30*time.Second, "the run interrupted", func(p livePage) bool { return p.Status == "interrupted" })
	for range lines {
	}
	if code := exitCode(cmd.Wait()); code != 130 {
		t.Errorf("loadgen exit %d after Ctrl-C, want 130", code)
	}
	p = waitPage(t, b, 10*time.Second, "that the loadgen is gone", func(p livePage) bool { return p.Gone })
	man := readManifest(t, filepath.Join(results, run))
	for _, c := range man.Cells {
		if got := p.row(c.ID); got != c.Status {
			t.Errorf("after the run the page shows %s %q, the manifest %q", c.ID, got, c.Status)
		}
	}
	if p.Status != "interrupted" || len(p.Rows) != 3 {
		t.Errorf("after the run: status %q, %d cells: %s", p.Status, len(p.Rows), fmt.Sprint(p.Rows))
	}
}

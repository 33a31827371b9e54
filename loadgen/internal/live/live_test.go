package live

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"proxybench/internal/manifest"
	"proxybench/internal/metricdefs"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

// TestQueriesReadKnownSeries: every series the view reads is a recorded
// series of metricdefs (which the dashboard checks tie to the rule files)
// or a row of its table.
func TestQueriesReadKnownSeries(t *testing.T) {
	for what, expr := range Queries("nginx", "fast", "simple") {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		if err != nil {
			t.Fatalf("%s: %s: %v", what, expr, err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				_, row := metricdefs.Lookup(vs.Name)
				if !row && !slices.Contains(metricdefs.Recorded(), vs.Name) {
					t.Errorf("%s reads %s: neither recorded nor a row of internal/metricdefs", what, vs.Name)
				}
			}
			return nil
		})
	}
}

func testPlan(t *testing.T) *plan.Expanded {
	t.Helper()
	p, err := plan.Load([]string{"-run", "lv", "-tier", "2s", "-repeats", "2", "-control=false", "-proxies", "nginx", "-origins", "fast"}, time.Now(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// closedPort is an address where nothing listens (a real refused
// connection: Prometheus away).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func state(t *testing.T, v *View) State {
	t.Helper()
	resp, err := http.Get(v.URL() + "api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestViewWithoutPrometheus runs the view's whole life with Prometheus
// away: the page and its assets are served from the binary, the current
// cell's reading is the loadgen's own and says why, a finished cell shows
// the manifest's account, and the end names the results.
func TestViewWithoutPrometheus(t *testing.T) {
	x := testPlan(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := Listen(ctx, "127.0.0.1:0", "http://"+closedPort(t), x, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if !strings.HasPrefix(v.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %s", v.URL())
	}
	for path, want := range map[string]string{"": "uPlot.iife.min.js", "app.js": "api/state", "uplot/uPlot.iife.min.js": "uPlot", "uplot/uPlot.min.css": ".uplot", "style.css": "body"} {
		resp, err := http.Get(v.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("/%s: %d, %d bytes without %q", path, resp.StatusCode, len(b), want)
		}
		if path == "" && regexp.MustCompile(`(src|href)="(https?:)?//`).Match(b) {
			t.Errorf("index.html loads something from outside the binary")
		}
	}

	d := v.Wrap(progress.New(io.Discard, slog.New(slog.DiscardHandler), false, time.Now))
	c := x.Cells[0]
	d.CellStart(1, len(x.Cells), c)
	d.Progress(attack.Progress{RPS: 1234, Errors: 2, P99: 3 * time.Millisecond})
	var st State
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// A tick between CellStart and Progress reads no progress yet.
		if st = state(t, v); (st.Live != nil && st.Live.RPS != nil && *st.Live.RPS == 1234) || time.Now().After(deadline) {
			break
		}
	}
	if st.Current == nil || st.Current.ID != c.ID || st.Cells[0].Status != "running" {
		t.Errorf("current %+v, row %+v: want %s running", st.Current, st.Cells[0], c.ID)
	}
	if st.Live == nil || st.Source != SourceLoadgen || st.PromError == "" || *st.Live.RPS != 1234 || *st.Live.Errors != 2 ||
		*st.Live.P99 != 0.003 || st.Live.ProxyCPU != nil || st.Live.Cell != c.ID {
		t.Fatalf("reading %+v from %q (%q): want the loadgen's counters, Prometheus's error named", st.Live, st.Source, st.PromError)
	}

	start := time.Now()
	mc := manifest.Cell{Key: c.Key, Status: manifest.CellOK, Requests: 2000, Errors: 2, Start: start, End: start.Add(2 * time.Second),
		Latency: manifest.Latency{P50: 0.001, P99: 0.003}}
	d.CellEnd(1, len(x.Cells), mc)
	st = state(t, v)
	if r := st.Cells[0]; st.Current != nil || r.Status != "ok" || r.RPS != 1000 || r.P99 != 0.003 || r.Errors != 2 {
		t.Errorf("after the cell: current %+v, row %+v", st.Current, r)
	}
	if st.Cells[1].Status != "planned" {
		t.Errorf("cell 2 is %q before it started", st.Cells[1].Status)
	}

	cancel() // Ctrl-C
	if st = state(t, v); st.Status != "interrupting" {
		t.Errorf("status %q after Ctrl-C, want interrupting", st.Status)
	}
	skipped := manifest.Cell{Key: x.Cells[1].Key, Status: manifest.CellSkipped, Reason: "not run: the run was interrupted"}
	v.Finish(&manifest.Manifest{Status: "interrupted", Cells: []manifest.Cell{mc, skipped}}, "results/lv")
	st = state(t, v)
	if st.Status != "interrupted" || st.Cells[1].Status != "skipped" || st.Report == nil || !strings.HasSuffix(st.Report.HTML, "results/lv/report.html") {
		t.Errorf("after Finish: status %q, cell 2 %+v, report %+v", st.Status, st.Cells[1], st.Report)
	}
}

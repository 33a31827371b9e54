//go:build e2e

package dashcheck

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLiveQueriesReturnData sends every dashboard expression (panels,
// annotations, variables) and every recording rule to a live Prometheus
// after a real run and fails, naming dashboard and panel, on an error or an
// empty answer. The lead runs it after a short run through the stack:
//
//	PROXYBENCH_PROM=http://127.0.0.1:9090 go test -tags e2e -run TestLiveQueriesReturnData ./grafana/dashcheck
//
// PROXYBENCH_E2E_WINDOW (default 15m) is how far back the run may be;
// PROXYBENCH_E2E_ALLOW_EMPTY lists comma-separated substrings of
// "<dashboard or rule file>/<title>" whose queries may be empty, say
// "open-loop lag,open_loop_lag" after a closed-loop-only run: those are
// logged, not failed.
func TestLiveQueriesReturnData(t *testing.T) {
	base := envOr("PROXYBENCH_PROM", "http://127.0.0.1:9090")
	window, err := time.ParseDuration(envOr("PROXYBENCH_E2E_WINDOW", "15m"))
	if err != nil {
		t.Fatalf("PROXYBENCH_E2E_WINDOW: %v", err)
	}
	CheckLive(t, Prom{Base: base, Client: &http.Client{Timeout: 30 * time.Second}}, "../dashboards", rulesGlob, window, allowEmpty())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func allowEmpty() []string {
	var out []string
	for _, e := range strings.Split(os.Getenv("PROXYBENCH_E2E_ALLOW_EMPTY"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, strings.ToLower(e))
		}
	}
	return out
}

func allowed(allow []string, key string) bool {
	key = strings.ToLower(key)
	for _, a := range allow {
		if strings.Contains(key, a) {
			return true
		}
	}
	return false
}

// CheckLive is the live check shared by the stack test and the synthetic one.
func CheckLive(t *testing.T, p Prom, dashDir, rulesGlob string, window time.Duration, allow []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	end := time.Now()
	start := end.Add(-window)
	step := max(time.Second, window/10000)

	if _, err := p.Instant(ctx, "vector(1)", end); err != nil {
		t.Fatalf("Prometheus unreachable: %v (start the stack, or set PROXYBENCH_PROM)", err)
	}
	// Instant queries (tables) are evaluated when the run was last
	// measuring: the end of the latest cell window, the loadgen being gone
	// by now.
	at := lastCellEnd(ctx, t, p, start, end)
	t.Logf("range %s .. %s step %s; instant queries at %s", start.Format(time.TimeOnly), end.Format(time.TimeOnly), step, at.Format(time.TimeOnly))

	files, err := LoadDir(dashDir)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := RuleQueries(rulesGlob)
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		q    Query
		vals map[string]string
	}
	var jobs []job
	for _, f := range files {
		vals := map[string]string{}
		for _, v := range f.Dashboard.Templating.List {
			sel, label, err := LabelValues(variableQuery(v))
			if err != nil {
				t.Errorf("%s: variable $%s: %v", f.Title(), v.Name, err)
				vals[v.Name] = ".*"
				continue
			}
			got, err := p.LabelValues(ctx, label, sel, start, end)
			if err != nil {
				t.Errorf("%s: variable $%s: %v", f.Title(), v.Name, err)
			}
			if len(got) == 0 {
				t.Errorf("%s: variable $%s (label_values(%s, %s)) has no values: its panels would show nothing", f.Title(), v.Name, sel, label)
				vals[v.Name] = ".*"
				continue
			}
			vals[v.Name] = RegexValue(got)
		}
		for _, q := range Queries(f) {
			jobs = append(jobs, job{q, vals})
		}
	}
	for _, r := range rules {
		jobs = append(jobs, job{r, nil})
	}

	var checked, empty int
	for _, j := range jobs {
		q := j.q
		expr := q.Expr
		if q.Kind != KindRule { // rules are plain PromQL: "${1}" is label_replace's
			var err error
			if expr, err = Substitute(q.Expr, j.vals); err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
		}
		key := q.Source + "/" + q.Title
		rr, err := p.Range(ctx, expr, start, end, step)
		if err != nil {
			t.Errorf("%s: range query failed: %v\n\texpr: %s", q, err, expr)
			continue
		}
		for _, w := range rr.Warnings {
			t.Errorf("%s: Prometheus warns: %s\n\texpr: %s", q, w, expr)
		}
		for _, i := range rr.Infos {
			t.Logf("%s: Prometheus info: %s", q, i)
		}
		ir, err := p.Instant(ctx, expr, at)
		if err != nil {
			t.Errorf("%s: instant query failed: %v\n\texpr: %s", q, err, expr)
			continue
		}
		checked++
		noData := rr.Samples == 0 || (q.Instant && ir.Samples == 0)
		switch {
		case noData && allowed(allow, key):
			empty++
			t.Logf("%s: no data (allowed by PROXYBENCH_E2E_ALLOW_EMPTY)", q)
		case noData:
			empty++
			t.Errorf("%s: returned no data (range %d samples, instant %d)\n\texpr: %s", q, rr.Samples, ir.Samples, expr)
		default:
			t.Logf("ok %s: %d series, %d samples", q, rr.Series, rr.Samples)
		}
	}
	t.Logf("%d expressions checked (%d dashboards, %d rule queries), %d empty", checked, len(files), len(rules), empty)
	if checked == 0 {
		t.Fatal("no expression checked")
	}
}

func lastCellEnd(ctx context.Context, t *testing.T, p Prom, start, end time.Time) time.Time {
	t.Helper()
	window := end.Sub(start).Round(time.Second)
	// When Prometheus last scraped the series of a cell's end: the loadgen
	// publishes it once the cell's late requests are drained and leaves
	// after its next scrape, whose staleness marker follows one interval
	// later. At that scrape every loadgen series of the run is fresh.
	expr := "max(max_over_time(timestamp(" + cellEndMetric + ")[" + strconv.Itoa(int(window.Seconds())) + "s:1s]))"
	v, err := p.Scalar(ctx, expr, end)
	if err != nil || v == 0 {
		t.Logf("no cell window ended in the last %s (%v): instant queries at now", window, err)
		return end
	}
	return time.UnixMilli(int64(v * 1000))
}

const cellEndMetric = "proxybench_cell_window_end_timestamp_seconds"

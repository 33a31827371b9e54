//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/interp"
	"proxybench/internal/metricdefs"
	"proxybench/internal/promapi"
)

// TestDirectControl: nginx and the direct control (no proxy) in front of
// the fast origin, an open loop at 1000 req/s, two rounds. The direct
// cells must reach the origin without nginx, checked against nginx's own
// request counter (stub_status, through the exporter and Prometheus),
// which must have grown by nginx's cells alone, and against the origin's
// own count, which must have grown by every cell's; the report's "What the proxy adds" must give nginx a positive
// added p50 with an interval and a CPU per request; and the direct
// control must win nothing and miss no proxy series.
func TestDirectControl(t *testing.T) {
	results := t.TempDir()
	began := time.Now()
	// The baseline is a scrape after the earlier tests' traffic through
	// nginx (its last requests reach the counter at the exporter's next
	// scrape).
	before := nginxRequests(t, scrapedSince(t, metricdefs.NginxRequests.Name, began))
	atOrigin := originServed(t)
	cells := runCells(t, results, "direct", nil, "-tier", "4s", "-proxies", "nginx", "-origins", "fast", "-direct",
		"-rate", "1000", "-repeats", "2", "-control=false")
	time.Sleep(2 * time.Second) // the exporter's scrape of nginx after the run
	served := nginxRequests(t, time.Now()) - before
	reached := originServed(t) - atOrigin
	t.Logf("run and report in %s", time.Since(began).Round(time.Second))

	var viaNginx, direct int64
	var cad float64 // cAdvisor's CPU seconds of nginx's cells
	for _, id := range []string{"nginx.fast.simple.4s.r1", "nginx.fast.simple.4s.r2", "direct.fast.simple.4s.r1", "direct.fast.simple.4s.r2"} {
		c := cell(t, cells, id)
		if c.Requests < 3000 { // 4000 offered
			t.Errorf("%s: %d requests", id, c.Requests)
		}
		if strings.HasPrefix(id, "direct.") {
			direct += c.Requests
			if sev, why := c.flag("missing_metrics"); sev != "" {
				t.Errorf("%s: missing_metrics (%s): the direct control has no proxy series to miss", id, why)
			}
		} else {
			viaNginx += c.Requests
			cad += cadvisorCPU(t, "nginx", c.Start, c.End)
		}
	}
	// nginx's counter also holds the warm-up-free cells' late completions,
	// the preflight's requests and the exporter's stub_status scrapes (one
	// a second): a few hundred at most, never the direct cells' thousands.
	t.Logf("nginx served %d requests; its cells count %d, the direct cells %d", served, viaNginx, direct)
	if served < viaNginx || served > viaNginx+direct/4 {
		t.Errorf("nginx served %d requests during the run; its cells count %d and the direct cells %d: the direct cells went through nginx",
			served, viaNginx, direct)
	}
	// The origin's own count (its answers to GET /): every request a cell
	// counted, through nginx or not, reached it; beyond them only the
	// preflight's requests, late completions and HAProxy's health checks
	// of the faults pool (one a second, while HAProxy is not paused).
	t.Logf("the fast origin answered %d GET /; the cells count %d", reached, viaNginx+direct)
	if reached < viaNginx+direct || reached > viaNginx+direct+(viaNginx+direct)/100+100 {
		t.Errorf("the fast origin answered %d GET / during the run; the cells count %d through nginx and %d direct", reached, viaNginx, direct)
	}

	b, err := os.ReadFile(filepath.Join(results, "direct", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		ProxyTax []struct {
			Proxy, Origin string
			Pairs         int      `json:"pairs"`
			AddedP50      est      `json:"added_p50_us"`
			AddedP99      est      `json:"added_p99_us"`
			CPU           est      `json:"proxy_cpu_us_per_request"`
			Direct        *float64 `json:"direct_p50_us"`
			Note          string   `json:"note"`
			Unpaired      []string `json:"unpaired"`
		} `json:"proxy_tax"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.ProxyTax) != 1 || r.ProxyTax[0].Proxy != "nginx" {
		t.Fatalf("proxy_tax %+v, want one row for nginx", r.ProxyTax)
	}
	x := r.ProxyTax[0]
	t.Logf("nginx -> fast at 1000 req/s: direct p50 %v µs; added p50 %s, p99 %s µs; CPU %s µs/request; unpaired %v",
		optText(x.Direct), x.AddedP50, x.AddedP99, x.CPU, x.Unpaired)
	if x.Pairs != 2 || x.AddedP50.Mean == nil || *x.AddedP50.Mean <= 0 || x.AddedP50.Low == nil || x.AddedP50.High == nil {
		t.Errorf("nginx: %d pairs, added p50 %s: want 2 pairs and a positive added p50 with an interval (%s)", x.Pairs, x.AddedP50, x.Note)
	}
	if x.CPU.Mean == nil || *x.CPU.Mean <= 0 {
		t.Errorf("nginx: CPU per request %s, want a positive one", x.CPU)
	} else {
		// The report's CPU is the proxy's cgroup counter read by the
		// loadgen at each window's edges. cAdvisor reads the same
		// container on its own, into Prometheus every 1-2 s: its counter
		// interpolated at each nginx cell's window edges, per request of
		// nginx's cells. Counting the direct cells' requests too would
		// halve the report's number.
		per := 1e6 * cad / float64(viaNginx)
		t.Logf("nginx CPU per request: report %.1f µs, cAdvisor %.1f µs (%.3f s over %d requests)", *x.CPU.Mean, per, cad, viaNginx)
		if d := per / *x.CPU.Mean; d < 0.8 || d > 1.5 {
			t.Errorf("nginx CPU per request: the report says %.1f µs, cAdvisor's counter %.1f µs", *x.CPU.Mean, per)
		}
	}

	md, err := os.ReadFile(filepath.Join(results, "direct", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(md)
	if !strings.Contains(doc, "9. What the proxy adds") {
		t.Error("report.md has no section What the proxy adds")
	}
	winners := between(doc, "Who won each origin", "\n\n")
	matrices := between(doc, "2. Proxy × origin matrices", "Spread across repeats") // the spread table lists every cell group, direct too
	if winners == "" || matrices == "" {
		t.Fatalf("report.md lacks the winner table or the matrices")
	}
	if strings.Contains(winners, "direct") || strings.Contains(matrices, "direct") {
		t.Errorf("the direct control is in the winner table or the matrices:\n%s\n%s", winners, matrices)
	}
}

// est is an Estimate of report.json.
type est struct {
	N    int      `json:"n"`
	Mean *float64 `json:"mean"`
	Low  *float64 `json:"ci95_low"`
	High *float64 `json:"ci95_high"`
}

func (e est) String() string {
	return optText(e.Mean) + " [" + optText(e.Low) + ", " + optText(e.High) + "]"
}

// optText is a nullable number of report.json, to one decimal.
func optText(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

// between is s from the first from to the next to after it.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s[len(from):], to); j >= 0 {
		return s[:len(from)+j]
	}
	return s
}

// nginxRequests is nginx's own count of the requests it has handled
// (stub_status "requests", which the exporter publishes as
// nginx_http_requests_total) as Prometheus last scraped it at t, or
// once it has a sample when it has none yet.
func nginxRequests(t *testing.T, at time.Time) int64 {
	t.Helper()
	c, err := promapi.New(promURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Query(context.Background(), metricdefs.NginxRequests.Name, at)
	for end := time.Now().Add(15 * time.Second); err == nil && len(v) == 0 && time.Now().Before(end); { // a stack just up: its first scrapes
		time.Sleep(time.Second)
		at = time.Now()
		v, err = c.Query(context.Background(), metricdefs.NginxRequests.Name, at)
	}
	if err != nil || len(v) != 1 {
		t.Fatalf("%s at %s: %v, %v (is the stack up?)", metricdefs.NginxRequests.Name, at.Format(time.RFC3339), v, err)
	}
	return int64(v[0].Value)
}

// scrapedSince waits until Prometheus holds a sample of metric taken at or
// after t0 (at most 10 s) and returns its time.
func scrapedSince(t *testing.T, metric string, t0 time.Time) time.Time {
	t.Helper()
	c, err := promapi.New(promURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		v, err := c.Query(context.Background(), "max(timestamp("+metric+"))", time.Now())
		if err == nil && len(v) == 1 && v[0].Value >= float64(t0.UnixMilli())/1000 {
			return time.UnixMilli(int64(v[0].Value * 1000))
		}
		if time.Now().After(end) {
			t.Fatalf("no sample of %s since %s in Prometheus within 10 s: %v %v", metric, t0.Format(time.RFC3339Nano), v, err)
		}
	}
}

// originServed is the fast origin's own count of the GET / it answered:
// SIGHUP makes it log msg=served root_requests=N (origins/README.md).
func originServed(t *testing.T) int64 {
	t.Helper()
	const ctr = "proxybench-origin-fast"
	re := regexp.MustCompile(`msg=served root_requests=(\d+)`)
	seen := len(re.FindAllString(docker(t, "logs", ctr), -1))
	docker(t, "kill", "--signal", "HUP", ctr)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if m := re.FindAllStringSubmatch(docker(t, "logs", ctr), -1); len(m) > seen {
			n, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
			return n
		}
	}
	t.Fatalf("%s logged no count within 10 s of SIGHUP", ctr)
	return 0
}

// cadvisorCPU is the CPU seconds cAdvisor counted for service's container
// over [from, to] exactly: its counter interpolated at both instants
// between the raw samples around them (each timestamped when cAdvisor read
// the cgroup, every 1-2 s). An increase from the last sample before from
// to the last before to would span up to 2 s more, with whatever ran in
// the container then (a health probe's exec costs nginx about 40 ms).
func cadvisorCPU(t *testing.T, service string, from, to time.Time) float64 {
	t.Helper()
	c, err := promapi.New(promURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := to.Add(4 * time.Second)
	q := fmt.Sprintf(`%s{service=%q,cpu=~"total|"}[%s] @ %s`, metricdefs.ContainerCPUUsage.Name, service,
		promapi.Duration(at.Sub(from.Add(-4*time.Second))), promapi.FormatTime(at))
	res, err := c.QueryMatrix(context.Background(), q, at)
	if err != nil || len(res) != 1 {
		t.Fatalf("%s: %d series, %v", q, len(res), err)
	}
	ts, vs := res[0].Times, res[0].Values
	value := func(x time.Time) float64 {
		v, _, ok := interp.At(ts, vs, x)
		if !ok {
			t.Fatalf("%s: no cAdvisor samples around %s (%d samples)", service, x.Format("15:04:05.000"), len(ts))
		}
		return v
	}
	return value(to) - value(from)
}

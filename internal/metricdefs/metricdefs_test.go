package metricdefs

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"proxybench/internal/metricslint"
)

func TestRowsAreWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, d := range All() {
		if seen[d.Name] {
			t.Errorf("%s: two rows", d.Name)
		}
		seen[d.Name] = true
		if got, ok := Lookup(d.Name); !ok || got != d {
			t.Errorf("Lookup(%s) = %v, %v", d.Name, got, ok)
		}
		if (d.Type == Counter) != strings.HasSuffix(d.Name, "_total") && !upstream(d) {
			t.Errorf("%s: a %s; counters and only counters end in _total", d.Name, d.Type)
		}
		switch d.Owner {
		case Loadgen, Exporter:
			if d.Help == "" {
				t.Errorf("%s: published by the %s without help", d.Name, d.Owner)
			}
		case Outside:
			if d.Help != "" {
				t.Errorf("%s: an outside series with help of ours", d.Name)
			}
		default:
			t.Errorf("%s: owner %q", d.Name, d.Owner)
		}
	}
	if d, ok := Lookup(GCPause.Bucket()); !ok || d != GCPause {
		t.Errorf("Lookup(%s) = %v, %v; want the histogram's row", GCPause.Bucket(), d, ok)
	}
	if _, ok := Lookup(Requests.Name + "_bucket"); ok {
		t.Error("a counter's _bucket resolved to its row")
	}
	if Requests.Family() != "proxybench_requests" || GCPause.Family() != GCPause.Name {
		t.Errorf("families %s, %s", Requests.Family(), GCPause.Family())
	}
}

// Every published row, registered and given a series, passes promlint and
// promtool check metrics.
func TestPublishedRowsLintClean(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	for _, d := range All() {
		if d.Owner == Outside || upstream(d) {
			continue
		}
		lv := make([]string, len(d.Labels))
		for i := range lv {
			lv[i] = "x"
		}
		switch d.Type {
		case Counter:
			v := d.NewCounterVec()
			v.WithLabelValues(lv...).Inc()
			reg.MustRegister(v)
		case Gauge:
			v := d.NewGaugeVec()
			v.WithLabelValues(lv...).Set(1)
			reg.MustRegister(v)
		case Histogram:
			v := d.NewHistogramVec(prometheus.HistogramOpts{Buckets: []float64{1}})
			v.WithLabelValues(lv...).Observe(0.5)
			reg.MustRegister(v)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	metricslint.Check(t, b.Bytes())
}

// upstream rows keep the names of the exporter they stand in for
// (nginx-prometheus-exporter), whose counters lack _total.
func upstream(d *Def) bool { return d.Owner == Exporter && strings.HasPrefix(d.Name, "nginx_") }

func TestNewDescKeepsConstantLabelsApart(t *testing.T) {
	t.Parallel()
	got := ScrapeCollectorSuccess.NewDesc(prometheus.Labels{"collector": "nginx"}).String()
	want := prometheus.NewDesc(ScrapeCollectorSuccess.Name, ScrapeCollectorSuccess.Help, nil, prometheus.Labels{"collector": "nginx"}).String()
	if got != want {
		t.Errorf("desc %s, want %s", got, want)
	}
}

// docs/design-notes.md lists every series proxybench publishes, and every
// full series name the docs mention is a row.
var seriesRe = regexp.MustCompile("(?:proxybench|nginx)_[a-z0-9_]*[a-z0-9]\\b")

func TestDocsNameTheTable(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	notes, err := os.ReadFile(filepath.Join(root, "docs", "design-notes.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range All() {
		if d.Owner != Outside && !bytes.Contains(notes, []byte("`"+d.Name+"`")) {
			t.Errorf("docs/design-notes.md does not list %s (%s)", d.Name, d.Owner)
		}
	}
	for _, f := range []string{"README.md", "docs/design-notes.md", "docs/scenarios.md", "docs/security.md", "loadgen/README.md", "loadgen/RUNNER.md",
		"exporter/README.md", "reporter/README.md"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range seriesRe.FindAllIndex(raw, -1) {
			name := string(raw[m[0]:m[1]])
			if m[1] < len(raw) && (raw[m[1]] == '*' || raw[m[1]] == '_') {
				continue // a prefix: proxybench_gc_*
			}
			if _, ok := Lookup(name); !ok {
				t.Errorf("%s names %s, which is no row of internal/metricdefs", f, name)
			}
		}
	}
}

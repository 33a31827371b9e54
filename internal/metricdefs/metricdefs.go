// Package metricdefs owns the names and help of every series proxybench
// publishes, with their type and label names: one table, one row a metric,
// in the manner of cAdvisor's metrics/prometheus.go. The loadgen and the
// exporter register their series from these rows; the reporter's queries,
// the synthetic runs of the tests and the dashboards take the names from
// them too. A smaller section names the outside series (cAdvisor's
// container_*, the process collector's, Prometheus's own) that more than
// one component reads. The checks of grafana/dashcheck fail on any name a
// rule or dashboard reads that is neither a row here nor a recorded series,
// so a rename breaks a test, not a dashboard.
package metricdefs

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Type is a metric's type as the exposition formats name it.
type Type string

// Types of the rows.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Owner is who publishes a series.
type Owner string

// Owners of the rows.
const (
	Loadgen  Owner = "loadgen"  // the loadgen's /metrics (job loadgen)
	Exporter Owner = "exporter" // the exporter's /metrics (job exporter)
	Outside  Owner = "outside"  // not proxybench's: cAdvisor, client_golang's collectors, Prometheus
)

// Def is one row: a metric family.
type Def struct {
	Name   string // the full series name (counters end in _total)
	Help   string // "" for Outside rows: their help is their publisher's
	Type   Type
	Labels []string // label names, in registration order (constant ones included)
	Owner  Owner
}

var all []*Def

// def adds a row to the table (All) and returns it.
func def(d Def) *Def {
	all = append(all, &d)
	return &d
}

// All is every row: the loadgen's, the exporter's, then the outside series.
func All() []*Def { return slices.Clone(all) }

// Lookup finds the row of a series name; a histogram's _bucket, _count and
// _sum series belong to its row.
func Lookup(series string) (*Def, bool) {
	for _, d := range all {
		if d.Name == series {
			return d, true
		}
	}
	for _, sfx := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(series, sfx); ok {
			for _, d := range all {
				if d.Type == Histogram && d.Name == base {
					return d, true
				}
			}
		}
	}
	return nil, false
}

// Family is the name of the OpenMetrics metric family: a counter's name
// without _total.
func (d *Def) Family() string {
	if d.Type == Counter {
		return strings.TrimSuffix(d.Name, "_total")
	}
	return d.Name
}

// Bucket, Count and Sum name a classic histogram's series.
func (d *Def) Bucket() string { return d.Name + "_bucket" }

// Count is the histogram's observation count series.
func (d *Def) Count() string { return d.Name + "_count" }

// Sum is the histogram's sum of observations series.
func (d *Def) Sum() string { return d.Name + "_sum" }

func (d *Def) opts() prometheus.Opts { return prometheus.Opts{Name: d.Name, Help: d.Help} }

func (d *Def) labels() []string { return slices.Clone(d.Labels) }

// NewCounterVec makes the row's counter vector.
func (d *Def) NewCounterVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts(d.opts()), d.labels())
}

// NewGaugeVec makes the row's gauge vector.
func (d *Def) NewGaugeVec() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts(d.opts()), d.labels())
}

// NewHistogramVec makes the row's histogram vector with the buckets (native
// and classic) of o; o's name and help are the row's.
func (d *Def) NewHistogramVec(o prometheus.HistogramOpts) *prometheus.HistogramVec {
	o.Name, o.Help = d.Name, d.Help
	return prometheus.NewHistogramVec(o, d.labels())
}

// NewDesc describes the row for a custom collector. Labels given in
// constant are constant; the row's other labels are variable, in order.
func (d *Def) NewDesc(constant prometheus.Labels) *prometheus.Desc {
	var variable []string
	for _, l := range d.Labels {
		if _, ok := constant[l]; !ok {
			variable = append(variable, l)
		}
	}
	return prometheus.NewDesc(d.Name, d.Help, variable, constant)
}

// Label sets shared by several rows.
var (
	// TrafficLabels are the labels of the loadgen's traffic series;
	// protocol is what the attack spoke: h1, tls, h2 or h3.
	TrafficLabels = []string{"proxy", "origin", "scenario", "protocol"}
	// CellLabels are the labels of the cell window series; all are bounded
	// by the plan.
	CellLabels = []string{"run", "cell", "proxy", "origin", "scenario", "tier", "arm", "repeat"}
	// GCLabels are the labels of the exporter's gctrace series.
	GCLabels = []string{"container", "service"}
)

// WorkerLabel is the constant label every series of a loadgen worker
// (`loadgen worker`, one of several loadgens run as one instrument)
// carries besides its row's labels: the worker's index, bounded by the
// number of workers. The loadgen that runs a cell alone has none.
const WorkerLabel = "worker"

func with(base []string, extra ...string) []string {
	return append(slices.Clone(base), extra...)
}

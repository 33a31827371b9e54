package attack

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/loadgen/internal/wire"
)

// Metrics are the loadgen traffic series of docs/design-notes.md. The cell
// window series belong to the runner. One Metrics serves many runs: each run
// curries its labels once (runMetrics) so the hot path never hashes labels.
type Metrics struct {
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	bytes       *prometheus.CounterVec
	inFlight    *prometheus.GaugeVec
	scheduled   *prometheus.CounterVec
	sent        *prometheus.CounterVec
	lag         *prometheus.HistogramVec
	targetRate  *prometheus.GaugeVec
	wrongOrigin *prometheus.CounterVec
	lateCodes   *prometheus.CounterVec
	lateErrors  *prometheus.CounterVec
	missed      *prometheus.CounterVec
	capped      *prometheus.CounterVec
}

// latencyBuckets are the classic buckets kept next to the native ones so
// that a Prometheus without native histograms still gets a usable latency:
// 100 µs .. 60 s, about three per decade.
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

var trafficLabels = []string{"proxy", "origin", "scenario"}

// NewMetrics registers the loadgen traffic metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            name,
			Help:                            help,
			Buckets:                         latencyBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: 0,
		}, trafficLabels)
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, trafficLabels...), extra...))
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, trafficLabels)
	}
	m := &Metrics{
		requests:    counter("proxybench_requests_total", "Requests completed with an HTTP status, by status code.", "code"),
		errors:      counter("proxybench_request_errors_total", "Requests that got no complete HTTP response, by reason (timeout, refused, reset, eof, protocol, header_too_large, body_too_large, canceled, other).", "reason"),
		duration:    hist("proxybench_request_duration_seconds", "Request latency until the last body byte: from the intended send time in open loop (coordinated omission corrected), from the actual send time in closed loop."),
		bytes:       counter("proxybench_response_bytes_total", "Response body bytes read."),
		inFlight:    gauge("proxybench_requests_in_flight", "Requests sent and not yet completed, summed over the attacks running with these labels."),
		scheduled:   counter("proxybench_open_loop_scheduled_total", "Open loop: requests whose intended send time has come."),
		sent:        counter("proxybench_open_loop_sent_total", "Open loop: requests actually sent."),
		lag:         hist("proxybench_open_loop_lag_seconds", "Open loop: actual minus intended send time, of the sends that did not wait for max in flight (the loadgen's own delay)."),
		targetRate:  gauge("proxybench_target_rate_requests_per_second", "Offered rate, summed over the attacks running with these labels (0 = closed loop)."),
		wrongOrigin: counter("proxybench_wrong_origin_total", "Responses whose X-Origin is not the expected origin."),
		lateCodes:   counter("proxybench_requests_late_total", "Requests completed with an HTTP status after their attack's planned end (also counted in proxybench_requests_total), by status code.", "code"),
		lateErrors:  counter("proxybench_request_errors_late_total", "Requests that got no HTTP status after their attack's planned end (also counted in proxybench_request_errors_total), by reason.", "reason"),
		missed:      counter("proxybench_open_loop_missed_total", "Open loop: requests due inside an attack's window and never sent (added at the window's end)."),
		capped:      counter("proxybench_open_loop_capped_total", "Open loop: sends that waited because max in flight was reached (the target saturated, not the loadgen)."),
	}
	reg.MustRegister(m.requests, m.errors, m.duration, m.bytes, m.inFlight, m.scheduled,
		m.sent, m.lag, m.targetRate, m.wrongOrigin, m.lateCodes, m.lateErrors, m.missed, m.capped)
	return m
}

// errReason indexes the bounded error reasons (package wire classifies
// failures).
type errReason = wire.Reason

const numReasons = wire.NumReasons

var reasonNames = wire.ReasonNames

// runMetrics holds the series of one run with every label already bound.
type runMetrics struct {
	codes       *prometheus.CounterVec // curried: only code left
	errors      [numReasons]prometheus.Counter
	duration    prometheus.Observer
	bytes       prometheus.Counter
	inFlight    prometheus.Gauge
	scheduled   prometheus.Counter
	sent        prometheus.Counter
	lag         prometheus.Observer
	targetRate  prometheus.Gauge
	wrongOrigin prometheus.Counter
	lateCodes   *prometheus.CounterVec // curried: only code left
	lateErrors  [numReasons]prometheus.Counter
	missed      prometheus.Counter
	capped      prometheus.Counter
}

func (m *Metrics) forRun(l Labels) *runMetrics {
	lv := prometheus.Labels{"proxy": l.Proxy, "origin": l.Origin, "scenario": l.Scenario}
	vals := []string{l.Proxy, l.Origin, l.Scenario}
	r := &runMetrics{
		codes:       m.requests.MustCurryWith(lv),
		duration:    m.duration.WithLabelValues(vals...),
		bytes:       m.bytes.WithLabelValues(vals...),
		inFlight:    m.inFlight.WithLabelValues(vals...),
		scheduled:   m.scheduled.WithLabelValues(vals...),
		sent:        m.sent.WithLabelValues(vals...),
		lag:         m.lag.WithLabelValues(vals...),
		targetRate:  m.targetRate.WithLabelValues(vals...),
		wrongOrigin: m.wrongOrigin.WithLabelValues(vals...),
		lateCodes:   m.lateCodes.MustCurryWith(lv),
		missed:      m.missed.WithLabelValues(vals...),
		capped:      m.capped.WithLabelValues(vals...),
	}
	for i := range r.errors {
		r.errors[i] = m.errors.WithLabelValues(append(vals, reasonNames[i])...)
		r.lateErrors[i] = m.lateErrors.WithLabelValues(append(vals, reasonNames[i])...)
	}
	return r
}

// code returns the counter of one status code; workers cache the result.
func (r *runMetrics) code(c int) prometheus.Counter {
	return r.codes.WithLabelValues(strconv.Itoa(c))
}

// lateCode returns the late counter of one status code.
func (r *runMetrics) lateCode(c int) prometheus.Counter {
	return r.lateCodes.WithLabelValues(strconv.Itoa(c))
}

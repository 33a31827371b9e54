package attack

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/metricdefs"
	"proxybench/loadgen/internal/wire"
)

// Metrics are the loadgen traffic series of internal/metricdefs. The cell
// window series belong to the runner. One Metrics serves many runs: each run
// curries its labels once (runMetrics) so the hot path never hashes labels.
type Metrics struct {
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	bytes       *prometheus.CounterVec
	inFlight    *prometheus.GaugeVec
	inFlightS   *prometheus.CounterVec
	scheduled   *prometheus.CounterVec
	sent        *prometheus.CounterVec
	lag         *prometheus.HistogramVec
	targetRate  *prometheus.GaugeVec
	wrongOrigin *prometheus.CounterVec
	lateCodes   *prometheus.CounterVec
	lateErrors  *prometheus.CounterVec
	missed      *prometheus.CounterVec
	queued      *prometheus.CounterVec
	capped      *prometheus.CounterVec
	handshakes  *prometheus.CounterVec
	hsDuration  *prometheus.HistogramVec
}

// latencyBuckets are the classic buckets kept next to the native ones so
// that a Prometheus without native histograms still gets a usable latency:
// 100 µs .. 60 s, about three per decade.
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// NewMetrics registers the loadgen traffic metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	hist := func(d *metricdefs.Def) *prometheus.HistogramVec {
		return d.NewHistogramVec(prometheus.HistogramOpts{
			Buckets:                         latencyBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: 0,
		})
	}
	m := &Metrics{
		requests:    metricdefs.Requests.NewCounterVec(),
		errors:      metricdefs.RequestErrors.NewCounterVec(),
		duration:    hist(metricdefs.RequestDuration),
		bytes:       metricdefs.ResponseBytes.NewCounterVec(),
		inFlight:    metricdefs.RequestsInFlight.NewGaugeVec(),
		inFlightS:   metricdefs.RequestsInFlightSeconds.NewCounterVec(),
		scheduled:   metricdefs.OpenLoopScheduled.NewCounterVec(),
		sent:        metricdefs.OpenLoopSent.NewCounterVec(),
		lag:         hist(metricdefs.OpenLoopLag),
		targetRate:  metricdefs.TargetRate.NewGaugeVec(),
		wrongOrigin: metricdefs.WrongOrigin.NewCounterVec(),
		lateCodes:   metricdefs.RequestsLate.NewCounterVec(),
		lateErrors:  metricdefs.RequestErrorsLate.NewCounterVec(),
		missed:      metricdefs.OpenLoopMissed.NewCounterVec(),
		queued:      metricdefs.OpenLoopQueued.NewCounterVec(),
		capped:      metricdefs.OpenLoopCapped.NewCounterVec(),
		handshakes:  metricdefs.TLSHandshakes.NewCounterVec(),
		hsDuration:  hist(metricdefs.TLSHandshakeDuration),
	}
	reg.MustRegister(m.requests, m.errors, m.duration, m.bytes, m.inFlight, m.inFlightS, m.scheduled,
		m.sent, m.lag, m.targetRate, m.wrongOrigin, m.lateCodes, m.lateErrors, m.missed, m.queued, m.capped,
		m.handshakes, m.hsDuration)
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
	inFlightS   prometheus.Counter
	scheduled   prometheus.Counter
	sent        prometheus.Counter
	lag         prometheus.Observer
	targetRate  prometheus.Gauge
	wrongOrigin prometheus.Counter
	lateCodes   *prometheus.CounterVec // curried: only code left
	lateErrors  [numReasons]prometheus.Counter
	missed      prometheus.Counter
	queued      prometheus.Counter
	capped      prometheus.Counter

	handshakes        [wire.NumHandshakeResults]prometheus.Counter
	handshakeDuration [2]prometheus.Observer // resumed false, true
}

func (m *Metrics) forRun(l Labels, p wire.Proto) *runMetrics {
	lv := prometheus.Labels{"proxy": l.Proxy, "origin": l.Origin, "scenario": l.Scenario, "protocol": string(p)}
	vals := []string{l.Proxy, l.Origin, l.Scenario, string(p)}
	r := &runMetrics{
		codes:       m.requests.MustCurryWith(lv),
		duration:    m.duration.WithLabelValues(vals...),
		bytes:       m.bytes.WithLabelValues(vals...),
		inFlight:    m.inFlight.WithLabelValues(vals...),
		inFlightS:   m.inFlightS.WithLabelValues(vals...),
		scheduled:   m.scheduled.WithLabelValues(vals...),
		sent:        m.sent.WithLabelValues(vals...),
		lag:         m.lag.WithLabelValues(vals...),
		targetRate:  m.targetRate.WithLabelValues(vals...),
		wrongOrigin: m.wrongOrigin.WithLabelValues(vals...),
		lateCodes:   m.lateCodes.MustCurryWith(lv),
		missed:      m.missed.WithLabelValues(vals...),
		queued:      m.queued.WithLabelValues(vals...),
		capped:      m.capped.WithLabelValues(vals...),
	}
	for i := range r.errors {
		r.errors[i] = m.errors.WithLabelValues(append(vals, reasonNames[i])...)
		r.lateErrors[i] = m.lateErrors.WithLabelValues(append(vals, reasonNames[i])...)
	}
	if p.Secure() { // h1 publishes no handshake series
		for i := range r.handshakes {
			r.handshakes[i] = m.handshakes.WithLabelValues(append(vals, wire.HandshakeResultNames[i])...)
		}
		for i, resumed := range []string{"false", "true"} {
			r.handshakeDuration[i] = m.hsDuration.WithLabelValues(append(vals, resumed)...)
		}
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

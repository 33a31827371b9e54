package attack

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
)

func histOf(us ...int64) *hdrhistogram.Histogram {
	h := newHist()
	for _, v := range us {
		h.RecordValue(v) //nolint:errcheck // in range
	}
	return h
}

func TestMergeLateAndOpenLoop(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := &Result{Start: t0, End: t0.Add(10 * time.Second), Requests: 90, Scheduled: 100, Sent: 95, Missed: 5, Capped: 7, Held: 2,
		Codes: map[int]int64{200: 90}, Late: 3, LateCodes: map[int]int64{200: 2}, LateReasons: map[string]int64{"timeout": 1},
		DrainEnd: t0.Add(11 * time.Second), LagP99: 2 * time.Millisecond, Hist: histOf(100, 200), Protocol: ProtoTLS,
		TLS: &manifest.TLS{ALPN: "http/1.1", Version: "TLS 1.3", HandshakesFull: 1, HandshakesResumed: 4}}
	b := &Result{Start: t0.Add(time.Millisecond), End: t0.Add(10*time.Second + time.Millisecond), Requests: 10, Scheduled: 10,
		Sent: 10, Codes: map[int]int64{401: 10}, Late: 1, LateCodes: map[int]int64{401: 1}, LateReasons: map[string]int64{},
		DrainEnd: t0.Add(12 * time.Second), LagP99: time.Millisecond, Hist: histOf(300), Protocol: ProtoTLS,
		TLS: &manifest.TLS{ALPN: "http/1.1", Version: "TLS 1.3", HandshakesResumed: 2, CertErrors: 1}}
	m := Merge(a, nil, b)
	if m.Late != 4 || m.LateCodes[200] != 2 || m.LateCodes[401] != 1 || m.LateReasons["timeout"] != 1 {
		t.Errorf("late %d %v %v", m.Late, m.LateCodes, m.LateReasons)
	}
	if m.Missed != 5 || m.Capped != 7 || m.Held != 2 || m.Scheduled != 110 || m.Sent != 105 || m.LagP99 != 2*time.Millisecond {
		t.Errorf("missed %d capped %d held %d scheduled %d sent %d lag %v", m.Missed, m.Capped, m.Held, m.Scheduled, m.Sent, m.LagP99)
	}
	if !m.DrainEnd.Equal(t0.Add(12*time.Second)) || !m.Start.Equal(t0) || !m.End.Equal(b.End) {
		t.Errorf("window %v .. %v, drain end %v", m.Start, m.End, m.DrainEnd)
	}
	if m.Hist.TotalCount() != 3 || a.Hist.TotalCount() != 2 {
		t.Errorf("merged histogram %d samples, the first variant's now %d (want 3 and its own 2)", m.Hist.TotalCount(), a.Hist.TotalCount())
	}
	if m.Protocol != ProtoTLS || m.TLS.ALPN != "http/1.1" || m.TLS.Handshakes() != 8 || a.TLS.Handshakes() != 5 {
		t.Errorf("protocol %s, TLS %+v (the first part's now %+v)", m.Protocol, m.TLS, a.TLS)
	}
	if Merge(nil, nil) != nil {
		t.Error("a merge of nothing is a result")
	}
}

// samples draws n latencies in µs from one of several shapes: narrow,
// heavy-tailed, bimodal, and spread over the histogram's whole range.
func samples(rng *rand.Rand, n int) []int64 {
	shape := rng.IntN(4)
	out := make([]int64, n)
	for i := range out {
		var v float64
		switch shape {
		case 0:
			v = 800 + rng.NormFloat64()*50
		case 1:
			v = math.Exp(6 + 1.5*rng.NormFloat64())
		case 2:
			v = 300 + rng.Float64()*100
			if rng.IntN(100) == 0 {
				v = 2e6 + rng.Float64()*1e6
			}
		default:
			v = math.Exp(rng.Float64() * math.Log(histMax))
		}
		out[i] = clampUs(time.Duration(v) * time.Microsecond)
	}
	return out
}

// The merge of the workers' histograms is the histogram of the union of
// their raw samples, bucket by bucket: its count is the sum of theirs and
// every quantile is the union's, over randomized parts of varied sizes.
func TestMergeQuantilesAreTheUnions(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 3))
	sizes := []int{0, 1, 2, 10, 999, 20000}
	for round := range 40 {
		parts := 1 + rng.IntN(6)
		union := newHist()
		rs := make([]*Result, parts)
		var sum int64
		for i := range rs {
			n := sizes[rng.IntN(len(sizes))]
			if round%5 == 0 {
				n = rng.IntN(5000)
			}
			h := newHist()
			for _, v := range samples(rng, n) {
				h.RecordValue(v)     //nolint:errcheck // clamped
				union.RecordValue(v) //nolint:errcheck // clamped
			}
			rs[i] = &Result{Requests: int64(n), Hist: h}
			sum += int64(n)
		}
		m := Merge(rs...)
		if m.Requests != sum || m.Hist.TotalCount() != sum || union.TotalCount() != sum {
			t.Fatalf("round %d: requests %d, merged count %d, union %d, want %d", round, m.Requests, m.Hist.TotalCount(), union.TotalCount(), sum)
		}
		if !m.Hist.Equals(union) {
			t.Fatalf("round %d: the merged histogram is not the union's", round)
		}
		for _, q := range []float64{0, 50, 90, 99, 99.9, 99.99, 100} {
			if got, want := m.Hist.ValueAtQuantile(q), union.ValueAtQuantile(q); got != want {
				t.Fatalf("round %d: p%v merged %d µs, union %d µs", round, q, got, want)
			}
		}
		if manifest.LatencyOf(m.Hist) != manifest.LatencyOf(union) {
			t.Fatalf("round %d: latency %+v, union's %+v", round, manifest.LatencyOf(m.Hist), manifest.LatencyOf(union))
		}
	}
}

// A worker's parts (its attacks of a mix's variants) merge into one by
// index; the merged workers are ordered by index.
func TestMergeWorkersByIndex(t *testing.T) {
	t.Parallel()
	part := func(reqs int64, us ...int64) *Result {
		return &Result{Requests: reqs, Codes: map[int]int64{200: reqs}, Hist: histOf(us...)}
	}
	lg := &manifest.LoadgenCPU{CPUSeconds: 1}
	v1 := &Result{Requests: 5, Workers: []WorkerResult{
		{Index: 1, Concurrency: 2, Result: part(3, 10, 20, 30), Skew: time.Millisecond, Loadgen: lg},
		{Index: 0, Concurrency: 3, Result: part(2, 40, 50)},
	}}
	v2 := &Result{Requests: 2, Workers: []WorkerResult{
		{Index: 0, Concurrency: 1, Result: part(1, 60), Err: "killed", Skew: -3 * time.Millisecond},
		{Index: 1, Concurrency: 1, Result: part(1, 70), Skew: 2 * time.Millisecond},
	}}
	m := Merge(v1, v2)
	if len(m.Workers) != 2 || m.Workers[0].Index != 0 || m.Workers[1].Index != 1 {
		t.Fatalf("workers %+v", m.Workers)
	}
	w0, w1 := m.Workers[0], m.Workers[1]
	if w0.Result.Requests != 3 || w0.Result.Hist.TotalCount() != 3 || w0.Concurrency != 4 || w0.Err != "killed" || w0.Skew != -3*time.Millisecond {
		t.Errorf("worker 0 %+v: requests %d", w0, w0.Result.Requests)
	}
	if w1.Result.Requests != 4 || w1.Result.Hist.TotalCount() != 4 || w1.Concurrency != 3 || w1.Err != "" || w1.Skew != 2*time.Millisecond || w1.Loadgen != lg {
		t.Errorf("worker 1 %+v: requests %d", w1, w1.Result.Requests)
	}
	if p := v1.Workers[0].Result; p.Requests != 3 || p.Hist.TotalCount() != 3 || v1.Workers[0].Index != 1 {
		t.Errorf("the merge changed a part: %d requests, %d in its histogram", p.Requests, p.Hist.TotalCount())
	}
}

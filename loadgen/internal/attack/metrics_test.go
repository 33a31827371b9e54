package attack

import (
	"context"
	"math"
	"net/http"
	"proxybench/internal/metricslint"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"proxybench/loadgen/internal/load"
)

// nativeBucket returns the bounds of the native bucket holding quantile q,
// the way Prometheus' histogram_quantile finds it (positive buckets only:
// latencies are > 0).
func nativeBucket(t *testing.T, h *dto.Histogram, q float64) (lower, upper float64) {
	t.Helper()
	base := math.Pow(2, math.Pow(2, -float64(h.GetSchema())))
	// HdrHistogram's rank is round(q*N), Prometheus' q*N (the next sample up):
	// with a sparse tail the two can pick neighbouring samples buckets apart,
	// so compare at HdrHistogram's rank.
	rank := math.Floor(q*float64(h.GetSampleCount()) + 0.5)
	seen := float64(h.GetZeroCount())
	idx, di := int32(0), 0
	var cnt int64
	for _, span := range h.GetPositiveSpan() {
		idx += span.GetOffset()
		for i := uint32(0); i < span.GetLength(); i++ {
			cnt += h.GetPositiveDelta()[di]
			di++
			if seen += float64(cnt); seen >= rank {
				upper = math.Pow(base, float64(idx))
				return upper / base, upper
			}
			idx++
		}
	}
	t.Fatalf("rank %v beyond the histogram", rank)
	return 0, 0
}

// The exact HdrHistogram and the native histogram of the same run must agree
// within the native histogram's resolution: factor 1.1 gives schema 3, buckets
// 2^(1/8) = 9 % wide, so the exact quantile must fall in the native bucket
// that holds the same rank (allowing HdrHistogram's own 0.1 %), i.e. within
// about 4.5 % of that bucket's geometric centre.
func TestNativeHistogramAgreesWithHdr(t *testing.T) {
	t.Parallel()
	// A spread of latencies: 0..3 ms of jitter on every request.
	var n int64
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		time.Sleep(time.Duration(n%7) * 400 * time.Microsecond)
	})
	a, reg := newAttacker(t)
	res := mustRun(t, a, Spec{URL: srv.URL, Load: load.Closed{Connections: 1, Duration: 1500 * time.Millisecond},
		Labels: Labels{"nginx", "fast", "simple"}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h *dto.Histogram
	for _, mf := range mfs {
		if mf.GetName() == "proxybench_request_duration_seconds" {
			h = mf.GetMetric()[0].GetHistogram()
		}
	}
	if h == nil || h.GetSchema() != 3 {
		t.Fatalf("no native histogram of schema 3: %v", h)
	}
	if int64(h.GetSampleCount()) != res.Hist.TotalCount() || res.Hist.TotalCount() != res.Requests+res.Late {
		t.Fatalf("native count %d, exact %d, requests %d + late %d", h.GetSampleCount(), res.Hist.TotalCount(), res.Requests, res.Late)
	}
	if len(h.GetBucket()) != len(latencyBuckets) {
		t.Errorf("classic buckets %d, want %d", len(h.GetBucket()), len(latencyBuckets))
	}
	l := latency(res)
	t.Logf("hdr count %d; above p99 %.6f: %d; native zero %d sum %.4f hdr mean %.6f native mean %.6f", res.Hist.TotalCount(), l.P99,
		res.Hist.TotalCount()-countBelow(res, l.P99), h.GetZeroCount(), h.GetSampleSum(), l.Mean, h.GetSampleSum()/float64(h.GetSampleCount()))
	for _, c := range []struct {
		q     float64
		exact float64
	}{{0.5, l.P50}, {0.9, l.P90}, {0.99, l.P99}} {
		lo, hi := nativeBucket(t, h, c.q)
		centre := math.Sqrt(lo * hi)
		t.Logf("q%.2f: exact %.6fs, native bucket (%.6f, %.6f], %.1f%% from its centre", c.q, c.exact, lo, hi, 100*(c.exact-centre)/centre)
		if c.exact < lo/1.001 || c.exact > hi*1.001 {
			t.Errorf("q%.2f: exact %.6fs outside the native bucket (%.6f, %.6f]", c.q, c.exact, lo, hi)
		}
	}
}

func TestMetricsCountEverything(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "node")
		w.WriteHeader(418)
		w.Write([]byte("teapot"))
	})
	a, reg := newAttacker(t)
	s := Spec{URL: srv.URL, Load: load.Open{Rate: 500, Duration: 400 * time.Millisecond},
		ExpectOrigin: "fast", Labels: Labels{"caddy", "fast", "simple"}}
	var warm *Result
	if _, err := WarmUp(context.Background(), s, 200*time.Millisecond, 0, func(ctx context.Context, s Spec) (r *Result, err error) {
		warm, err = a.Run(ctx, s, nil)
		return warm, err
	}, nil); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, a, s)
	text := gather(t, reg)
	// Prometheus sees warm-up too: 300 scheduled in all, the warm-up's and
	// the window's sent (all but what a starved loadgen missed at the end
	// of either: the missed counter says how many), late ones included.
	all := itoa(int(warm.Sent + res.Sent))
	if res.Sent+res.Missed != 200 || res.Capped != 0 {
		t.Errorf("window: sent %d missed %d capped %d, want 200 due", res.Sent, res.Missed, res.Capped)
	}
	wants := []string{
		`proxybench_requests_total{code="418",origin="fast",protocol="h1",proxy="caddy",scenario="simple"} ` + all,
		`proxybench_open_loop_scheduled_total{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} 300`,
		`proxybench_open_loop_sent_total{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} ` + all,
		`proxybench_open_loop_missed_total{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} ` + itoa(int(warm.Missed+res.Missed)),
		`proxybench_open_loop_capped_total{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} 0`,
		`proxybench_response_bytes_total{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} ` + itoa(6*int(warm.Sent+res.Sent)),
		`proxybench_requests_in_flight{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} 0`,
		`proxybench_target_rate_requests_per_second{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} 0`,
		`proxybench_request_duration_seconds_count{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} ` + all,
		`proxybench_open_loop_lag_seconds_count{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} ` + all,
		`proxybench_request_errors_total{origin="fast",protocol="h1",proxy="caddy",reason="timeout",scenario="simple"} 0`,
		`proxybench_request_errors_late_total{origin="fast",protocol="h1",proxy="caddy",reason="timeout",scenario="simple"} 0`,
		`proxybench_request_errors_total{origin="fast",protocol="h1",proxy="caddy",reason="header_too_large",scenario="simple"} 0`,
		`proxybench_request_errors_total{origin="fast",protocol="h1",proxy="caddy",reason="body_too_large",scenario="simple"} 0`,
	}
	if late := warm.Late + res.Late; late > 0 { // the late series of a code exists once one was late
		wants = append(wants, `proxybench_requests_late_total{code="418",origin="fast",protocol="h1",proxy="caddy",scenario="simple"} `+itoa(int(late)))
	}
	for _, want := range wants {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	// wrong origin only counts 2xx, and 418 is not one.
	if !strings.Contains(text, `proxybench_wrong_origin_total{origin="fast",protocol="h1",proxy="caddy",scenario="simple"} 0`) || res.WrongOrigin != 0 {
		t.Errorf("wrong origin counted for a non-2xx response")
	}
	if res.Requests+res.Late != res.Sent || res.Codes[418] != res.Requests {
		t.Errorf("window: %d requests %v, %d late", res.Requests, res.Codes, res.Late)
	}
	metricslint.Check(t, []byte(text))
}

func itoa(i int) string { return strconv.Itoa(i) }

func countBelow(res *Result, sec float64) int64 {
	var n int64
	for _, b := range res.Hist.Distribution() {
		if float64(b.To)/1e6 <= sec {
			n += b.Count
		}
	}
	return n
}

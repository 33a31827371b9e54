package attack

import (
	"testing"
	"time"

	"proxybench/internal/reqsample"

	"proxybench/loadgen/internal/selfcpu"

	"proxybench/loadgen/internal/load"
	"proxybench/loadgen/internal/wire"
)

// BenchmarkRequest is the hot path of a closed-loop worker: send, read and
// discard the response, record into the HdrHistogram and the Prometheus
// series, against a real net/http server on loopback. The server's CPU is
// part of ns/op; compare the clients by allocs/op and by the difference.
func BenchmarkRequest(b *testing.B) {
	srv := newCounted(b, hello)
	for _, bc := range []struct {
		name string
		opts []Option
	}{{"lean", nil}, {"nethttp", []Option{WithNetHTTP()}}} {
		b.Run(bc.name, func(b *testing.B) {
			a, _ := newAttacker(b, bc.opts...)
			s := Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 1, Duration: time.Hour}}
			if err := s.validate(); err != nil {
				b.Fatal(err)
			}
			r, err := a.prepare(&s)
			if err != nil {
				b.Fatal(err)
			}
			d := r.newDoer(0)
			defer d.Close()
			rec := r.recs[0]
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				now := time.Now()
				r.send(d, rec, now, now, nil)
			}
			b.StopTimer()
			if rec.errors != 0 {
				b.Fatalf("%d errors: %v", rec.errors, rec.reasons)
			}
		})
	}
}

// BenchmarkRecord is the accounting alone: what every request pays on top
// of its I/O.
// Sub-benchmark "sampled" adds Spec.SampleRequests' sampler (a
// reservoir's worth of requests recorded first, so it is in its steady
// state): the difference is its overhead per request.
func BenchmarkRecord(b *testing.B) {
	for _, sampled := range []bool{false, true} {
		name := "plain"
		if sampled {
			name = "sampled"
		}
		b.Run(name, func(b *testing.B) {
			a, _ := newAttacker(b)
			rm := a.m.forRun(Labels{"p", "o", "s"}, ProtoH1)
			rec := newRecorder(false, nil)
			res := wire.Response{Code: 200, Bytes: 100, OriginOK: true}
			done := time.Now()
			lat := func(i int) time.Duration { return time.Duration(200+i%1000) * time.Microsecond }
			if sampled {
				rec.sample(reqsample.MaxPerAttack, 1)
				for i := range 1 << 20 {
					rec.record(rm, done, lat(i), res, nil, nil, false)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				rec.record(rm, done, lat(i), res, nil, nil, false)
			}
		})
	}
}

// BenchmarkClosedLoop measures the whole engine the way scripts/perf.sh
// does, in-process: 50 connections for 1 s per iteration against a real
// server, reporting requests/s and the CPU of the whole process (server
// included) per request, for each engine. Run with -benchtime 3x.
func BenchmarkClosedLoop(b *testing.B) {
	srv := newCounted(b, hello)
	for _, bc := range []struct {
		name string
		opts []Option
	}{{"evloop", nil}, {"netpoll", []Option{WithGoroutinePerConn()}}, {"nethttp", []Option{WithNetHTTP()}}} {
		b.Run(bc.name, func(b *testing.B) {
			a, _ := newAttacker(b, bc.opts...)
			var reqs int64
			var cpu time.Duration
			var wall time.Duration
			for b.Loop() {
				c0 := selfcpu.ProcessCPU()
				res := mustRun(b, a, Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 50, Duration: time.Second}})
				cpu += selfcpu.ProcessCPU() - c0
				reqs += res.Requests
				wall += res.End.Sub(res.Start)
			}
			b.ReportMetric(float64(reqs)/wall.Seconds(), "req/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(reqs), "cpu-ns/req")
		})
	}
}

// BenchmarkOpenLoopSchedule is how much of its schedule the open loop keeps
// on the host it runs on: 2000 req/s for 2 s per iteration against a real server,
// reporting the share of due requests missed (never sent inside the
// window) and the send-lag p99. Target: missed under 1 %, the open-loop
// loadgen_bound threshold. Run with -benchtime 3x.
func BenchmarkOpenLoopSchedule(b *testing.B) {
	srv := newCounted(b, hello)
	a, _ := newAttacker(b)
	var due, missed int64
	var lag time.Duration
	for b.Loop() {
		res := mustRun(b, a, Spec{URL: srv.URL, Load: load.Open{Rate: 2000, Duration: 2 * time.Second}})
		due, missed = due+res.Scheduled, missed+res.Missed
		lag = max(lag, res.LagP99)
	}
	b.ReportMetric(100*float64(missed)/float64(max(due, 1)), "missed-%")
	b.ReportMetric(float64(lag.Microseconds()), "lag-p99-µs")
}

// BenchmarkDelayedHandlerOverhead is what the loadgen adds to a response
// that takes exactly 20 ms at the server: its p50 minus 20 ms, in closed
// and open loop. Target: under 1 ms. Run with -benchtime 3x.
func BenchmarkDelayedHandlerOverhead(b *testing.B) {
	srv := newCounted(b, delayedHandler)
	for _, s := range []Spec{
		{Load: load.Closed{Connections: 4, Duration: time.Second}},
		{Load: load.Open{Rate: 100, Duration: time.Second}},
	} {
		b.Run(s.Load.Name(), func(b *testing.B) {
			s.URL = srv.URL
			a, _ := newAttacker(b)
			var worst float64
			for b.Loop() {
				worst = max(worst, latency(mustRun(b, a, s)).P50-0.020)
			}
			b.ReportMetric(worst*1e6, "p50-overhead-µs")
		})
	}
}

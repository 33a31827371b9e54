package netstack

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/study"
)

// measured is one netstack sample: the counters read before it, its
// window and its result.
type measured struct {
	cpu0, dp0  time.Duration
	rx0        int64
	dperr      error
	start, end time.Time
	res        *attack.Result
}

// takeSample measures l against the server pid (and docker-proxy), taken
// again when the hypervisor stole a second of it (RetakeOnSteal): its
// latency would be the host's.
func takeSample(ctx context.Context, e *study.Env, what string, pid, dockerProxy int, gap time.Duration, l study.Load) (measured, error) {
	var m measured
	_, err := study.RetakeOnSteal(ctx, e, what, nil, gap, func() error {
		m.cpu0, _ = cputime.TreeCPU("/proc", pid)
		m.rx0, _ = rxPackets(pid, "eth0")
		m.dp0, m.dperr = cputime.TreeCPU("/proc", dockerProxy)
		m.start = time.Now().UTC()
		var err error
		m.res, err = study.Measure(ctx, l)
		m.end = time.Now().UTC()
		return err
	})
	return m, err
}

// rxPackets is the received packets of iface in pid's network namespace
// (/proc/<pid>/net/dev); 0 when it has none.
func rxPackets(pid int, iface string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return 0, err
	}
	return parseNetDevRx(string(b), iface)
}

// tally is what the checks need from the samples.
type tally struct {
	bridgeRatios, proxyCPU []float64 // the bridge's packets and docker-proxy's CPU per request
	worstRate, worstDone   float64   // the sent and completed rates' worst share off the asked rate
	errorsSeen             []string
	capped                 int64 // sends that waited for the cap in flight
}

// samples runs the repeats, the modes interleaved and rotated per repeat.
func (l *lab) samples(ctx context.Context, e *study.Env, sc timing, rate float64) (*tally, error) {
	t := &tally{bridgeRatios: []float64{}, proxyCPU: []float64{}, errorsSeen: []string{}}
	repeats := e.RepeatsOr(sc.Repeats)
	for rep := 1; rep <= repeats; rep++ {
		for _, m := range modeOrder(rep) {
			if err := l.sample(ctx, e, sc, rate, m, rep, t); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// sample measures mode m once (after its warm-up) and adds the sample; a
// failed sample is added with its error and the study goes on.
func (l *lab) sample(ctx context.Context, e *study.Env, sc timing, rate float64, m string, rep int, t *tally) error {
	s := l.servers[m]
	if _, err := study.Measure(ctx, study.Load{URL: s.URL, Rate: rate, Conns: maxInFlight, Duration: sc.Warm}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.errorsSeen = append(t.errorsSeen, fmt.Sprintf("%s repeat %d: warm-up failed: %v", m, rep, err))
		_ = e.Add(studydata.Sample{Variant: m, Repeat: rep, Start: time.Now().UTC(), End: time.Now().UTC(), Error: "warm-up: " + err.Error()})
		return nil
	}
	ns, err := takeSample(ctx, e, fmt.Sprintf("%s r%d", m, rep), s.Pid, l.dockerProxy, sc.Warm, study.Load{URL: s.URL, Rate: rate, Conns: maxInFlight, Duration: sc.Dur})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.errorsSeen = append(t.errorsSeen, fmt.Sprintf("%s repeat %d: failed: %v", m, rep, err))
		_ = e.Add(studydata.Sample{Variant: m, Repeat: rep, Start: ns.start, End: ns.end, Error: err.Error()})
		return nil
	}
	res := ns.res
	cpu1, cerr := cputime.TreeCPU("/proc", s.Pid)
	rx1, _ := rxPackets(s.Pid, "eth0")
	dp1, dperr1 := cputime.TreeCPU("/proc", l.dockerProxy)
	v := study.LatencyValues(res)
	v[offeredMetric] = rate
	v[lagMetric] = float64(res.LagP99) / float64(time.Microsecond)
	if w := res.Window(); w > 0 {
		v[sentMetric] = float64(res.Sent) / w
	}
	done := res.Requests + res.Errors + res.Late
	if cerr == nil && done > 0 {
		v[cpuMetric] = float64(cpu1-ns.cpu0) / float64(time.Microsecond) / float64(done)
	}
	if m == modeBridge && done > 0 {
		t.bridgeRatios = append(t.bridgeRatios, float64(rx1-ns.rx0)/float64(done))
		if l.dockerProxy > 0 && ns.dperr == nil && dperr1 == nil {
			t.proxyCPU = append(t.proxyCPU, float64(dp1-ns.dp0)/float64(time.Microsecond)/float64(done))
		}
	}
	t.capped += res.Capped
	if d := math.Abs(v[sentMetric]/rate - 1); d > t.worstRate {
		t.worstRate = d
	}
	if d := math.Abs(v["rps"]/rate - 1); d > t.worstDone {
		t.worstDone = d
	}
	if bad := badResponses(res); bad != "" {
		t.errorsSeen = append(t.errorsSeen, fmt.Sprintf("%s repeat %d: %s", m, rep, bad))
	}
	if err := e.Add(studydata.Sample{Variant: m, Repeat: rep, Start: ns.start, End: ns.end, Values: v}); err != nil {
		return err
	}
	e.Log.Info("netstack sample", "mode", m, "repeat", rep, "mean_us", math.Round(v["mean_us"]), "p99_us", v["p99_us"], "rps", math.Round(v["rps"]))
	return nil
}

// check records the checks over the samples.
func (t *tally) check(e *study.Env, l *lab, sc timing, rate float64) {
	n := len(e.Record().Samples)
	minRatio := math.Inf(1)
	for _, x := range t.bridgeRatios {
		minRatio = min(minRatio, x)
	}
	if len(t.bridgeRatios) == 0 {
		minRatio = 0
	}
	_ = e.AddCheck("bridge traffic crossed the bridge", minRatio >= 0.9 && len(t.bridgeRatios) > 0,
		"eth0 of the bridge container's netns received at least %.2f packets per request over %d samples (every window, by /proc/<pid>/net/dev; want >= 0.90); %s; "+
			"docker-proxy's CPU per request over the bridge windows: %s",
		minRatio, len(t.bridgeRatios), l.bridgeProxy, micros(t.proxyCPU))
	_ = e.AddCheck("0 errors", len(t.errorsSeen) == 0 && n > 0, "samples %d; transport errors or non-200 answers: %s", n, listOrNone(t.errorsSeen))
	// 1 % of the rate, or what a 50 ms stall of the host (the hypervisor
	// steals CPU in bursts) leaves unsent in a short window, whichever is
	// more: the tiny scale's 1.5 s window cannot hold 1 % through one.
	tol := rateTolerance(sc.Dur)
	_ = e.AddCheck("achieved rate", t.worstRate <= tol && n > 0,
		"asked %.0f req/s; the rate sent in the window off by at most %.3f %% (want <= %.3g %%) over %d samples; "+
			"completions inside the window (rps, without the late ones) off by at most %.3f %%; %d sends waited for the cap of %d in flight",
		rate, t.worstRate*100, tol*100, n, t.worstDone*100, t.capped, maxInFlight)
}

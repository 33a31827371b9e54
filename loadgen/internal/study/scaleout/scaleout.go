package study

// The scaleout study: does putting HAProxy in front of nginx, and splitting
// nginx into two backends, pay under one fixed total CPU quota? Three cases
// share a budget of 1.5 CPU: A nginx alone, B HAProxy 0.5 + nginx 1.0, C
// HAProxy 0.5 + two nginx 0.5 each (round-robin). Every container is the
// lab's image with a config the study writes, host networking on ports of
// its own; all six containers stay up for the whole study (an idle one
// costs nothing) so that the cases interleave repeat by repeat.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"proxybench/internal/placement"
	"proxybench/internal/studydata"
)

func init() { register("scaleout", scaleout) }

// Scaleout's fixed quantities.
const (
	scaleoutBudget   = 1.5   // total CPU quota of every case, in cores
	scaleoutBody     = 76800 // the static response body, bytes (75 KiB)
	scaleoutPath     = "/body.bin"
	scaleoutCapConns = 16 // closed-loop connections of the capacity probe
)

// soContainer is one container of a case.
type soContainer struct {
	Name     string
	Kind     string // "nginx" or "haproxy"
	CPUs     float64
	Port     int
	Backends []int // haproxy: the nginx ports it balances over
}

// Workers is nginx's worker_processes (ceil of its quota) or HAProxy's
// nbthread (1: its quota is 0.5).
func (c soContainer) Workers() int {
	if c.Kind == "haproxy" {
		return 1
	}
	return int(math.Ceil(c.CPUs))
}

// soCase is one variant: its containers, the first one taking the load.
type soCase struct {
	Name, Label string
	Ctrs        []soContainer
}

func (c soCase) url() string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", c.Ctrs[0].Port, scaleoutPath)
}

func (c soCase) total() float64 {
	t := 0.0
	for _, x := range c.Ctrs {
		t += x.CPUs
	}
	return t
}

// scaleoutCases is the plan: each case's containers and quotas (each sums
// to scaleoutBudget) and the 127.0.0.1 ports, none of them the lab's.
var scaleoutCases = []soCase{
	{Name: "A", Label: "A: nginx alone 1.5", Ctrs: []soContainer{
		{Name: "pb-scaleout-a-nginx", Kind: "nginx", CPUs: 1.5, Port: 18901}}},
	{Name: "B", Label: "B: HAProxy 0.5 + nginx 1.0", Ctrs: []soContainer{
		{Name: "pb-scaleout-b-haproxy", Kind: "haproxy", CPUs: 0.5, Port: 18911, Backends: []int{18912}},
		{Name: "pb-scaleout-b-nginx", Kind: "nginx", CPUs: 1.0, Port: 18912}}},
	{Name: "C", Label: "C: HAProxy 0.5 + 2 × nginx 0.5", Ctrs: []soContainer{
		{Name: "pb-scaleout-c-haproxy", Kind: "haproxy", CPUs: 0.5, Port: 18921, Backends: []int{18922, 18923}},
		{Name: "pb-scaleout-c-nginx1", Kind: "nginx", CPUs: 0.5, Port: 18922},
		{Name: "pb-scaleout-c-nginx2", Kind: "nginx", CPUs: 0.5, Port: 18923}}},
}

// soRate is one offered rate: a fraction of the smallest capacity.
type soRate struct {
	Name     string
	Fraction float64
	// Original is the original study's rate matched to this one by order.
	Original float64
}

// The fractions are low because a closed loop's capacity overstates what an
// open loop sustains behind a 0.5-CPU HAProxy: at 50 % and 80 % of it B and
// C fell behind (B completed 1392 of 2110 req/s, C 1296 of 3370, HAProxy
// throttled in 34-48 % of its CFS periods), so their samples measured a
// growing queue, not a latency. 15 / 25 / 40 % keep the original's spacing
// (300 / 480 / 840 = 0.36 / 0.57 / 1 of the top rate; these 0.38 / 0.63 / 1).
var scaleoutRates = []soRate{
	{Name: "15pct", Fraction: 0.15, Original: 300},
	{Name: "25pct", Fraction: 0.25, Original: 480},
	{Name: "40pct", Fraction: 0.40, Original: 840},
}

// The original study's median p99 (ms) per case at 300, 480, 840 req/s.
var scaleoutOriginalP99 = map[string][3]float64{
	"A": {4, 4, 6},
	"B": {75, 64, 58},
	"C": {81, 78, 65.4},
}

// scaleoutMetrics are the latency metrics plus what explains them.
var scaleoutMetrics = append(append([]studydata.Metric{}, LatencyMetrics...),
	studydata.Metric{Name: "cpu_cores", Label: "case's CPU used (warm-up included)", Unit: "cores"},
	studydata.Metric{Name: "throttled_pct", Label: "CFS periods throttled, most-throttled container", Unit: "%"},
	studydata.Metric{Name: "send_lag_p99_us", Label: "loadgen send lag p99", Unit: "µs"},
)

func scaleout(ctx context.Context, e *Env) error {
	tm := scaleoutTiming(e)
	cpus, cpusetWhy := scaleoutCpuset(e.Placement)
	cpuset := cpus.String()
	rec := e.Record()
	rec.Title = "Fixed-budget scale-out: nginx alone vs HAProxy in front of one or two nginx, one total CPU quota"
	rec.Question = fmt.Sprintf("Under one total CPU quota of %.1f CPU, does a 75 KiB static response get lower tail latency from nginx alone (A), "+
		"from HAProxy 0.5 in front of nginx 1.0 (B), or from HAProxy 0.5 round-robin over two nginx 0.5 (C)?", scaleoutBudget)
	rec.Metrics = scaleoutMetrics
	rec.Baseline = "A"
	rec.Variants = nil
	for _, c := range scaleoutCases {
		var parts []string
		for _, x := range c.Ctrs {
			w := fmt.Sprintf("worker_processes %d", x.Workers())
			if x.Kind == "haproxy" {
				w = fmt.Sprintf("nbthread %d, roundrobin over %d nginx", x.Workers(), len(x.Backends))
			}
			parts = append(parts, fmt.Sprintf("%s --cpus %g (%s, 127.0.0.1:%d)", x.Kind, x.CPUs, w, x.Port))
		}
		rec.Variants = append(rec.Variants, studydata.Variant{Name: c.Name, Label: c.Label,
			Detail: fmt.Sprintf("%s; total %.1f CPU; cpuset %s", strings.Join(parts, " + "), c.total(), placement.ListOrAll(cpus))})
	}
	rec.Original = nil
	for i, r := range scaleoutRates {
		for _, c := range scaleoutCases {
			rec.Original = append(rec.Original, studydata.Reference{Group: r.Name, Variant: c.Name, Metric: "p99_us",
				Value: scaleoutOriginalP99[c.Name][i] * 1000, Unit: "µs",
				Note: fmt.Sprintf("original: median p99 at %g req/s, total quota 3.0 (A nginx 3.0; B HAProxy 1.0 + nginx 2.0; C HAProxy 1.0 + 2 × nginx 1.0), 5 repeats", r.Original)})
		}
	}
	rec.Method = []string{
		fmt.Sprintf("Budget: every case's containers' docker --cpus quotas sum to %.1f CPU (A nginx 1.5; B HAProxy 0.5 + nginx 1.0; C HAProxy 0.5 + nginx 0.5 + nginx 0.5); "+
			"nginx worker_processes = ceil(its quota) (A 2, B 1, C 1 each), HAProxy nbthread 1 (its quota is 0.5).", scaleoutBudget),
		fmt.Sprintf("CPUs: every SUT container runs with cpuset %s: %s.", placement.ListOrAll(cpus), cpusetWhy),
		fmt.Sprintf("Response: GET %s, a %d-byte (75 KiB) static file the study writes to a temp directory, mounted read-only into every nginx "+
			"(sendfile on, keep-alive, no access log); HAProxy keeps keep-alive pools to its nginx (http-reuse always).", scaleoutPath, scaleoutBody),
		"Containers: the lab's nginx and HAProxy images with configs the study writes, host networking on 127.0.0.1 ports 18901-18923 (not the lab's); " +
			"all six start once, before the first measurement, and stay up to the end (idle ones take no CPU).",
		fmt.Sprintf("Capacity: each case's closed loop with %d connections, %v warm-up excluded, %v window; the offered rates are fractions of the smallest of the three capacities.",
			scaleoutCapConns, tm.capWarm, tm.capWindow),
		fmt.Sprintf("Samples: open loop at each rate, %v warm-up excluded, %v window, %d repeats; per repeat every rate in ascending order, "+
			"and within it the three cases in an order rotated by one per repeat and per rate.", tm.warm, tm.window, tm.repeats),
		"Per sample besides latency: the case's CPU use (cpuacct, warm-up included) over the sample's duration, the largest share of CFS periods " +
			"throttled among its containers, and the loadgen's own send lag p99 (it shares CPUs with the SUT when the cpuset says so).",
	}
	rec.Groups = nil
	if err := e.Save(); err != nil {
		return err
	}

	if err := RemoveLeftovers(ctx); err != nil {
		return fmt.Errorf("remove leftover study containers: %w", err)
	}
	if err := portsFree(); err != nil {
		return err
	}
	nginxImg, haproxyImg, err := scaleoutImages(ctx, e.Repo)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pb-scaleout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	body := scaleoutBodyBytes()
	files := map[string]string{"srv/body.bin": string(body)}
	for _, c := range scaleoutCases {
		for _, x := range c.Ctrs {
			if x.Kind == "nginx" {
				files[x.Name+".conf"] = nginxConf(x)
			} else {
				files[x.Name+".cfg"] = haproxyConf(x)
			}
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "srv"), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // MkdirTemp is 0700: the workers (nobody) read the body
		return err
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			return err
		}
	}

	// Start all six at once; stop every one on the way out, Ctrl-C included.
	var (
		mu    sync.Mutex
		stops []func()
		errs  []error
		wg    sync.WaitGroup
	)
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for _, c := range scaleoutCases {
		for _, x := range c.Ctrs {
			ct := Container{Name: x.Name, Network: "host", CPUs: x.CPUs, Cpuset: cpuset}
			if x.Kind == "nginx" {
				ct.Image = nginxImg
				ct.Mounts = []string{filepath.Join(dir, "srv") + ":/srv/scaleout:ro", filepath.Join(dir, x.Name+".conf") + ":/etc/scaleout/nginx.conf:ro"}
				ct.Cmd = []string{"nginx", "-c", "/etc/scaleout/nginx.conf", "-g", "daemon off;"}
			} else {
				ct.Image = haproxyImg
				ct.Mounts = []string{filepath.Join(dir, x.Name+".cfg") + ":/etc/scaleout/haproxy.cfg:ro"}
				ct.Cmd = []string{"haproxy", "-W", "-db", "-f", "/etc/scaleout/haproxy.cfg"}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				stop, err := e.Start(ctx, ct)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				stops = append(stops, stop)
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, c := range scaleoutCases {
		for _, x := range c.Ctrs {
			u := fmt.Sprintf("http://127.0.0.1:%d%s", x.Port, scaleoutPath)
			if err := WaitHTTP(ctx, u, 20*time.Second); err != nil {
				var logs string
				if dc, derr := engine(); derr == nil {
					logs, _ = dc.Tail(context.WithoutCancel(ctx), x.Name, 20)
				}
				return fmt.Errorf("%s: %w; its log: %s", x.Name, err, logs)
			}
		}
	}

	// Quotas, cpusets and workers, from the engine and from the kernel.
	probes := map[string][]soProbe{}
	for _, c := range scaleoutCases {
		var lines []string
		ok := true
		totalDocker, totalCg := 0.0, 0.0
		for _, x := range c.Ctrs {
			p, err := probeContainer(ctx, x.Name)
			if err != nil {
				return err
			}
			probes[c.Name] = append(probes[c.Name], p)
			dq, cq := float64(p.nano)/1e9, p.cgroupCores()
			totalDocker += dq
			totalCg += cq
			ok = ok && math.Abs(dq-x.CPUs) < 1e-9 && math.Abs(cq-x.CPUs) < 1e-9
			lines = append(lines, fmt.Sprintf("%s: plan %g; docker NanoCpus %d (%g); cgroup %s cfs_quota_us %d / cfs_period_us %d = %g",
				x.Name, x.CPUs, p.nano, dq, p.cgDir, p.quotaUS, p.periodUS, cq))
		}
		ok = ok && math.Abs(totalDocker-scaleoutBudget) < 1e-9 && math.Abs(totalCg-scaleoutBudget) < 1e-9
		if err := e.AddCheck("quota "+c.Name, ok, "%s; total docker %g, cgroup %g (budget %g)",
			strings.Join(lines, "; "), totalDocker, totalCg, scaleoutBudget); err != nil {
			return err
		}
	}
	{
		var lines []string
		ok := true
		for _, c := range scaleoutCases {
			for i, x := range c.Ctrs {
				p := probes[c.Name][i]
				want := cpus.String()
				if len(cpus) == 0 {
					want = e.Placement.Online.String()
				}
				ok = ok && p.cpuset == want
				// nginx: a master and one process per worker, one thread each;
				// HAProxy -W: a master and a worker of nbthread threads.
				wantThreads := x.Workers() + 1
				ok = ok && p.threads == wantThreads
				lines = append(lines, fmt.Sprintf("%s cpuset %s, %d threads (want %d)", x.Name, p.cpuset, p.threads, wantThreads))
			}
		}
		reach := float64(len(cpus))
		if len(cpus) == 0 {
			reach = float64(len(e.Placement.Online))
		}
		ok = ok && reach >= scaleoutBudget
		if err := e.AddCheck("cpuset and workers", ok, "%s; the cpuset's %g CPUs can give the %.1f-CPU budget: %t",
			strings.Join(lines, "; "), reach, scaleoutBudget, reach >= scaleoutBudget); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(body)
	for _, c := range scaleoutCases {
		code, clen, b, err := fetchBody(ctx, c.url())
		got := sha256.Sum256(b)
		ok := err == nil && code == 200 && clen == scaleoutBody && len(b) == scaleoutBody && got == sum
		if err := e.AddCheck("body "+c.Name, ok, "GET %s: status %d, Content-Length %d, %d body bytes (want %d), same bytes as the file: %t (err %v)",
			c.url(), code, clen, len(b), scaleoutBody, got == sum, err); err != nil {
			return err
		}
	}
	balanceBefore, err := backendRequests(ctx, scaleoutCases[2])
	if err != nil {
		return err
	}

	// Capacity, then the rates.
	caps := map[string]float64{}
	minCase, minCap := "", math.Inf(1)
	var capText []string
	for _, c := range scaleoutCases {
		res, err := Measure(ctx, Load{URL: c.url(), Conns: scaleoutCapConns, Warmup: tm.capWarm, Duration: tm.capWindow})
		if err != nil {
			return fmt.Errorf("capacity of case %s: %w", c.Name, err)
		}
		v := scaleoutValues(res)
		if v["error_ratio"] > 0 || res.Requests == 0 {
			return fmt.Errorf("capacity of case %s: %d requests, error ratio %g: the case does not serve", c.Name, res.Requests, v["error_ratio"])
		}
		caps[c.Name] = res.RPS()
		capText = append(capText, fmt.Sprintf("%s %.0f req/s (p99 %.1f ms)", c.Name, res.RPS(), v["p99_us"]/1000))
		if res.RPS() < minCap {
			minCase, minCap = c.Name, res.RPS()
		}
	}
	rates := map[string]float64{}
	var rateText []string
	rec.Groups = nil
	for _, r := range tm.rates {
		rate := math.Max(10, math.Round(r.Fraction*minCap/10)*10)
		rates[r.Name] = rate
		rec.Groups = append(rec.Groups, studydata.Group{Name: r.Name,
			Label:     fmt.Sprintf("%.0f req/s (%.0f %% of capacity)", rate, r.Fraction*100),
			Mechanism: fmt.Sprintf("open loop at %.0f req/s: %.0f %% of the smallest closed-loop capacity (case %s, %.0f req/s), rounded to 10 req/s", rate, r.Fraction*100, minCase, minCap)})
		rateText = append(rateText, fmt.Sprintf("%.0f %% = %.0f req/s", r.Fraction*100, rate))
	}
	rec.Method = append(rec.Method, fmt.Sprintf("Measured capacity: %s; the smallest, %s's, sets the rates: %s. "+
		"The fractions are low on purpose: at 50 %% and 80 %% of a closed loop's capacity B and C could not keep up with an open loop "+
		"(B completed 1392 of 2110 req/s, C 1296 of 3370, HAProxy throttled in 34-48 %% of its CFS periods), and a queue that grows all window long has no tail latency to compare. "+
		"15 / 25 / 40 %% keep the original's spacing (its 300 / 480 / 840 req/s are 0.36 / 0.57 / 1 of its top rate; these 0.38 / 0.63 / 1); its rows are matched by order.",
		strings.Join(capText, ", "), minCase, strings.Join(rateText, ", ")))
	if err := e.Save(); err != nil {
		return err
	}

	// The samples.
	bytesOK := map[string][2]int64{} // case -> responses, bytes
	for rep := 1; rep <= tm.repeats; rep++ {
		for gi, r := range tm.rates {
			n := len(scaleoutCases)
			for k := 0; k < n; k++ {
				c := scaleoutCases[(rep-1+gi+k)%n]
				res, err := scaleoutSample(ctx, e, c, probes[c.Name], r.Name, rates[r.Name], rep, tm)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err != nil {
					return err
				}
				if res != nil {
					t := bytesOK[c.Name]
					bytesOK[c.Name] = [2]int64{t[0] + res.Requests, t[1] + res.Bytes}
				}
			}
		}
	}

	// Every sample's responses carried the whole body; C's nginx shared the load.
	for _, c := range scaleoutCases {
		t := bytesOK[c.Name]
		per := 0.0
		if t[0] > 0 {
			per = float64(t[1]) / float64(t[0])
		}
		if err := e.AddCheck("body bytes per response "+c.Name, t[0] > 0 && t[1] == t[0]*scaleoutBody,
			"%d responses in the sample windows, %d body bytes: %.1f per response (want %d)", t[0], t[1], per, scaleoutBody); err != nil {
			return err
		}
	}
	served, err := backendRequests(ctx, scaleoutCases[2])
	if err != nil {
		return err
	}
	for i := range served {
		served[i] -= balanceBefore[i] + 1 // +1: the stub_status request itself
	}
	lo, hi := min(served[0], served[1]), max(served[0], served[1])
	ratio := 0.0
	if hi > 0 {
		ratio = float64(lo) / float64(hi)
	}
	if err := e.AddCheck("C balance", lo > 0 && ratio >= 0.9,
		"requests each of C's nginx served from the first capacity probe to the last sample (stub_status): %s %d, %s %d; smaller/larger %.3f (want both > 0 and >= 0.9)",
		scaleoutCases[2].Ctrs[1].Name, served[0], scaleoutCases[2].Ctrs[2].Name, served[1], ratio); err != nil {
		return err
	}
	rec.Notes = []string{
		fmt.Sprintf("CPU placement: %s. Each case's quotas sum to %.1f; idle cases' containers stay up but take no CPU, so only the measured case competes with the loadgen.", cpusetWhy, scaleoutBudget),
		"HAProxy runs one thread (nbthread 1) on its 0.5 CPU quota; a busier HAProxy than its quota allows is throttled for the rest of each 100 ms CFS period, which shows as throttled_pct and in the tail latency.",
		"The original study's budget was 3.0 CPU (A nginx 3.0; B HAProxy 1.0 + nginx 2.0; C HAProxy 1.0 + 2 × nginx 1.0) at 300 / 480 / 840 req/s; its rows here are matched to our rates by order, not by value. It found A's median p99 4-6 ms, B 58-75 ms, C 65-81 ms: splitting the backend did not help (a negative result).",
	}
	rec.Notes = append(rec.Notes, scaleoutSustainedNote(rec, rates))
	rec.Notes = append(rec.Notes, scaleoutPairNotes(rec, tm.rates, rates)...)
	return e.Save()
}

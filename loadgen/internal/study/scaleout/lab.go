package scaleout

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
	"proxybench/loadgen/internal/study"
)

// lab is the study's six containers and what was read of them.
type lab struct {
	cpus          placement.CPUSet
	dir           string // the configs and the body, mounted into the containers
	body          []byte
	stops         []func()
	probes        map[string][]probe // by case, in the case's container order
	balanceBefore []int64            // C's nginx's requests before the first capacity probe
}

// stop removes the containers started and the temp directory.
func (l *lab) stop() {
	for _, s := range l.stops {
		s()
	}
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}

// setup removes leftovers, writes the configs and the body and starts all
// six containers, waiting until each answers.
func (l *lab) setup(ctx context.Context, e *study.Env) error {
	if err := study.RemoveLeftovers(ctx); err != nil {
		return fmt.Errorf("remove leftover study containers: %w", err)
	}
	if err := portsFree(); err != nil {
		return err
	}
	nginxImg, haproxyImg, err := images(ctx, e.Repo)
	if err != nil {
		return err
	}
	if l.dir, err = os.MkdirTemp("", "pb-scaleout-"); err != nil {
		return err
	}
	l.body = bodyBytes()
	if err := l.writeFiles(); err != nil {
		return err
	}
	if err := l.startAll(ctx, e, nginxImg, haproxyImg); err != nil {
		return err
	}
	for _, c := range cases {
		for _, x := range c.Ctrs {
			u := fmt.Sprintf("http://127.0.0.1:%d%s", x.Port, bodyPath)
			if err := study.WaitHTTP(ctx, u, 20*time.Second); err != nil {
				var logs string
				if dc, derr := study.Engine(); derr == nil {
					logs, _ = dc.Tail(context.WithoutCancel(ctx), x.Name, 20)
				}
				return fmt.Errorf("%s: %w; its log: %s", x.Name, err, logs)
			}
		}
	}
	return nil
}

// writeFiles writes the body and every container's config into l.dir.
func (l *lab) writeFiles() error {
	files := map[string]string{"srv/body.bin": string(l.body)}
	for _, c := range cases {
		for _, x := range c.Ctrs {
			if x.Kind == "nginx" {
				files[x.Name+".conf"] = nginxConf(x)
			} else {
				files[x.Name+".cfg"] = haproxyConf(x)
			}
		}
	}
	if err := os.Mkdir(filepath.Join(l.dir, "srv"), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(l.dir, 0o755); err != nil { // MkdirTemp is 0700: the workers (nobody) read the body
		return err
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(l.dir, name), []byte(s), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// startAll starts all six at once; l.stop stops every one on the way out,
// Ctrl-C included.
func (l *lab) startAll(ctx context.Context, e *study.Env, nginxImg, haproxyImg string) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, c := range cases {
		for _, x := range c.Ctrs {
			ct := study.Container{Name: x.Name, Network: "host", CPUs: x.CPUs, Cpuset: l.cpus.String()}
			if x.Kind == "nginx" {
				ct.Image = nginxImg
				ct.Mounts = []string{filepath.Join(l.dir, "srv") + ":/srv/scaleout:ro", filepath.Join(l.dir, x.Name+".conf") + ":/etc/scaleout/nginx.conf:ro"}
				ct.Cmd = []string{"nginx", "-c", "/etc/scaleout/nginx.conf", "-g", "daemon off;"}
			} else {
				ct.Image = haproxyImg
				ct.Mounts = []string{filepath.Join(l.dir, x.Name+".cfg") + ":/etc/scaleout/haproxy.cfg:ro"}
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
				l.stops = append(l.stops, stop)
			}()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkMechanism records the quotas, cpusets and workers (from the engine
// and from the kernel) and every case's body, and reads C's balance
// counters before the first measurement.
func (l *lab) checkMechanism(ctx context.Context, e *study.Env) error {
	l.probes = map[string][]probe{}
	for _, c := range cases {
		if err := l.checkQuota(ctx, e, c); err != nil {
			return err
		}
	}
	if err := l.checkCpuset(e); err != nil {
		return err
	}
	sum := sha256.Sum256(l.body)
	for _, c := range cases {
		code, clen, b, err := fetchBody(ctx, c.url())
		got := sha256.Sum256(b)
		ok := err == nil && code == 200 && clen == bodySize && len(b) == bodySize && got == sum
		if err := e.AddCheck("body "+c.Name, ok, "GET %s: status %d, Content-Length %d, %d body bytes (want %d), same bytes as the file: %t (err %v)",
			c.url(), code, clen, len(b), bodySize, got == sum, err); err != nil {
			return err
		}
	}
	var err error
	l.balanceBefore, err = backendRequests(ctx, cases[2])
	return err
}

// checkQuota probes case c's containers and records that their quotas are
// the plan's and sum to the budget.
func (l *lab) checkQuota(ctx context.Context, e *study.Env, c testCase) error {
	var lines []string
	ok := true
	totalDocker, totalCg := 0.0, 0.0
	for _, x := range c.Ctrs {
		p, err := probeContainer(ctx, x.Name)
		if err != nil {
			return err
		}
		l.probes[c.Name] = append(l.probes[c.Name], p)
		dq, cq := float64(p.nano)/1e9, p.cgroupCores()
		totalDocker += dq
		totalCg += cq
		ok = ok && math.Abs(dq-x.CPUs) < 1e-9 && math.Abs(cq-x.CPUs) < 1e-9
		lines = append(lines, fmt.Sprintf("%s: plan %g; docker NanoCpus %d (%g); cgroup %s cfs_quota_us %d / cfs_period_us %d = %g",
			x.Name, x.CPUs, p.nano, dq, p.cgDir, p.quotaUS, p.periodUS, cq))
	}
	ok = ok && math.Abs(totalDocker-budget) < 1e-9 && math.Abs(totalCg-budget) < 1e-9
	return e.AddCheck("quota "+c.Name, ok, "%s; total docker %g, cgroup %g (budget %g)",
		strings.Join(lines, "; "), totalDocker, totalCg, budget)
}

// checkCpuset records every container's cpuset and threads.
func (l *lab) checkCpuset(e *study.Env) error {
	var lines []string
	ok := true
	for _, c := range cases {
		for i, x := range c.Ctrs {
			p := l.probes[c.Name][i]
			want := l.cpus.String()
			if len(l.cpus) == 0 {
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
	reach := float64(len(l.cpus))
	if len(l.cpus) == 0 {
		reach = float64(len(e.Placement.Online))
	}
	ok = ok && reach >= budget
	return e.AddCheck("cpuset and workers", ok, "%s; the cpuset's %g CPUs can give the %.1f-CPU budget: %t",
		strings.Join(lines, "; "), reach, budget, reach >= budget)
}

// chooseRates measures each case's closed-loop capacity and sets the rates
// (the groups) as fractions of the smallest.
func chooseRates(ctx context.Context, e *study.Env, tm timing) (map[string]float64, error) {
	rec := e.Record()
	minCase, minCap := "", math.Inf(1)
	var capText []string
	for _, c := range cases {
		res, err := study.Measure(ctx, study.Load{URL: c.url(), Conns: capConns, Warmup: tm.capWarm, Duration: tm.capWindow})
		if err != nil {
			return nil, fmt.Errorf("capacity of case %s: %w", c.Name, err)
		}
		v := values(res)
		if v["error_ratio"] > 0 || res.Requests == 0 {
			return nil, fmt.Errorf("capacity of case %s: %d requests, error ratio %g: the case does not serve", c.Name, res.Requests, v["error_ratio"])
		}
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
	return rates, e.Save()
}

// samples runs the repeats: per repeat every rate in ascending order, and
// within it the three cases in an order rotated by one per repeat and per
// rate. It returns each case's responses and body bytes.
func (l *lab) samples(ctx context.Context, e *study.Env, tm timing, rates map[string]float64) (map[string][2]int64, error) {
	bytesOK := map[string][2]int64{} // case -> responses, bytes
	for rep := 1; rep <= tm.repeats; rep++ {
		for gi, r := range tm.rates {
			n := len(cases)
			for k := 0; k < n; k++ {
				c := cases[(rep-1+gi+k)%n]
				res, err := takeSample(ctx, e, c, l.probes[c.Name], r.Name, rates[r.Name], rep, tm)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err != nil {
					return nil, err
				}
				if res != nil {
					t := bytesOK[c.Name]
					bytesOK[c.Name] = [2]int64{t[0] + res.Requests, t[1] + res.Bytes}
				}
			}
		}
	}
	return bytesOK, nil
}

// checkSamples records that every sample's responses carried the whole
// body and that C's nginx shared the load.
func (l *lab) checkSamples(ctx context.Context, e *study.Env, bytesOK map[string][2]int64) error {
	for _, c := range cases {
		t := bytesOK[c.Name]
		per := 0.0
		if t[0] > 0 {
			per = float64(t[1]) / float64(t[0])
		}
		if err := e.AddCheck("body bytes per response "+c.Name, t[0] > 0 && t[1] == t[0]*bodySize,
			"%d responses in the sample windows, %d body bytes: %.1f per response (want %d)", t[0], t[1], per, bodySize); err != nil {
			return err
		}
	}
	served, err := backendRequests(ctx, cases[2])
	if err != nil {
		return err
	}
	for i := range served {
		served[i] -= l.balanceBefore[i] + 1 // +1: the stub_status request itself
	}
	lo, hi := min(served[0], served[1]), max(served[0], served[1])
	ratio := 0.0
	if hi > 0 {
		ratio = float64(lo) / float64(hi)
	}
	return e.AddCheck("C balance", lo > 0 && ratio >= 0.9,
		"requests each of C's nginx served from the first capacity probe to the last sample (stub_status): %s %d, %s %d; smaller/larger %.3f (want both > 0 and >= 0.9)",
		cases[2].Ctrs[1].Name, served[0], cases[2].Ctrs[2].Name, served[1], ratio)
}

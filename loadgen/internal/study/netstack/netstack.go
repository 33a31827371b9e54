package study

// netstack: what the network stack costs a request. The same Debian nginx
// build serves one short static body as a plain host process ("bare"), in a
// container with host networking ("hostnet") and in a container on Docker's
// bridge with its port published on 127.0.0.1 ("bridge"), all pinned to the
// placement's proxy CPUs without a CPU quota, and the loadgen offers each
// the same open-loop rate, well under the smallest measured capacity.

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
	"proxybench/internal/studydata"
)

func init() { register("netstack", netstack) }

// The compared modes, in their base order.
const (
	nsBare   = "bare"
	nsHost   = "hostnet"
	nsBridge = "bridge"
)

var nsModes = []string{nsBare, nsHost, nsBridge}

const (
	nsBody          = "netstack ok\n" // the static response body (12 bytes)
	nsContainerPort = 8080            // the bridge container's port inside its netns
	nsMount         = "/etc/netstack" // where the containers see their mode's directory
	nsRateShare     = 0.4             // the fixed rate's share of the smallest capacity
	// nsMaxInFlight caps the open loop's requests in flight (each its own
	// connection). At the fixed rate one or two are in flight; with the
	// default cap (10,000) a scheduling stall of the shared host made the
	// loop open thousands of connections at once, which overflowed the
	// accept queue (SYNs dropped: latencies of the 1 s SYN retransmit) and
	// left docker-proxy refusing every connection for the rest of the run
	// (up to 20,000 fds for 10,000 connections, its open-files limit): an
	// artifact of the loadgen, not a cost of the network stack.
	nsMaxInFlight   = 1000
	nsDefaultImage  = "nginx:1.22.1" // compose's default when images.env names none
	nsContainerName = "proxybench-study-netstack-"
	nsStateDirName  = "proxybench-study-netstack"
	nsOfferedMetric = "offered_rps"
	nsSentMetric    = "sent_rps"
	nsCPUMetric     = "nginx_cpu_us_per_req"
	nsLagMetric     = "lag_p99_us"
)

// nsScale is the study's timing at one scale.
type nsScale struct {
	CapConns        int           // closed-loop connections of the capacity measurement
	CapWarm, CapDur time.Duration // its warm-up and window, per mode
	Warm, Dur       time.Duration // each sample's warm-up (excluded) and window
	Repeats         int
	Step            float64 // the rate is rounded down to a multiple of this
}

func nsScaleFor(tiny bool) nsScale {
	if tiny {
		return nsScale{CapConns: 16, CapWarm: 300 * time.Millisecond, CapDur: time.Second,
			Warm: 500 * time.Millisecond, Dur: 1500 * time.Millisecond, Repeats: 2, Step: 100}
	}
	return nsScale{CapConns: 32, CapWarm: time.Second, CapDur: 4 * time.Second,
		Warm: 5 * time.Second, Dur: 20 * time.Second, Repeats: 5, Step: 500}
}

// nsRate is the fixed rate: share of the smallest capacity, rounded down to
// step (at least step).
func nsRate(capacity map[string]float64, share, step float64) (rate, smallest float64, which string) {
	smallest = math.Inf(1)
	for _, m := range nsModes {
		if c, ok := capacity[m]; ok && c < smallest {
			smallest, which = c, m
		}
	}
	if math.IsInf(smallest, 1) {
		return 0, 0, ""
	}
	rate = math.Floor(smallest*share/step) * step
	return max(rate, step), smallest, which
}

// nsOrder is repeat r's (1-based) order of the modes: the base order
// rotated by r-1, so that each mode leads, follows and ends in turn.
func nsOrder(r int) []string {
	k := (r - 1) % len(nsModes)
	return append(slices.Clone(nsModes[k:]), nsModes[:k]...)
}

// nsConfig is the one nginx config of all three modes. listen.conf (beside
// it, one per mode) holds the mode's listen line, the only difference; the
// pid file is relative to the prefix (-p, the mode's directory).
func nsConfig(workers int) string {
	return fmt.Sprintf(`# netstack study: one config for the host process and both containers.
# Keep-alive, logging and events as compose/nginx/nginx.conf; no proxying:
# one short static body.
worker_processes %d;
pid nginx.pid;
error_log stderr warn;
worker_rlimit_nofile 20000;

events {
    worker_connections 19000;
    multi_accept on;
}

http {
    access_log off;
    gzip off;
    server_tokens off;
    keepalive_requests 1000000;
    keepalive_timeout 60s;

    server {
        include listen.conf;
        location / {
            default_type text/plain;
            return 200 %q;
        }
    }
}
`, max(workers, 1), nsBody)
}

// nsListen is a mode's listen.conf: the lab's listen options (reuseport,
// backlog) on the mode's address.
func nsListen(addr string) string {
	return fmt.Sprintf("listen %s reuseport backlog=65535;\n", addr)
}

// nsNginxArgs runs nginx in the foreground on the mode directory dir.
func nsNginxArgs(bin, dir string) []string {
	return []string{bin, "-p", dir + "/", "-c", dir + "/nginx.conf", "-e", "stderr", "-g", "daemon off;"}
}

// nsServer is one mode's running nginx.
type nsServer struct {
	Mode      string
	URL       string
	Port      int // on 127.0.0.1
	Pid       int // the master, in the host's PID namespace
	Container string
	ID        string // the container's id
	Detail    string
	stop      func()
}

// netstack is the study.
func netstack(ctx context.Context, e *Env) error {
	sc := nsScaleFor(e.Tiny())
	repeats := e.RepeatsOr(sc.Repeats)
	image := composeImage(e.Repo, "NGINX_IMAGE", nsDefaultImage)
	proxy := e.Placement.Proxy
	workers := max(e.Placement.Workers, 1)

	r := e.Record()
	r.Title = "Network stack overhead: nginx bare, in Docker with host networking, in Docker on the bridge"
	r.Question = "How much latency do a container and Docker's bridge add to a request that a host process answers, at the same fixed rate well under capacity?"
	r.Metrics = append(slices.Clone(LatencyMetrics),
		studydata.Metric{Name: nsOfferedMetric, Label: "asked rate", Unit: "req/s"},
		studydata.Metric{Name: nsSentMetric, Label: "sent", Unit: "req/s"},
		studydata.Metric{Name: nsCPUMetric, Label: "nginx CPU per request", Unit: "µs", Better: "lower"},
		studydata.Metric{Name: nsLagMetric, Label: "loadgen send lag p99", Unit: "µs"})
	r.Groups = []studydata.Group{{Name: "", Label: "open loop, fixed rate"}}
	r.Baseline = nsBare
	r.Original = nsOriginal()
	if err := e.Save(); err != nil {
		return err
	}

	// Leftovers of a crashed earlier run: the host nginx by its pid file,
	// the containers by name.
	state := filepath.Join(os.TempDir(), nsStateDirName)
	nsKillLeftover(e, state)
	dc, err := engine()
	if err != nil {
		return fmt.Errorf("netstack: %w", err)
	}
	for _, m := range []string{nsHost, nsBridge} {
		_ = dc.Remove(ctx, nsContainerName+m)
	}
	if err := os.RemoveAll(state); err != nil {
		return fmt.Errorf("netstack: remove %s: %w", state, err)
	}

	// Preflight: the image, its nginx version, the host's nginx.
	if _, err := dc.ImageID(ctx, image); err != nil {
		return fmt.Errorf("netstack: the lab's nginx image %s is missing (make prepare builds it, scripts/images.sh): %w", image, err)
	}
	imageVer, verr := dc.RunOnce(ctx, dockerx.RunSpec{Name: nsContainerName + "version", Image: image, Network: "none",
		Labels: map[string]string{StudyLabel: r.Run}, Cmd: []string{"dpkg-query", "-W", "-f", "${Version}", "nginx"}})
	bin, err := nsHostNginx()
	if err != nil {
		install := "apt-get install -y --no-install-recommends nginx"
		if verr == nil && imageVer != "" {
			install = fmt.Sprintf("apt-get install -y --no-install-recommends nginx=%s nginx-common=%s", imageVer, imageVer)
		}
		return fmt.Errorf("netstack needs Debian's nginx on the host, the build in the lab's image %s: %s "+
			"(with a /usr/sbin/policy-rc.d that exits 101, so that the package starts no service): %w", image, install, err)
	}

	// One config, one directory per mode (byte-identical nginx.conf, the
	// mode's listen.conf).
	conf := nsConfig(workers)
	if err := os.WriteFile(filepath.Join(e.Dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("netstack: %w", err)
	}
	defer os.RemoveAll(state)
	ports := map[string]int{}
	for _, m := range []string{nsBare, nsHost} {
		p, err := freePort()
		if err != nil {
			return fmt.Errorf("netstack: %w", err)
		}
		ports[m] = p
	}
	for _, m := range nsModes {
		addr := "127.0.0.1:" + strconv.Itoa(ports[m])
		if m == nsBridge {
			addr = "0.0.0.0:" + strconv.Itoa(nsContainerPort)
		}
		dir := filepath.Join(state, m)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("netstack: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
			return fmt.Errorf("netstack: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "listen.conf"), []byte(nsListen(addr)), 0o644); err != nil {
			return fmt.Errorf("netstack: %w", err)
		}
	}

	// Start the three; they stay up (idle when not measured) for the run.
	servers := map[string]*nsServer{}
	defer func() {
		for _, m := range nsModes {
			if s := servers[m]; s != nil && s.stop != nil {
				s.stop()
			}
		}
	}()
	bare, err := nsStartBare(e, bin, filepath.Join(state, nsBare), proxy, ports[nsBare])
	if err != nil {
		return err
	}
	servers[nsBare] = bare
	for _, m := range []string{nsHost, nsBridge} {
		s, err := nsStartContainer(ctx, e, m, image, filepath.Join(state, m), proxy, ports[m])
		if err != nil {
			return err
		}
		servers[m] = s
	}
	for _, m := range nsModes {
		if err := WaitHTTP(ctx, servers[m].URL, 20*time.Second); err != nil {
			return fmt.Errorf("netstack: %s nginx: %w", m, err)
		}
	}
	cpusText := "any CPU"
	if len(proxy) > 0 {
		cpusText = "CPU " + proxy.String()
	}
	r.Variants = []studydata.Variant{
		{Name: nsBare, Label: "bare (host process)", Detail: servers[nsBare].Detail},
		{Name: nsHost, Label: "Docker, host network", Detail: servers[nsHost].Detail},
		{Name: nsBridge, Label: "Docker, bridge", Detail: servers[nsBridge].Detail},
	}
	if err := e.Save(); err != nil {
		return err
	}

	// The mechanism: versions, namespaces, cgroups, pinning, quotas.
	if err := nsVersionCheck(ctx, e, bin, nsContainerName+nsHost); err != nil {
		return err
	}
	dockerProxy, bridgeProxy, err := nsModeChecks(ctx, e, servers, proxy, workers)
	if err != nil {
		return err
	}

	// Capacity: a short closed loop per mode; the rate is a share of the
	// smallest.
	capacity := map[string]float64{}
	for _, m := range nsModes {
		res, err := Measure(ctx, Load{URL: servers[m].URL, Conns: sc.CapConns, Warmup: sc.CapWarm, Duration: sc.CapDur})
		if err != nil {
			return fmt.Errorf("netstack: capacity of %s: %w", m, err)
		}
		if res.Errors > 0 || res.Requests == 0 {
			return fmt.Errorf("netstack: capacity of %s: %d errors, %d responses", m, res.Errors, res.Requests)
		}
		capacity[m] = res.RPS()
		e.Log.Info("netstack capacity", "mode", m, "rps", math.Round(capacity[m]))
	}
	rate, smallest, which := nsRate(capacity, nsRateShare, sc.Step)
	r.Method = []string{
		fmt.Sprintf("nginx %s from Debian's package, the same build on the host and in the lab's image %s, serves `return 200` of a %d-byte text/plain body; "+
			"one config for all three modes (%s/nginx.conf, sha256 %s…: worker_processes %d, access_log off, keepalive_requests 1000000 and keepalive_timeout 60s as compose/nginx/nginx.conf, reuseport backlog=65535), "+
			"each mode listening on its own port of 127.0.0.1 (its listen.conf, the only file that differs).", nsVersionOr(imageVer), image, len(nsBody), r.Run, nsConfigHash(conf), workers),
		fmt.Sprintf("All three pinned to the proxy CPUs (%s: taskset of the host process's master before it forks its workers; --cpuset-cpus for the containers), no CPU quota in any of them; "+
			"the loadgen on CPU %s.", cpusText, placement.ListOrAll(e.Placement.Loadgen)),
		fmt.Sprintf("Capacity first: closed loop, %d connections, %s after a %s warm-up, per mode: bare %.0f, hostnet %.0f, bridge %.0f req/s.",
			sc.CapConns, sc.CapDur, sc.CapWarm, capacity[nsBare], capacity[nsHost], capacity[nsBridge]),
		fmt.Sprintf("Rate %.0f req/s = %.0f %% of the smallest measured capacity %.0f req/s (%s), rounded down to a multiple of %.0f: an open loop at that rate for every sample, "+
			"at most %d requests (connections) in flight (about %.0f needed at a 1 ms latency); latency from the intended send time.",
			rate, nsRateShare*100, smallest, which, sc.Step, nsMaxInFlight, math.Ceil(rate/1000)),
		fmt.Sprintf("Each sample: %s of warm-up at the rate (excluded), then a %s window; %d repeats, the three modes interleaved in each repeat, the order rotated per repeat "+
			"(repeat 1 bare, hostnet, bridge; repeat 2 hostnet, bridge, bare; repeat 3 bridge, bare, hostnet; and again). The three nginx run for the whole study, idle when not measured.",
			sc.Warm, sc.Dur, repeats),
		fmt.Sprintf("Host noise: /proc/stat is read every %v during a sample; a sample in which the hypervisor stole %.0f %% or more of some second of the host's CPUs is run again after a quiet gap, at most %d times in all (the last attempt stands; every retake is in the notes).",
			cputime.StealEvery, 100*manifest.StealStarvedShare, stealAttempts),
		"Latency: the loadgen's HdrHistogram (1 µs resolution) of the window's responses; sent: the requests the open loop sent in the window per second (the achieved rate); rps: those completed inside it; nginx CPU per request: the utime+stime of the master and its workers (/proc/<pid>/stat) over the window, per completed request; " +
			"loadgen send lag p99: how late the loadgen itself sent (its timer and CPU), high when the loadgen's CPU was taken.",
	}
	r.Notes = []string{
		fmt.Sprintf("The bridge mode's traffic to 127.0.0.1 goes through docker-proxy (Docker's userland proxy: the nat OUTPUT rule excludes 127.0.0.0/8), a host process on any CPU; its own CPU is not in the nginx CPU metric. %s", bridgeProxy),
		"The original measured with JMeter (1 ms resolution); these latencies are the loadgen's (1 µs resolution), at a rate chosen from this host's capacity rather than 20,000 req/s.",
	}
	if err := e.Save(); err != nil {
		return err
	}

	// The samples.
	bridgeRatios, proxyCPU := []float64{}, []float64{}
	worstRate, worstDone, errorsSeen, capped := 0.0, 0.0, []string{}, int64(0)
	for rep := 1; rep <= repeats; rep++ {
		for _, m := range nsOrder(rep) {
			s := servers[m]
			if _, err := Measure(ctx, Load{URL: s.URL, Rate: rate, Conns: nsMaxInFlight, Duration: sc.Warm}); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				errorsSeen = append(errorsSeen, fmt.Sprintf("%s repeat %d: warm-up failed: %v", m, rep, err))
				_ = e.Add(studydata.Sample{Variant: m, Repeat: rep, Start: time.Now().UTC(), End: time.Now().UTC(), Error: "warm-up: " + err.Error()})
				continue
			}
			ns, err := nsSample(ctx, e, fmt.Sprintf("%s r%d", m, rep), s.Pid, dockerProxy, sc.Warm, Load{URL: s.URL, Rate: rate, Conns: nsMaxInFlight, Duration: sc.Dur})
			cpu0, rx0, dp0, dperr, start, end, res := ns.cpu0, ns.rx0, ns.dp0, ns.dperr, ns.start, ns.end, ns.res
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				errorsSeen = append(errorsSeen, fmt.Sprintf("%s repeat %d: failed: %v", m, rep, err))
				_ = e.Add(studydata.Sample{Variant: m, Repeat: rep, Start: start, End: end, Error: err.Error()})
				continue
			}
			cpu1, cerr := cputime.TreeCPU("/proc", s.Pid)
			rx1, _ := nsRxPackets(s.Pid, "eth0")
			dp1, dperr1 := cputime.TreeCPU("/proc", dockerProxy)
			v := LatencyValues(res)
			v[nsOfferedMetric] = rate
			v[nsLagMetric] = float64(res.LagP99) / float64(time.Microsecond)
			if w := res.Window(); w > 0 {
				v[nsSentMetric] = float64(res.Sent) / w
			}
			done := res.Requests + res.Errors + res.Late
			if cerr == nil && done > 0 {
				v[nsCPUMetric] = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(done)
			}
			if m == nsBridge && done > 0 {
				bridgeRatios = append(bridgeRatios, float64(rx1-rx0)/float64(done))
				if dockerProxy > 0 && dperr == nil && dperr1 == nil {
					proxyCPU = append(proxyCPU, float64(dp1-dp0)/float64(time.Microsecond)/float64(done))
				}
			}
			capped += res.Capped
			if d := math.Abs(v[nsSentMetric]/rate - 1); d > worstRate {
				worstRate = d
			}
			if d := math.Abs(v["rps"]/rate - 1); d > worstDone {
				worstDone = d
			}
			if bad := nsBadResponses(res); bad != "" {
				errorsSeen = append(errorsSeen, fmt.Sprintf("%s repeat %d: %s", m, rep, bad))
			}
			if err := e.Add(studydata.Sample{Variant: m, Repeat: rep, Start: start, End: end, Values: v}); err != nil {
				return err
			}
			e.Log.Info("netstack sample", "mode", m, "repeat", rep, "mean_us", math.Round(v["mean_us"]), "p99_us", v["p99_us"], "rps", math.Round(v["rps"]))
		}
	}

	// Checks over the samples.
	n := len(r.Samples)
	minRatio := math.Inf(1)
	for _, x := range bridgeRatios {
		minRatio = min(minRatio, x)
	}
	if len(bridgeRatios) == 0 {
		minRatio = 0
	}
	_ = e.AddCheck("bridge traffic crossed the bridge", minRatio >= 0.9 && len(bridgeRatios) > 0,
		"eth0 of the bridge container's netns received at least %.2f packets per request over %d samples (every window, by /proc/<pid>/net/dev; want >= 0.90); %s; "+
			"docker-proxy's CPU per request over the bridge windows: %s",
		minRatio, len(bridgeRatios), bridgeProxy, nsMicros(proxyCPU))
	_ = e.AddCheck("0 errors", len(errorsSeen) == 0 && n > 0, "samples %d; transport errors or non-200 answers: %s", n, nsListOrNone(errorsSeen))
	// 1 % of the rate, or what a 50 ms stall of the host (the hypervisor
	// steals CPU in bursts) leaves unsent in a short window, whichever is
	// more: the tiny scale's 1.5 s window cannot hold 1 % through one.
	tol := nsRateTolerance(sc.Dur)
	_ = e.AddCheck("achieved rate", worstRate <= tol && n > 0,
		"asked %.0f req/s; the rate sent in the window off by at most %.3f %% (want <= %.3g %%) over %d samples; "+
			"completions inside the window (rps, without the late ones) off by at most %.3f %%; %d sends waited for the cap of %d in flight",
		rate, worstRate*100, tol*100, n, worstDone*100, capped, nsMaxInFlight)
	return nil
}

// nsOriginal is the original study's findings (Reference rows).
func nsOriginal() []studydata.Reference {
	const how = "nginx at about 20,000 req/s offered, 3 runs per mode, first 35 s excluded (JMeter)"
	return []studydata.Reference{
		{Variant: nsBare, Metric: "mean_us", Value: 150.7, Unit: "µs", Note: how},
		{Variant: nsHost, Metric: "mean_us", Value: 160.8, Unit: "µs", Note: "+10.1 µs over bare; " + how},
		{Variant: nsBridge, Metric: "mean_us", Value: 162.0, Unit: "µs", Note: "+11.3 µs over bare; " + how},
		{Variant: nsBare, Metric: "p99_us", Value: 1000, Unit: "µs", Note: "median p99 1 ms everywhere (JMeter's 1 ms resolution)"},
		{Variant: nsHost, Metric: "p99_us", Value: 1000, Unit: "µs", Note: "median p99 1 ms everywhere (JMeter's 1 ms resolution)"},
		{Variant: nsBridge, Metric: "p99_us", Value: 1000, Unit: "µs", Note: "median p99 1 ms everywhere (JMeter's 1 ms resolution)"},
		{Variant: nsBare, Metric: "error_ratio", Value: 0, Unit: "ratio", Note: "0 % errors"},
		{Variant: nsHost, Metric: "error_ratio", Value: 0, Unit: "ratio", Note: "0 % errors"},
		{Variant: nsBridge, Metric: "error_ratio", Value: 0, Unit: "ratio", Note: "0 % errors"},
	}
}

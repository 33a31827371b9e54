// Package netstack is the netstack study (`loadgen study -study netstack`):
// what the network stack costs a request. The same Debian nginx build
// serves one short static body as a plain host process ("bare"), in a
// container with host networking ("hostnet") and in a container on Docker's
// bridge with its port published on 127.0.0.1 ("bridge"), all pinned to the
// placement's proxy CPUs without a CPU quota, and the loadgen offers each
// the same open-loop rate, well under the smallest measured capacity. It
// owns the three servers, the checks that the modes really differ and the
// samples.
package netstack

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/study"
)

// Study is the netstack study.
var Study = study.Study{Name: "netstack", Run: run}

// The compared modes, in their base order.
const (
	modeBare   = "bare"
	modeHost   = "hostnet"
	modeBridge = "bridge"
)

var modes = []string{modeBare, modeHost, modeBridge}

const (
	staticBody    = "netstack ok\n" // the static response body (12 bytes)
	containerPort = 8080            // the bridge container's port inside its netns
	mountDir      = "/etc/netstack" // where the containers see their mode's directory
	rateShare     = 0.4             // the fixed rate's share of the smallest capacity
	// maxInFlight caps the open loop's requests in flight (each its own
	// connection). At the fixed rate one or two are in flight; with the
	// default cap (10,000) a scheduling stall of the shared host made the
	// loop open thousands of connections at once, which overflowed the
	// accept queue (SYNs dropped: latencies of the 1 s SYN retransmit) and
	// left docker-proxy refusing every connection for the rest of the run
	// (up to 20,000 fds for 10,000 connections, its open-files limit): an
	// artifact of the loadgen, not a cost of the network stack.
	maxInFlight     = 1000
	defaultImage    = "nginx:1.22.1" // compose's default when images.env names none
	containerPrefix = "proxybench-study-netstack-"
	stateDirName    = "proxybench-study-netstack"
	offeredMetric   = "offered_rps"
	sentMetric      = "sent_rps"
	cpuMetric       = "nginx_cpu_us_per_req"
	lagMetric       = "lag_p99_us"
)

// timing is the study's timing at one scale.
type timing struct {
	CapConns        int           // closed-loop connections of the capacity measurement
	CapWarm, CapDur time.Duration // its warm-up and window, per mode
	Warm, Dur       time.Duration // each sample's warm-up (excluded) and window
	Repeats         int
	Step            float64 // the rate is rounded down to a multiple of this
}

func scaleFor(tiny bool) timing {
	if tiny {
		return timing{CapConns: 16, CapWarm: 300 * time.Millisecond, CapDur: time.Second,
			Warm: 500 * time.Millisecond, Dur: 1500 * time.Millisecond, Repeats: 2, Step: 100}
	}
	return timing{CapConns: 32, CapWarm: time.Second, CapDur: 4 * time.Second,
		Warm: 5 * time.Second, Dur: 20 * time.Second, Repeats: 5, Step: 500}
}

// fixedRate is the fixed rate: share of the smallest capacity, rounded down to
// step (at least step).
func fixedRate(capacity map[string]float64, share, step float64) (rate, smallest float64, which string) {
	smallest = math.Inf(1)
	for _, m := range modes {
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

// modeOrder is repeat r's (1-based) order of the modes: the base order
// rotated by r-1, so that each mode leads, follows and ends in turn.
func modeOrder(r int) []string {
	k := (r - 1) % len(modes)
	return append(slices.Clone(modes[k:]), modes[:k]...)
}

// nginxConfig is the one nginx config of all three modes. listen.conf (beside
// it, one per mode) holds the mode's listen line, the only difference; the
// pid file is relative to the prefix (-p, the mode's directory).
func nginxConfig(workers int) string {
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
`, max(workers, 1), staticBody)
}

// listenConf is a mode's listen.conf: the lab's listen options (reuseport,
// backlog) on the mode's address.
func listenConf(addr string) string {
	return fmt.Sprintf("listen %s reuseport backlog=65535;\n", addr)
}

// nginxArgs runs nginx in the foreground on the mode directory dir.
func nginxArgs(bin, dir string) []string {
	return []string{bin, "-p", dir + "/", "-c", dir + "/nginx.conf", "-e", "stderr", "-g", "daemon off;"}
}

// server is one mode's running nginx.
type server struct {
	Mode      string
	URL       string
	Port      int // on 127.0.0.1
	Pid       int // the master, in the host's PID namespace
	Container string
	ID        string // the container's id
	Detail    string
	stop      func()
}

// run is the study: the lab set up, the rate chosen from the modes'
// capacities, the samples, then the checks over them.
func run(ctx context.Context, e *study.Env) error {
	sc := scaleFor(e.Tiny())
	describe(e)
	if err := e.Save(); err != nil {
		return err
	}
	l := &lab{proxy: e.Placement.Proxy, workers: max(e.Placement.Workers, 1), image: study.ComposeImage(e.Repo, "NGINX_IMAGE", defaultImage),
		servers: map[string]*server{}}
	defer l.stop()
	if err := l.setup(ctx, e); err != nil {
		return err
	}
	rate, err := l.chooseRate(ctx, e, sc)
	if err != nil {
		return err
	}
	t, err := l.samples(ctx, e, sc, rate)
	if err != nil {
		return err
	}
	t.check(e, l, sc, rate)
	return nil
}

// describe fills the record's title, question, metrics and baseline.
func describe(e *study.Env) {
	r := e.Record()
	r.Title = "Network stack overhead: nginx bare, in Docker with host networking, in Docker on the bridge"
	r.Question = "How much latency do a container and Docker's bridge add to a request that a host process answers, at the same fixed rate well under capacity?"
	r.Metrics = append(slices.Clone(study.LatencyMetrics),
		studydata.Metric{Name: offeredMetric, Label: "asked rate", Unit: "req/s"},
		studydata.Metric{Name: sentMetric, Label: "sent", Unit: "req/s"},
		studydata.Metric{Name: cpuMetric, Label: "nginx CPU per request", Unit: "µs", Better: "lower"},
		studydata.Metric{Name: lagMetric, Label: "loadgen send lag p99", Unit: "µs"})
	r.Groups = []studydata.Group{{Name: "", Label: "open loop, fixed rate"}}
	r.Baseline = modeBare
	r.Original = original()
}

// original is the original study's findings (Reference rows).
func original() []studydata.Reference {
	const how = "nginx at about 20,000 req/s offered, 3 runs per mode, first 35 s excluded (JMeter)"
	return []studydata.Reference{
		{Variant: modeBare, Metric: "mean_us", Value: 150.7, Unit: "µs", Note: how},
		{Variant: modeHost, Metric: "mean_us", Value: 160.8, Unit: "µs", Note: "+10.1 µs over bare; " + how},
		{Variant: modeBridge, Metric: "mean_us", Value: 162.0, Unit: "µs", Note: "+11.3 µs over bare; " + how},
		{Variant: modeBare, Metric: "p99_us", Value: 1000, Unit: "µs", Note: "median p99 1 ms everywhere (JMeter's 1 ms resolution)"},
		{Variant: modeHost, Metric: "p99_us", Value: 1000, Unit: "µs", Note: "median p99 1 ms everywhere (JMeter's 1 ms resolution)"},
		{Variant: modeBridge, Metric: "p99_us", Value: 1000, Unit: "µs", Note: "median p99 1 ms everywhere (JMeter's 1 ms resolution)"},
		{Variant: modeBare, Metric: "error_ratio", Value: 0, Unit: "ratio", Note: "0 % errors"},
		{Variant: modeHost, Metric: "error_ratio", Value: 0, Unit: "ratio", Note: "0 % errors"},
		{Variant: modeBridge, Metric: "error_ratio", Value: 0, Unit: "ratio", Note: "0 % errors"},
	}
}

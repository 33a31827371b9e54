package study

// The scaleout study: does putting HAProxy in front of nginx, and splitting
// nginx into two backends, pay under one fixed total CPU quota? Three cases
// share a budget of 1.5 CPU: A nginx alone, B HAProxy 0.5 + nginx 1.0, C
// HAProxy 0.5 + two nginx 0.5 each (round-robin). Every container is the
// lab's image with a config the study writes, host networking on ports of
// its own; all six containers stay up for the whole study (an idle one
// costs nothing) so that the cases interleave repeat by repeat.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/internal/placement"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/attack"
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

// soTiming is one scale's durations and rates.
type soTiming struct {
	capWarm, capWindow time.Duration
	warm, window       time.Duration
	repeats            int
	rates              []soRate
}

func scaleoutTiming(e *Env) soTiming {
	if e.Tiny() {
		return soTiming{capWarm: 300 * time.Millisecond, capWindow: time.Second,
			warm: 300 * time.Millisecond, window: time.Second, repeats: e.RepeatsOr(2), rates: scaleoutRates[1:2]}
	}
	return soTiming{capWarm: time.Second, capWindow: 4 * time.Second,
		warm: 3 * time.Second, window: 10 * time.Second, repeats: e.RepeatsOr(5), rates: scaleoutRates}
}

// scaleoutCpuset is where every SUT container runs: the placement's proxy
// CPUs when they can hold the budget, else every online CPU (the budget
// must be reachable; the loadgen then shares its CPUs with the SUT), and
// no cpuset without a placement.
func scaleoutCpuset(p placement.Placement) (placement.CPUSet, string) {
	need := int(math.Ceil(scaleoutBudget))
	switch {
	case len(p.Proxy) == 0:
		return nil, fmt.Sprintf("placement %s: no cpuset; the SUT may run on every CPU, as the loadgen", p.Mode)
	case len(p.Proxy) >= need:
		return p.Proxy, fmt.Sprintf("the placement's proxy CPUs %s hold the %.1f-CPU budget; the loadgen keeps its own CPUs %s",
			p.Proxy, scaleoutBudget, placement.ListOrAll(p.Loadgen))
	}
	return p.Online, fmt.Sprintf("the placement's proxy CPUs (%s) are %d, fewer than the %.1f CPUs of the budget, which they could never give; "+
		"so every SUT container gets every online CPU (%s) and the quotas alone bound the SUT, which then shares CPU %s with the loadgen "+
		"(pinned there); the budget leaves the loadgen at least %.1f CPU",
		p.Proxy, len(p.Proxy), scaleoutBudget, p.Online, placement.ListOrAll(p.Loadgen), float64(len(p.Online))-scaleoutBudget)
}

// scaleoutImages is the lab's nginx and HAProxy images: what
// compose/images.env names (scripts/images.sh writes it), else the upstream
// pins of compose/docker-compose.yml; both must exist on the engine.
func scaleoutImages(ctx context.Context, repo string) (nginx, haproxy string, err error) {
	nginx, haproxy = composeImage(repo, "NGINX_IMAGE", "nginx:1.22.1"), composeImage(repo, "HAPROXY_IMAGE", "haproxy:2.6.12")
	for _, img := range []string{nginx, haproxy} {
		if _, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", img); err != nil {
			return "", "", fmt.Errorf("image %s is not on this engine: build the lab's images first (scripts/images.sh, make images): %w", img, err)
		}
	}
	return nginx, haproxy, nil
}

// scaleoutBodyBytes is the response body: 76800 bytes of a fixed pattern.
func scaleoutBodyBytes() []byte {
	b := make([]byte, scaleoutBody)
	for i := range b {
		b[i] = "0123456789abcdefghijklmnopqrstuvwxyz\n"[i%37]
	}
	return b
}

// nginxConf serves the body and stub_status on one 127.0.0.1 port.
func nginxConf(c soContainer) string {
	return fmt.Sprintf(`# scaleout study: %s, --cpus %g
worker_processes %d;
pid /tmp/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; multi_accept on; }
http {
    access_log off;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:%d reuseport backlog=65535;
        root /srv/scaleout;
        location = /stub_status { stub_status; }
    }
}
`, c.Name, c.CPUs, c.Workers(), c.Port)
}

// haproxyConf balances round-robin over the backends, keep-alive pools
// as the lab's HAProxy has them (http-reuse always).
func haproxyConf(c soContainer) string {
	var srv strings.Builder
	for i, p := range c.Backends {
		fmt.Fprintf(&srv, "    server n%d 127.0.0.1:%d pool-max-conn 256\n", i+1, p)
	}
	return fmt.Sprintf(`# scaleout study: %s, --cpus %g
global
    nbthread %d
    maxconn 4000
    log stderr format raw local0 warning

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
    timeout http-request 60s
    option http-keep-alive
    http-reuse always
    maxconn 4000

frontend fe
    bind 127.0.0.1:%d backlog 65535
    default_backend be

backend be
    balance roundrobin
%s`, c.Name, c.CPUs, c.Workers(), c.Port, srv.String())
}

// soProbe is one container as the engine and the kernel see it.
type soProbe struct {
	id, cgDir, cpuset string
	nano              int64
	quotaUS, periodUS int64
	threads           int
	g                 *cgroup.Group
}

// probeContainer reads a container's quota from docker inspect and from its
// cgroup (cpu.cfs_quota_us / cpu.cfs_period_us on v1, cpu.max on v2).
func probeContainer(ctx context.Context, name string) (soProbe, error) {
	out, err := docker(ctx, "inspect", "--format", "{{.Id}} {{.State.Pid}} {{.HostConfig.NanoCpus}}", name)
	if err != nil {
		return soProbe{}, err
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		return soProbe{}, fmt.Errorf("docker inspect %s: %q: want id, pid and NanoCpus", name, out)
	}
	pid, _ := strconv.Atoi(f[1])
	nano, _ := strconv.ParseInt(f[2], 10, 64)
	if pid <= 0 {
		return soProbe{}, fmt.Errorf("container %s is not running (pid %s)", name, f[1])
	}
	g, err := cgroup.Of(pid)
	if err != nil {
		return soProbe{}, fmt.Errorf("container %s: %w", name, err)
	}
	p := soProbe{id: f[0], nano: nano, g: g}
	p.cgDir, _ = g.Dirs()
	if g.Version == 1 {
		if p.quotaUS, err = readInt(filepath.Join(p.cgDir, "cpu.cfs_quota_us")); err != nil {
			return p, err
		}
		if p.periodUS, err = readInt(filepath.Join(p.cgDir, "cpu.cfs_period_us")); err != nil {
			return p, err
		}
	} else {
		b, err := os.ReadFile(filepath.Join(p.cgDir, "cpu.max"))
		if err != nil {
			return p, err
		}
		q, per, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		p.quotaUS, p.periodUS = -1, 0
		if q != "max" {
			p.quotaUS, _ = strconv.ParseInt(q, 10, 64)
		}
		p.periodUS, _ = strconv.ParseInt(per, 10, 64)
	}
	if p.cpuset, err = g.CPUs(); err != nil && !errors.Is(err, cgroup.ErrNoCpuset) {
		return p, err
	}
	if t, err := g.Threads(); err == nil {
		p.threads = len(t)
	}
	return p, nil
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %q: %w", file, b, err)
	}
	return n, nil
}

// cgroupCores is the quota the cgroup files give, in cores (0: none).
func (p soProbe) cgroupCores() float64 {
	if p.quotaUS < 0 || p.periodUS <= 0 {
		return 0
	}
	return float64(p.quotaUS) / float64(p.periodUS)
}

// soAccount is one container's CPU account at an instant.
type soAccount struct {
	usage time.Duration
	thr   cgroup.Throttling
}

func accountOf(ps []soProbe) ([]soAccount, error) {
	out := make([]soAccount, len(ps))
	for i, p := range ps {
		u, err := p.g.Usage()
		if err != nil {
			return nil, err
		}
		t, err := p.g.Throttling()
		if err != nil {
			return nil, err
		}
		out[i] = soAccount{u, t}
	}
	return out, nil
}

// stubRequests is nginx stub_status's requests counter.
func stubRequests(ctx context.Context, port int) (int64, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d/stub_status", port)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "server accepts handled requests") && sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 {
				return strconv.ParseInt(f[2], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no requests counter in the stub_status page", url)
}

// backendRequests is the stub_status requests counter of each nginx behind
// case c's HAProxy.
func backendRequests(ctx context.Context, c soCase) ([]int64, error) {
	var out []int64
	for _, x := range c.Ctrs[1:] {
		n, err := stubRequests(ctx, x.Port)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// fetchBody GETs url once and returns the status, Content-Length and body.
func fetchBody(ctx context.Context, url string) (int, int64, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.ContentLength, b, err
}

// portsFree fails naming a port something already listens on.
func portsFree() error {
	for _, c := range scaleoutCases {
		for _, x := range c.Ctrs {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", x.Port))
			if err != nil {
				return fmt.Errorf("port 127.0.0.1:%d (for %s) is taken: %w: stop what listens there", x.Port, x.Name, err)
			}
			l.Close()
		}
	}
	return nil
}

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
				logs, _ := docker(context.Background(), "logs", "--tail", "20", x.Name)
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

// scaleoutValues are LatencyValues with any status other than 200 counted
// as an error too (the body is a file that is always there).
func scaleoutValues(res *attack.Result) map[string]float64 {
	v := LatencyValues(res)
	bad := res.Errors
	for code, n := range res.Codes {
		if code != http.StatusOK {
			bad += n
		}
	}
	if n := res.Requests + res.Errors; n > 0 {
		v["error_ratio"] = float64(bad) / float64(n)
	}
	return v
}

// scaleoutSample measures case c at rate and adds the sample; it returns
// the result (nil when the sample failed and was added with its error).
func scaleoutSample(ctx context.Context, e *Env, c soCase, ps []soProbe, group string, rate float64, rep int, tm soTiming) (*attack.Result, error) {
	s := studydata.Sample{Group: group, Variant: c.Name, Repeat: rep, Start: time.Now().UTC()}
	before, err := accountOf(ps)
	if err != nil {
		s.End, s.Error = time.Now().UTC(), fmt.Sprintf("read the case's cgroups: %v", err)
		return nil, e.Add(s)
	}
	t0 := time.Now()
	res, err := Measure(ctx, Load{URL: c.url(), Rate: rate, Warmup: tm.warm, Duration: tm.window})
	elapsed := time.Since(t0)
	s.End = time.Now().UTC()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		s.Error = err.Error()
		return nil, e.Add(s)
	}
	after, err := accountOf(ps)
	if err != nil {
		s.Error = fmt.Sprintf("read the case's cgroups: %v", err)
		return nil, e.Add(s)
	}
	v := scaleoutValues(res)
	var used time.Duration
	worst := 0.0
	for i := range ps {
		used += after[i].usage - before[i].usage
		if per := after[i].thr.Periods - before[i].thr.Periods; per > 0 {
			worst = math.Max(worst, 100*float64(after[i].thr.Throttled-before[i].thr.Throttled)/float64(per))
		}
	}
	v["cpu_cores"] = used.Seconds() / elapsed.Seconds()
	v["throttled_pct"] = worst
	v["send_lag_p99_us"] = float64(res.LagP99) / float64(time.Microsecond)
	s.Values = v
	e.Log.Info("scaleout sample", "case", c.Name, "group", group, "rate", rate, "repeat", rep,
		"p50_us", v["p50_us"], "p99_us", v["p99_us"], "rps", v["rps"], "cpu", v["cpu_cores"], "throttled_pct", worst)
	return res, e.Add(s)
}

// scaleoutPairNotes counts, per rate, the repeats in which one case's p99
// was below another's (samples paired by repeat): the facts behind "did
// the proxy or the split help", kept also when the answer is no. The
// reporter states the significance.
func scaleoutPairNotes(rec *studydata.Record, rs []soRate, rates map[string]float64) []string {
	pairs := [][2]string{{"B", "A"}, {"C", "A"}, {"C", "B"}}
	var out []string
	for _, r := range rs {
		p99 := map[string]map[int]float64{} // case -> repeat -> p99
		for _, s := range rec.Samples {
			if v, ok := s.Values["p99_us"]; ok && s.Group == r.Name && s.Error == "" {
				if p99[s.Variant] == nil {
					p99[s.Variant] = map[int]float64{}
				}
				p99[s.Variant][s.Repeat] = v
			}
		}
		var parts []string
		for _, pr := range pairs {
			n, below := 0, 0
			for rep, x := range p99[pr[0]] {
				if y, ok := p99[pr[1]][rep]; ok {
					n++
					if x < y {
						below++
					}
				}
			}
			parts = append(parts, fmt.Sprintf("%s below %s in %d of %d", pr[0], pr[1], below, n))
		}
		out = append(out, fmt.Sprintf("p99 at %.0f req/s (%s), repeat by repeat: %s.", rates[r.Name], r.Name, strings.Join(parts, "; ")))
	}
	return out
}

// scaleoutSustainedNote says, per case, the smallest share of the offered
// rate a sample completed: below about 95 % the case fell behind and its
// latencies are those of a growing queue.
func scaleoutSustainedNote(rec *studydata.Record, rates map[string]float64) string {
	var parts []string
	for _, c := range scaleoutCases {
		worst, at := math.Inf(1), ""
		for _, s := range rec.Samples {
			if s.Variant != c.Name || s.Error != "" || rates[s.Group] <= 0 {
				continue
			}
			if f := s.Values["rps"] / rates[s.Group]; f < worst {
				worst, at = f, s.Group
			}
		}
		if at != "" {
			parts = append(parts, fmt.Sprintf("%s %.1f %% (at %s)", c.Name, 100*worst, at))
		}
	}
	return "Completed / offered, the worst sample of each case (below about 95 % a case fell behind and measured a queue): " + strings.Join(parts, ", ") + "."
}

package netstack

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
	"proxybench/internal/studydata"
	"proxybench/loadgen/internal/study"
)

// lab is the study's three nginx and what was learnt setting them up.
type lab struct {
	proxy    placement.CPUSet
	workers  int
	image    string
	imageVer string // the image's nginx package version ("" when unknown)
	bin      string // the host's nginx
	conf     string // the one nginx.conf
	state    string // the modes' directories
	servers  map[string]*server
	// dockerProxy is the bridge port's docker-proxy pid (0: none);
	// bridgeProxy says so in words.
	dockerProxy int
	bridgeProxy string
}

// stop stops every server started and removes the modes' directories.
func (l *lab) stop() {
	for _, m := range modes {
		if s := l.servers[m]; s != nil && s.stop != nil {
			s.stop()
		}
	}
	if l.state != "" {
		os.RemoveAll(l.state)
	}
}

// setup clears a crashed run's leftovers, checks the image and the host's
// nginx, writes the modes' configs, starts the three servers and checks
// that the modes really differ.
func (l *lab) setup(ctx context.Context, e *study.Env) error {
	r := e.Record()
	// Leftovers of a crashed earlier run: the host nginx by its pid file,
	// the containers by name.
	state := filepath.Join(os.TempDir(), stateDirName)
	killLeftover(e, state)
	dc, err := study.Engine()
	if err != nil {
		return fmt.Errorf("netstack: %w", err)
	}
	for _, m := range []string{modeHost, modeBridge} {
		_ = dc.Remove(ctx, containerPrefix+m)
	}
	if err := os.RemoveAll(state); err != nil {
		return fmt.Errorf("netstack: remove %s: %w", state, err)
	}

	// Preflight: the image, its nginx version, the host's nginx.
	if _, err := dc.ImageID(ctx, l.image); err != nil {
		return fmt.Errorf("netstack: the lab's nginx image %s is missing (make prepare builds it, scripts/images.sh): %w", l.image, err)
	}
	imageVer, verr := dc.RunOnce(ctx, dockerx.RunSpec{Name: containerPrefix + "version", Image: l.image, Network: "none",
		Labels: map[string]string{study.StudyLabel: r.Run}, Cmd: []string{"dpkg-query", "-W", "-f", "${Version}", "nginx"}})
	l.imageVer = imageVer
	if l.bin, err = hostNginx(); err != nil {
		install := "apt-get install -y --no-install-recommends nginx"
		if verr == nil && imageVer != "" {
			install = fmt.Sprintf("apt-get install -y --no-install-recommends nginx=%s nginx-common=%s", imageVer, imageVer)
		}
		return fmt.Errorf("netstack needs Debian's nginx on the host, the build in the lab's image %s: %s "+
			"(with a /usr/sbin/policy-rc.d that exits 101, so that the package starts no service): %w", l.image, install, err)
	}
	l.conf = nginxConfig(l.workers)
	if err := os.WriteFile(filepath.Join(e.Dir, "nginx.conf"), []byte(l.conf), 0o644); err != nil {
		return fmt.Errorf("netstack: %w", err)
	}
	l.state = state
	ports, err := writeModes(state, l.conf)
	if err != nil {
		return err
	}
	if err := l.start(ctx, e, ports); err != nil {
		return err
	}

	// The mechanism: versions, namespaces, cgroups, pinning, quotas.
	if err := versionCheck(ctx, e, l.bin, containerPrefix+modeHost); err != nil {
		return err
	}
	l.dockerProxy, l.bridgeProxy, err = modeChecks(ctx, e, l.servers, l.proxy, l.workers)
	return err
}

// writeModes writes one directory per mode under state (byte-identical
// nginx.conf, the mode's listen.conf) and returns the host ports of the
// bare and hostnet modes.
func writeModes(state, conf string) (map[string]int, error) {
	ports := map[string]int{}
	for _, m := range []string{modeBare, modeHost} {
		p, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("netstack: %w", err)
		}
		ports[m] = p
	}
	for _, m := range modes {
		addr := "127.0.0.1:" + strconv.Itoa(ports[m])
		if m == modeBridge {
			addr = "0.0.0.0:" + strconv.Itoa(containerPort)
		}
		dir := filepath.Join(state, m)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("netstack: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
			return nil, fmt.Errorf("netstack: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "listen.conf"), []byte(listenConf(addr)), 0o644); err != nil {
			return nil, fmt.Errorf("netstack: %w", err)
		}
	}
	return ports, nil
}

// start starts the three servers, which stay up (idle when not measured)
// for the run, waits for each to answer and records them as the variants.
func (l *lab) start(ctx context.Context, e *study.Env, ports map[string]int) error {
	bare, err := startBare(e, l.bin, filepath.Join(l.state, modeBare), l.proxy, ports[modeBare])
	if err != nil {
		return err
	}
	l.servers[modeBare] = bare
	for _, m := range []string{modeHost, modeBridge} {
		s, err := startContainer(ctx, e, m, l.image, filepath.Join(l.state, m), l.proxy, ports[m])
		if err != nil {
			return err
		}
		l.servers[m] = s
	}
	for _, m := range modes {
		if err := study.WaitHTTP(ctx, l.servers[m].URL, 20*time.Second); err != nil {
			return fmt.Errorf("netstack: %s nginx: %w", m, err)
		}
	}
	e.Record().Variants = []studydata.Variant{
		{Name: modeBare, Label: "bare (host process)", Detail: l.servers[modeBare].Detail},
		{Name: modeHost, Label: "Docker, host network", Detail: l.servers[modeHost].Detail},
		{Name: modeBridge, Label: "Docker, bridge", Detail: l.servers[modeBridge].Detail},
	}
	return e.Save()
}

// chooseRate measures each mode's capacity with a short closed loop and
// returns the fixed rate, a share of the smallest; it writes the method.
func (l *lab) chooseRate(ctx context.Context, e *study.Env, sc timing) (float64, error) {
	capacity := map[string]float64{}
	for _, m := range modes {
		res, err := study.Measure(ctx, study.Load{URL: l.servers[m].URL, Conns: sc.CapConns, Warmup: sc.CapWarm, Duration: sc.CapDur})
		if err != nil {
			return 0, fmt.Errorf("netstack: capacity of %s: %w", m, err)
		}
		if res.Errors > 0 || res.Requests == 0 {
			return 0, fmt.Errorf("netstack: capacity of %s: %d errors, %d responses", m, res.Errors, res.Requests)
		}
		capacity[m] = res.RPS()
		e.Log.Info("netstack capacity", "mode", m, "rps", math.Round(capacity[m]))
	}
	rate, smallest, which := fixedRate(capacity, rateShare, sc.Step)
	l.describeMethod(e, sc, capacity, rate, smallest, which)
	return rate, e.Save()
}

// describeMethod writes the record's method and notes.
func (l *lab) describeMethod(e *study.Env, sc timing, capacity map[string]float64, rate, smallest float64, which string) {
	r := e.Record()
	cpusText := "any CPU"
	if len(l.proxy) > 0 {
		cpusText = "CPU " + l.proxy.String()
	}
	r.Method = []string{
		fmt.Sprintf("nginx %s from Debian's package, the same build on the host and in the lab's image %s, serves `return 200` of a %d-byte text/plain body; "+
			"one config for all three modes (%s/nginx.conf, sha256 %s…: worker_processes %d, access_log off, keepalive_requests 1000000 and keepalive_timeout 60s as compose/nginx/nginx.conf, reuseport backlog=65535), "+
			"each mode listening on its own port of 127.0.0.1 (its listen.conf, the only file that differs).", versionOr(l.imageVer), l.image, len(staticBody), r.Run, configHash(l.conf), l.workers),
		fmt.Sprintf("All three pinned to the proxy CPUs (%s: taskset of the host process's master before it forks its workers; --cpuset-cpus for the containers), no CPU quota in any of them; "+
			"the loadgen on CPU %s.", cpusText, placement.ListOrAll(e.Placement.Loadgen)),
		fmt.Sprintf("Capacity first: closed loop, %d connections, %s after a %s warm-up, per mode: bare %.0f, hostnet %.0f, bridge %.0f req/s.",
			sc.CapConns, sc.CapDur, sc.CapWarm, capacity[modeBare], capacity[modeHost], capacity[modeBridge]),
		fmt.Sprintf("Rate %.0f req/s = %.0f %% of the smallest measured capacity %.0f req/s (%s), rounded down to a multiple of %.0f: an open loop at that rate for every sample, "+
			"at most %d requests (connections) in flight (about %.0f needed at a 1 ms latency); latency from the intended send time.",
			rate, rateShare*100, smallest, which, sc.Step, maxInFlight, math.Ceil(rate/1000)),
		fmt.Sprintf("Each sample: %s of warm-up at the rate (excluded), then a %s window; %d repeats, the three modes interleaved in each repeat, the order rotated per repeat "+
			"(repeat 1 bare, hostnet, bridge; repeat 2 hostnet, bridge, bare; repeat 3 bridge, bare, hostnet; and again). The three nginx run for the whole study, idle when not measured.",
			sc.Warm, sc.Dur, e.RepeatsOr(sc.Repeats)),
		fmt.Sprintf("Host noise: /proc/stat is read every %v during a sample; a sample in which the hypervisor stole %.0f %% or more of some second of the host's CPUs is run again after a quiet gap, at most %d times in all (the last attempt stands; every retake is in the notes).",
			cputime.StealEvery, 100*manifest.StealStarvedShare, study.StealAttempts),
		"Latency: the loadgen's HdrHistogram (1 µs resolution) of the window's responses; sent: the requests the open loop sent in the window per second (the achieved rate); rps: those completed inside it; nginx CPU per request: the utime+stime of the master and its workers (/proc/<pid>/stat) over the window, per completed request; " +
			"loadgen send lag p99: how late the loadgen itself sent (its timer and CPU), high when the loadgen's CPU was taken.",
	}
	r.Notes = []string{
		fmt.Sprintf("The bridge mode's traffic to 127.0.0.1 goes through docker-proxy (Docker's userland proxy: the nat OUTPUT rule excludes 127.0.0.0/8), a host process on any CPU; its own CPU is not in the nginx CPU metric. %s", l.bridgeProxy),
		"The original measured with JMeter (1 ms resolution); these latencies are the loadgen's (1 µs resolution), at a rate chosen from this host's capacity rather than 20,000 req/s.",
	}
}

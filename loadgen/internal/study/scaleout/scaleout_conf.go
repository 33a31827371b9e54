package scaleout

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"proxybench/internal/placement"
	"proxybench/loadgen/internal/study"
)

// timing is one scale's durations and rates.
type timing struct {
	capWarm, capWindow time.Duration
	warm, window       time.Duration
	repeats            int
	rates              []rateLevel
}

func timingOf(e *study.Env) timing {
	if e.Tiny() {
		return timing{capWarm: 300 * time.Millisecond, capWindow: time.Second,
			warm: 300 * time.Millisecond, window: time.Second, repeats: e.RepeatsOr(2), rates: rateLevels[1:2]}
	}
	return timing{capWarm: time.Second, capWindow: 4 * time.Second,
		warm: 3 * time.Second, window: 10 * time.Second, repeats: e.RepeatsOr(5), rates: rateLevels}
}

// cpusetOf is where every SUT container runs: the placement's proxy
// CPUs when they can hold the budget, else every online CPU (the budget
// must be reachable; the loadgen then shares its CPUs with the SUT), and
// no cpuset without a placement.
func cpusetOf(p placement.Placement) (placement.CPUSet, string) {
	need := int(math.Ceil(budget))
	switch {
	case len(p.Proxy) == 0:
		return nil, fmt.Sprintf("placement %s: no cpuset; the SUT may run on every CPU, as the loadgen", p.Mode)
	case len(p.Proxy) >= need:
		return p.Proxy, fmt.Sprintf("the placement's proxy CPUs %s hold the %.1f-CPU budget; the loadgen keeps its own CPUs %s",
			p.Proxy, budget, placement.ListOrAll(p.Loadgen))
	}
	return p.Online, fmt.Sprintf("the placement's proxy CPUs (%s) are %d, fewer than the %.1f CPUs of the budget, which they could never give; "+
		"so every SUT container gets every online CPU (%s) and the quotas alone bound the SUT, which then shares CPU %s with the loadgen "+
		"(pinned there); the budget leaves the loadgen at least %.1f CPU",
		p.Proxy, len(p.Proxy), budget, p.Online, placement.ListOrAll(p.Loadgen), float64(len(p.Online))-budget)
}

// images is the lab's nginx and HAProxy images: what
// compose/images.env names (scripts/images.sh writes it), else the upstream
// pins of compose/docker-compose.yml; both must exist on the engine.
func images(ctx context.Context, repo string) (nginx, haproxy string, err error) {
	nginx, haproxy = study.ComposeImage(repo, "NGINX_IMAGE", "nginx:1.22.1"), study.ComposeImage(repo, "HAPROXY_IMAGE", "haproxy:2.6.12")
	dc, err := study.Engine()
	if err != nil {
		return "", "", err
	}
	for _, img := range []string{nginx, haproxy} {
		if _, err := dc.ImageID(ctx, img); err != nil {
			return "", "", fmt.Errorf("image %s is not on this engine: build the lab's images first (scripts/images.sh, make images): %w", img, err)
		}
	}
	return nginx, haproxy, nil
}

// bodyBytes is the response body: 76800 bytes of a fixed pattern.
func bodyBytes() []byte {
	b := make([]byte, bodySize)
	for i := range b {
		b[i] = "0123456789abcdefghijklmnopqrstuvwxyz\n"[i%37]
	}
	return b
}

// nginxConf serves the body and stub_status on one 127.0.0.1 port.
func nginxConf(c container) string {
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
func haproxyConf(c container) string {
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

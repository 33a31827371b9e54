package scaleout

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/cgroup"
	"proxybench/loadgen/internal/study"
)

// probe is one container as the engine and the kernel see it.
type probe struct {
	id, cgDir, cpuset string
	nano              int64
	quotaUS, periodUS int64
	threads           int
	g                 *cgroup.Group
}

// probeContainer reads a container's quota from docker inspect and from its
// cgroup (cpu.cfs_quota_us / cpu.cfs_period_us on v1, cpu.max on v2).
func probeContainer(ctx context.Context, name string) (probe, error) {
	dc, err := study.Engine()
	if err != nil {
		return probe{}, err
	}
	ctr, err := dc.Inspect(ctx, name)
	if err != nil {
		return probe{}, err
	}
	if ctr.Pid <= 0 {
		return probe{}, fmt.Errorf("container %s is not running (%s %s)", name, ctr.State, ctr.ExitInfo())
	}
	g, err := cgroup.Of(ctr.Pid)
	if err != nil {
		return probe{}, fmt.Errorf("container %s: %w", name, err)
	}
	p := probe{id: ctr.ID, nano: int64(math.Round(ctr.CPUs * 1e9)), g: g}
	p.cgDir, _ = g.Dirs()
	if p.quotaUS, p.periodUS, err = g.OwnQuota(); err != nil {
		return p, err
	}
	if p.cpuset, err = g.CPUs(); err != nil && !errors.Is(err, cgroup.ErrNoCpuset) {
		return p, err
	}
	if t, err := g.Threads(); err == nil {
		p.threads = len(t)
	}
	return p, nil
}

// cgroupCores is the quota the cgroup files give, in cores (0: none).
func (p probe) cgroupCores() float64 {
	if p.quotaUS < 0 || p.periodUS <= 0 {
		return 0
	}
	return float64(p.quotaUS) / float64(p.periodUS)
}

// account is one container's CPU account at an instant.
type account struct {
	usage time.Duration
	thr   cgroup.Throttling
}

func accountOf(ps []probe) ([]account, error) {
	out := make([]account, len(ps))
	for i, p := range ps {
		u, err := p.g.Usage()
		if err != nil {
			return nil, err
		}
		t, err := p.g.Throttling()
		if err != nil {
			return nil, err
		}
		out[i] = account{u, t}
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
func backendRequests(ctx context.Context, c testCase) ([]int64, error) {
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
	for _, c := range cases {
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

// Package containers owns the exporter's container CPU and memory series:
// cAdvisor's manager with its raw cgroup handler (cgroup v1 or v2) and its
// Prometheus collector, embedded, exporting only the compose project's
// containers, each labelled with its container name, compose service and
// image as the Docker API names them.
package containers

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/google/cadvisor/lib/cache/memory"
	"github.com/google/cadvisor/lib/container"
	"github.com/google/cadvisor/lib/manager"
	"github.com/google/cadvisor/lib/metrics"
	info "github.com/google/cadvisor/lib/model"
	"github.com/google/cadvisor/lib/utils/sysfs"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"proxybench/internal/dockerx"
)

// Lister is the part of dockerx.Client used to name cgroups.
type Lister interface {
	List(ctx context.Context, labels ...string) ([]dockerx.Container, error)
}

// Config of the container stats.
type Config struct {
	Project string // compose project whose containers are exported
	// Housekeeping is how often cAdvisor reads each container's cgroup;
	// fixed (not dynamic), so a 1 s scrape always sees fresh numbers.
	Housekeeping time.Duration
	// Jitter stretches each housekeeping period by up to this factor at
	// random. cAdvisor's default 1.0 makes "1 s" mean a sample every 1-2 s
	// (each timestamped, so Prometheus places it right); 0.1 would sample
	// every 1.0-1.1 s but measured about 0.2 % of a core more at idle, which
	// the exporter's 2 % budget cannot spare.
	Jitter float64
	// CgroupPrefixes are the cgroups cAdvisor tracks at all: Docker's
	// cgroupfs driver puts containers at /docker/<id> (cgroup v1 and v2),
	// the systemd driver at /system.slice/docker-<id>.scope.
	CgroupPrefixes []string
	// Refresh bounds how often an unknown cgroup makes us ask Docker again.
	Refresh time.Duration
	// SpecEvery is how often the container list and specs (limits) are
	// re-read; a new container is exported at most this late.
	SpecEvery time.Duration
}

// DefaultConfig is what the exporter runs with.
var DefaultConfig = Config{
	Project:        "proxybench",
	Housekeeping:   time.Second,
	Jitter:         1.0,
	CgroupPrefixes: []string{"/docker/", "/system.slice/docker-"},
	Refresh:        time.Second,
	SpecEvery:      5 * time.Second,
}

// included are the cAdvisor metric groups exported: CPU and memory.
// Network is left out because the lab's containers share the host's
// network namespace, where per-container numbers would be the host's; block
// I/O because the proxies do none and its eight cgroup files per container
// per second cost a measurable part of the exporter's idle CPU budget.
var included = container.MetricSet{
	container.CpuUsageMetrics:    struct{}{},
	container.MemoryUsageMetrics: struct{}{},
}

// Stats runs the cAdvisor manager.
type Stats struct {
	m manager.Manager
}

// Start starts cAdvisor and registers its collector with reg.
func Start(ctx context.Context, cfg Config, docker Lister, reg prometheus.Registerer, log *slog.Logger) (*Stats, error) {
	klog.SetSlogLogger(log.With("component", "cadvisor"))
	hk, dynamic := cfg.Housekeeping, false
	*manager.JitterFactor = cfg.Jitter
	cache := memory.New(3*cfg.Housekeeping+time.Second, nil)
	m, err := manager.New(cache, sysfs.NewRealSysFs(),
		manager.HousekeepingConfig{Interval: &hk, AllowDynamic: &dynamic},
		included, cfg.CgroupPrefixes, nil, "", 0)
	if err != nil {
		return nil, fmt.Errorf("cadvisor manager (is /sys/fs/cgroup mounted? in a container mount it read-only and use pid: host): %w", err)
	}
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("start cadvisor manager: %w", err)
	}
	p := &provider{m: m, cache: cache, names: newNames(ctx, docker, cfg.Project, cfg.Refresh), specEvery: cfg.SpecEvery}
	reg.MustRegister(metrics.NewPrometheusCollector(p, labels, included, clock.RealClock{},
		info.RequestOptions{IdType: "name", Count: 1, Recursive: true}))
	return &Stats{m: m}, nil
}

// Stop stops cAdvisor's housekeeping.
func (s *Stats) Stop() error { return s.m.Stop() }

// labels are the base labels of every container_* series.
func labels(ci *info.ContainerInfo) map[string]string {
	l := map[string]string{metrics.LabelID: ci.Name, metrics.LabelName: "", metrics.LabelImage: ci.Spec.Image, "service": ""}
	if len(ci.Aliases) > 0 {
		l[metrics.LabelName] = ci.Aliases[0]
	}
	if len(ci.Aliases) > 1 {
		l["service"] = ci.Aliases[1]
	}
	return l
}

// provider serves cAdvisor's collector only the project's containers,
// named through Docker.
//
// The manager's own GetRequestedContainersInfo re-reads every container's
// spec and lists its sub-cgroups on every call, which at a 1 s scrape was
// most of the exporter's idle CPU. So the container list and specs are
// refreshed every specEvery (cAdvisor itself refreshes specs every 5 s) and
// each scrape takes only the latest housekeeping sample from the cache.
type provider struct {
	m         manager.Manager
	cache     *memory.InMemoryCache
	names     *names
	specEvery time.Duration

	mu      sync.Mutex
	infos   map[string]*info.ContainerInfo // by cgroup name, Stats unset
	fetched time.Time
}

func (p *provider) GetRequestedContainersInfo(name string, opts info.RequestOptions) (map[string]*info.ContainerInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.infos == nil || time.Since(p.fetched) >= p.specEvery {
		all, err := p.m.GetRequestedContainersInfo(name, opts)
		if err != nil && len(all) == 0 {
			return nil, err
		}
		p.infos = p.project(all)
		p.fetched = time.Now()
	}
	out := make(map[string]*info.ContainerInfo, len(p.infos))
	for cg, ci := range p.infos {
		stats, err := p.cache.RecentStats(cg, time.Time{}, time.Time{}, opts.Count)
		if err != nil || len(stats) == 0 {
			continue // gone, or not housekept yet
		}
		cp := *ci
		cp.Stats = stats
		out[cg] = &cp
	}
	return out, nil
}

// project keeps the project's containers and names them.
func (p *provider) project(all map[string]*info.ContainerInfo) map[string]*info.ContainerInfo {
	out := make(map[string]*info.ContainerInfo, len(all))
	for cg, ci := range all {
		id := CgroupContainerID(cg)
		if id == "" {
			continue
		}
		ctr, ok := p.names.lookup(id)
		if !ok {
			continue
		}
		cp := *ci
		cp.Aliases = []string{ctr.Name, ctr.Service}
		cp.Spec.Image = ctr.Image
		cp.Stats = nil
		out[cg] = &cp
	}
	return out
}

func (p *provider) GetVersionInfo() (*info.VersionInfo, error) { return p.m.GetVersionInfo() }
func (p *provider) GetMachineInfo() (*info.MachineInfo, error) { return p.m.GetMachineInfo() }

// CgroupContainerID returns the Docker container id a cgroup path names
// (/docker/<id>, /system.slice/docker-<id>.scope), or "".
func CgroupContainerID(cg string) string {
	base := path.Base(cg)
	base = strings.TrimSuffix(strings.TrimPrefix(base, "docker-"), ".scope")
	if len(base) != 64 || strings.Trim(base, "0123456789abcdef") != "" {
		return ""
	}
	return base
}

// names maps container ids to the project's containers, asking Docker
// again when an unknown id shows up (at most once per refresh).
type names struct {
	ctx     context.Context
	docker  Lister
	project string
	refresh time.Duration

	mu    sync.Mutex
	byID  map[string]dockerx.Container
	asked time.Time
}

func newNames(ctx context.Context, docker Lister, project string, refresh time.Duration) *names {
	return &names{ctx: ctx, docker: docker, project: project, refresh: refresh}
}

func (n *names) lookup(id string) (dockerx.Container, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.byID[id]; ok {
		return c, true
	}
	if time.Since(n.asked) < n.refresh {
		return dockerx.Container{}, false
	}
	n.asked = time.Now()
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	list, err := n.docker.List(ctx, dockerx.LabelProject+"="+n.project)
	if err != nil {
		return dockerx.Container{}, false // engine away: keep serving what we know
	}
	n.byID = make(map[string]dockerx.Container, len(list))
	for _, c := range list {
		n.byID[c.ID] = c
	}
	c, ok := n.byID[id]
	return c, ok
}

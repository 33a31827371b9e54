// Package info owns proxybench_proxy_info: one series per proxy container
// of the stack naming its image, image id and the real version of the
// binary running in it (asked from the binary, not read from a tag).
package info

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/dockerx"
)

// Unknown is the version label of a proxy whose binary would not say.
const Unknown = "unknown"

// Engine is the part of dockerx.Client used here.
type Engine interface {
	List(ctx context.Context, labels ...string) ([]dockerx.Container, error)
	Version(ctx context.Context, ctr dockerx.Container) (string, error)
}

// Collector serves the proxy info series from a snapshot refreshed in the
// background, so a scrape never waits on the engine.
type Collector struct {
	engine  Engine
	labels  []string
	log     *slog.Logger
	desc    *prometheus.Desc
	mu      sync.Mutex
	proxies []proxy
	// versions by container id: a container's binary cannot change
	// (a new image means a new container).
	versions map[string]string
	failed   map[string]bool
}

type proxy struct {
	ctr     dockerx.Container
	version string
}

var _ prometheus.Collector = (*Collector)(nil)

// New makes the collector for the project's containers labelled
// proxybench.role=proxy.
func New(engine Engine, project string, log *slog.Logger) *Collector {
	return &Collector{
		engine: engine,
		labels: []string{dockerx.LabelProject + "=" + project, dockerx.LabelRole + "=proxy"},
		log:    log,
		desc: prometheus.NewDesc("proxybench_proxy_info", "A proxy container of the stack: its image, image id and the version its binary reports.",
			[]string{"container", "service", "image", "image_id", "version"}, nil),
		versions: map[string]string{},
		failed:   map[string]bool{},
	}
}

// Run refreshes the snapshot every interval until ctx ends.
func (c *Collector) Run(ctx context.Context, interval time.Duration) {
	for {
		c.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// Refresh lists the proxies and asks each running one, once, for its
// version. A stopped proxy that never ran while watched has no series.
func (c *Collector) Refresh(ctx context.Context) {
	list, err := c.engine.List(ctx, c.labels...)
	if err != nil {
		c.log.Debug("list proxy containers", "err", err)
		return // keep the last snapshot while the engine is away
	}
	ps := make([]proxy, 0, len(list))
	for _, ctr := range list {
		v, ok := c.versions[ctr.ID]
		if !ok && ctr.Running {
			var err error
			switch v, err = c.engine.Version(ctx, ctr); {
			case err == nil:
				c.versions[ctr.ID] = v
			case errors.Is(err, dockerx.ErrNoVersion):
				// Built without a version: asking again will not help.
				v, c.versions[ctr.ID] = Unknown, Unknown
				c.log.Warn("proxy binary has no version", "container", ctr.Name, "err", err)
			default:
				v = Unknown // asked again at the next refresh
				if !c.failed[ctr.ID] {
					c.log.Warn("proxy version unknown", "container", ctr.Name, "err", err)
					c.failed[ctr.ID] = true
				}
			}
		}
		if v != "" {
			ps = append(ps, proxy{ctr: ctr, version: v})
		}
	}
	c.mu.Lock()
	c.proxies = ps
	c.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.proxies {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, p.ctr.Name, p.ctr.Service, p.ctr.Image, p.ctr.ImageID, p.version)
	}
}

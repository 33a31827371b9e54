// Package info owns proxybench_proxy_info: one series per proxy container
// of the stack naming its image, image id and the version its image
// declares (the OCI label org.opencontainers.image.version, on the image or
// the container). The exporter reaches the engine through a read-only
// filter, so it cannot run the binary to ask it; the loadgen, which holds
// the engine's full API for isolation, asks every binary itself and
// records the real versions in each run's manifest, which the report
// prefers.
package info

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/dockerx"
	"proxybench/internal/metricdefs"
)

// Unknown is the version label of a proxy whose image declares none.
const Unknown = "unknown"

// LabelVersion is the OCI label read for the version.
const LabelVersion = "org.opencontainers.image.version"

// Engine is the part of dockerx.Client used here.
type Engine interface {
	List(ctx context.Context, labels ...string) ([]dockerx.Container, error)
}

// Collector serves the proxy info series from a snapshot refreshed in the
// background, so a scrape never waits on the engine.
type Collector struct {
	engine  Engine
	labels  []string
	log     *slog.Logger
	desc    *prometheus.Desc
	mu      sync.Mutex
	proxies []dockerx.Container
}

var _ prometheus.Collector = (*Collector)(nil)

// New makes the collector for the project's containers labelled
// proxybench.role=proxy.
func New(engine Engine, project string, log *slog.Logger) *Collector {
	return &Collector{
		engine: engine,
		labels: []string{dockerx.LabelProject + "=" + project, dockerx.LabelRole + "=proxy"},
		log:    log,
		desc:   metricdefs.ProxyInfo.NewDesc(nil),
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

// Refresh lists the proxies. A stopped proxy that never ran while watched
// has no series; one that ran keeps its series while its container exists.
func (c *Collector) Refresh(ctx context.Context) {
	list, err := c.engine.List(ctx, c.labels...)
	if err != nil {
		c.log.Debug("list proxy containers", "err", err)
		return // keep the last snapshot while the engine is away
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range c.proxies {
		seen[p.ID] = true
	}
	ps := make([]dockerx.Container, 0, len(list))
	for _, ctr := range list {
		if ctr.Running || seen[ctr.ID] {
			ps = append(ps, ctr)
		}
	}
	c.proxies = ps
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.proxies {
		v := p.Labels[LabelVersion]
		if v == "" {
			v = Unknown
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, p.Name, p.Service, p.Image, p.ImageID, v)
	}
}

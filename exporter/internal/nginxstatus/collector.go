package nginxstatus

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"proxybench/internal/metricdefs"
)

// Collector scrapes stub_status at every Prometheus scrape.
type Collector struct {
	url     string
	client  *http.Client
	timeout time.Duration
	log     *slog.Logger

	up                                *prometheus.Desc
	accepted, handled, requests       *prometheus.Desc
	active, reading, writing, waiting *prometheus.Desc
	scrapeSuccess, scrapeDuration     *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// New makes the collector for the stub_status page at url.
func New(url string, client *http.Client, timeout time.Duration, log *slog.Logger) *Collector {
	collector := prometheus.Labels{"collector": "nginx"}
	return &Collector{
		url: url, client: client, timeout: timeout, log: log,
		up:             metricdefs.NginxUp.NewDesc(nil),
		accepted:       metricdefs.NginxAccepted.NewDesc(nil),
		handled:        metricdefs.NginxHandled.NewDesc(nil),
		requests:       metricdefs.NginxRequests.NewDesc(nil),
		active:         metricdefs.NginxActive.NewDesc(nil),
		reading:        metricdefs.NginxReading.NewDesc(nil),
		writing:        metricdefs.NginxWriting.NewDesc(nil),
		waiting:        metricdefs.NginxWaiting.NewDesc(nil),
		scrapeSuccess:  metricdefs.ScrapeCollectorSuccess.NewDesc(collector),
		scrapeDuration: metricdefs.ScrapeCollectorDuration.NewDesc(collector),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.accepted, c.handled, c.requests, c.active, c.reading, c.writing, c.waiting, c.scrapeSuccess, c.scrapeDuration} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	s, err := c.fetch()
	ch <- prometheus.MustNewConstMetric(c.scrapeDuration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		c.log.Debug("nginx stub_status scrape failed", "url", c.url, "err", err)
		ch <- prometheus.MustNewConstMetric(c.scrapeSuccess, prometheus.GaugeValue, 0)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeSuccess, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, m := range []struct {
		d *prometheus.Desc
		t prometheus.ValueType
		v uint64
	}{
		{c.accepted, prometheus.CounterValue, s.Accepted}, {c.handled, prometheus.CounterValue, s.Handled},
		{c.requests, prometheus.CounterValue, s.Requests}, {c.active, prometheus.GaugeValue, s.Active},
		{c.reading, prometheus.GaugeValue, s.Reading}, {c.writing, prometheus.GaugeValue, s.Writing},
		{c.waiting, prometheus.GaugeValue, s.Waiting},
	} {
		ch <- prometheus.MustNewConstMetric(m.d, m.t, float64(m.v))
	}
}

func (c *Collector) fetch() (Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return Status{}, fmt.Errorf("stub_status request: %w", err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return Status{}, fmt.Errorf("get %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return Status{}, fmt.Errorf("read %s: %w", c.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("get %s: status %s", c.url, resp.Status)
	}
	return Parse(body)
}

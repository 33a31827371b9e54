package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"proxybench/internal/atomicfile"
	"proxybench/internal/manifest"
	"proxybench/internal/stack"
)

// DiscoveryWait bounds the wait for Prometheus's first scrape of a worker
// whose target was just written. Prometheus applies a changed file_sd file
// in steps: inotify wakes the file discovery at once; the discovery
// manager passes the change on within about 100 ms when it sent nothing
// for 5 s, else after up to 5 s (its backoff grows after every update it
// sends; discovery/manager.go, sender and updatert); the scrape manager
// applies it on its next reload tick
// (--scrape.discovery-reload-interval: 5 s by default, 1 s in the lab's
// compose file; scrape/manager.go, reloader); and a new target's first
// scrape falls within one scrape interval (its offset). 5 + 5 + 1 s at
// the defaults, with slack for a loaded host.
const DiscoveryWait = 15 * time.Second

// targetGroup is one entry of a file_sd file.
type targetGroup struct {
	Targets []string `json:"targets"`
}

// writeTargets replaces file with the addresses of the running workers
// (none: an empty list), atomically: Prometheus's file discovery watches
// the directory and reads the file whole after the rename.
func writeTargets(file string, hs []*Handle) error {
	var addrs []string
	for _, h := range hs {
		if h != nil {
			addrs = append(addrs, scrapeAddr(h.Addr))
		}
	}
	groups := []targetGroup{}
	if len(addrs) > 0 {
		groups = append(groups, targetGroup{Targets: addrs})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("the loadgen workers' scrape targets: %w", err)
	}
	return nil
}

// scrapeAddr is where Prometheus scrapes a worker listening on addr: a
// worker listening on every interface is scraped on loopback.
func scrapeAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// discovered waits, when Prometheus is to scrape the workers, for its
// first scrape of each worker in fresh (just started, its target just
// written), at most ScrapeWait, then lets the first window's counting
// baseline fall after it (manifest.AfterFirstScrape). A worker not
// scraped in time is named in a warning: its cells' traffic may be missing
// server-side.
func (c *Coordinator) discovered(ctx context.Context, hs []*Handle, fresh []int) {
	if len(fresh) == 0 || c.Targets == "" || c.ScrapeWait <= 0 {
		return
	}
	began := time.Now()
	ok := make([]bool, len(fresh))
	wctx, cancel := context.WithTimeout(ctx, c.ScrapeWait)
	defer cancel()
	var wg sync.WaitGroup
	for k, i := range fresh {
		wg.Go(func() { ok[k] = c.waitScraped(wctx, hs[i], 0) == nil })
	}
	wg.Wait()
	var late []string
	some := false
	c.mu.Lock()
	for k, i := range fresh {
		if ok[k] && c.handles[i] == hs[i] {
			c.scraped[i] = true
		}
		if ok[k] {
			some = true
		} else {
			late = append(late, strconv.Itoa(i))
		}
	}
	c.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if len(late) > 0 {
		c.Log.Warn("Prometheus has not scraped these loadgen workers: their cells' traffic may be missing server-side (prometheus_gap, or no_server_side_series when no worker is scraped); "+
			"is Prometheus up, with the job "+stack.WorkerJob+" reading the targets file's directory?",
			"workers", strings.Join(late, ","), "waited", c.ScrapeWait.String(), "targets", c.Targets)
	}
	if some {
		c.Log.Info("Prometheus scraped the loadgen workers", "workers", len(fresh)-len(late), "after", time.Since(began).Round(time.Millisecond).String())
		t := time.NewTimer(manifest.AfterFirstScrape)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// ScrapedAfter is closed once Prometheus has scraped every worker it has
// scraped since the worker started in a scrape that began at or after t
// (measured on each worker's clock from now: no offset enters). Workers
// Prometheus never scraped, and workers gone, are not waited for. Never
// closed when a worker does not answer; the caller bounds its wait.
func (c *Coordinator) ScrapedAfter(t time.Time) <-chan struct{} {
	c.init()
	c.mu.Lock()
	var hs []*Handle
	for i, h := range c.handles {
		if h == nil || !c.scraped[i] {
			continue
		}
		if gone, _ := h.Gone(); !gone {
			hs = append(hs, h)
		}
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		in := time.Until(t)
		ctx, cancel := context.WithTimeout(context.Background(), max(in, 0)+DiscoveryWait)
		defer cancel()
		errs := make([]error, len(hs))
		var wg sync.WaitGroup
		for i, h := range hs {
			wg.Go(func() { errs[i] = c.waitScraped(ctx, h, in) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				c.Log.Debug("a loadgen worker's last scrape was not seen", "worker", hs[i].Index, "err", err)
				return
			}
		}
		close(done)
	}()
	return done
}

// waitScraped returns once Prometheus has scraped worker h in a scrape
// that began at or after the worker's now + in.
func (c *Coordinator) waitScraped(ctx context.Context, h *Handle, in time.Duration) error {
	q := url.Values{"in": {max(in, 0).String()}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.Addr+PathScraped+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("loadgen worker %d: GET %s: %s", h.Index, PathScraped, resp.Status)
	}
	return nil
}

package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/load"
)

// Defaults of a Coordinator.
const (
	// DefaultLead is how far ahead of now the start barrier is set: the
	// cell reaches every worker and each sets up its connections before it.
	DefaultLead = 250 * time.Millisecond
	// clockSamples is how many round trips an offset is measured over;
	// the one of least delay is kept (NTP's rule: its bound is tightest).
	clockSamples = 5
	// endGrace is how long after the window's end plus the request timeout
	// (the longest drain) a worker may take to send its result.
	endGrace = 5 * time.Second
)

// Coordinator runs attacks on Workers loadgen workers as one instrument.
// It implements the runner's Attacker: Run gives worker i of N segment i
// of the load (load.Segment; a load of fewer connections than workers goes
// to the first of them, one connection each), measures each worker's
// clock offset, sets one start barrier, and returns the exact merge of
// their results with each worker's part in Result.Workers. A worker found
// gone before an attack is started again.
type Coordinator struct {
	Workers  int
	Launcher Launcher // default: Local{}
	// CAFile is the file the CA pool of a TLS attack's spec came from
	// (the lab CA), sent to the workers as PEM.
	CAFile string
	Lead   time.Duration // default DefaultLead
	Log    *slog.Logger
	// Targets is the file_sd file Prometheus finds the workers in (job
	// loadgen_worker of prometheus.yml; stack.WorkerTargetsFile): their
	// addresses, replaced atomically whenever a worker starts and removed
	// by Close. "": none is written and nothing waits for Prometheus.
	Targets string
	// ScrapeWait bounds the wait for Prometheus's first scrape of a worker
	// just started, before the attack that follows (DiscoveryWait suits
	// Prometheus's own delays); 0: not waited for.
	ScrapeWait time.Duration

	client  *http.Client
	host    string
	mu      sync.Mutex
	handles []*Handle
	scraped []bool // by handle: Prometheus scraped it since it started
	seq     atomic.Int64
}

func (c *Coordinator) init() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		c.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Minute}}
		c.host, _ = os.Hostname()
		if c.Log == nil {
			c.Log = slog.New(slog.DiscardHandler)
		}
		if c.Launcher == nil {
			c.Launcher = Local{Log: c.Log}
		}
		if c.Lead <= 0 {
			c.Lead = DefaultLead
		}
		c.handles = make([]*Handle, max(1, c.Workers))
		c.scraped = make([]bool, len(c.handles))
	}
}

// Start starts every worker that is not running.
func (c *Coordinator) Start(ctx context.Context) error {
	_, err := c.ensure(ctx)
	return err
}

// ensure starts every worker that is not running and, when Prometheus is
// to scrape them, waits for its first scrape of those it started.
func (c *Coordinator) ensure(ctx context.Context) ([]*Handle, error) {
	hs, fresh, err := c.launch(ctx)
	if err != nil {
		return nil, err
	}
	c.discovered(ctx, hs, fresh)
	return hs, nil
}

// launch starts every worker that is not running and names those it
// started; the targets file then lists every worker running.
func (c *Coordinator) launch(ctx context.Context) (_ []*Handle, fresh []int, err error) {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if len(fresh) > 0 && c.Targets != "" {
			if werr := writeTargets(c.Targets, c.handles); werr != nil {
				err = errors.Join(err, werr)
			}
		}
	}()
	for i, h := range c.handles {
		if h != nil {
			gone, how := h.Gone()
			if !gone {
				continue
			}
			c.Log.Warn("a loadgen worker was gone: starting it again", "worker", i, "pid", h.Pid, "how", how)
		}
		nh, err := c.Launcher.Launch(ctx, i)
		if err != nil {
			return nil, fresh, err
		}
		c.handles[i], c.scraped[i] = nh, false
		fresh = append(fresh, i)
		c.Log.Debug("loadgen worker up", "worker", i, "pid", nh.Pid, "addr", nh.Addr)
	}
	return slices.Clone(c.handles), fresh, nil
}

// Handles are the workers as last started (nil before Start).
func (c *Coordinator) Handles() []*Handle {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.handles)
}

// Close ends every worker, its targets removed first.
func (c *Coordinator) Close() {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Targets != "" {
		if err := os.Remove(c.Targets); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.Log.Warn("the loadgen workers' scrape targets stay listed", "file", c.Targets, "err", err)
		}
	}
	for i, h := range c.handles {
		if h != nil && h.Stop != nil {
			h.Stop()
		}
		c.handles[i] = nil
	}
}

// worker is one worker's attack in a Run.
type worker struct {
	h             *Handle
	seg           load.Segment
	conns         int
	rate          float64
	offset, bound time.Duration

	mu       sync.Mutex
	progress *attack.Progress
	end      *End
	failed   string // why it failed, "" = it sent its end
}

// Run implements the runner's Attacker.
func (c *Coordinator) Run(ctx context.Context, s attack.Spec, progress func(attack.Progress)) (*attack.Result, error) {
	if s.Load == nil {
		return nil, errors.New("fleet: spec Load is empty")
	}
	// A load of fewer connections than workers (a traffic mix's small
	// variant, HTTP/2's connections of many streams) goes to as many
	// workers as it has connections.
	n := max(1, min(c.Workers, load.MaxSegments(s.Load)))
	ws := make([]*worker, n)
	for i := range ws {
		seg := load.Segment{Index: i, Count: n}
		m, err := seg.Of(s.Load)
		if err != nil {
			return nil, fmt.Errorf("%d loadgen workers: %w", n, err)
		}
		ws[i] = &worker{seg: seg}
		ws[i].conns, ws[i].rate = m.Summary()
	}
	wire, err := SpecOf(s, c.CAFile)
	if err != nil {
		return nil, err
	}
	handles, err := c.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.offsets(ctx, ws, handles); err != nil {
		return nil, err
	}
	var lead time.Duration
	for _, w := range ws {
		lead = max(lead, 6*w.bound) // three round trips: the cell's, its answer's, a margin
	}
	barrier := time.Now().Add(max(c.Lead, lead))
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), barrier.Add(s.Load.Window()+timeout+endGrace))
	defer cancel()
	id := fmt.Sprintf("%d.%d", os.Getpid(), c.seq.Add(1))

	var wg sync.WaitGroup
	allDone := make(chan struct{})
	for _, w := range ws {
		wg.Go(func() { c.stream(wctx, id, barrier, wire, w) })
	}
	go func() { wg.Wait(); close(allDone) }()
	edgesDone := make(chan struct{})
	go func() { defer close(edgesDone); edges(ctx, s.OnEdge, barrier, s.Load.Window(), allDone) }()
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() { defer close(progressDone); report(ws, progress, stopProgress) }()
	select {
	case <-allDone:
	case <-ctx.Done():
		c.cancel(id, ws) // the workers end their windows now and send what they have
		<-allDone
	}
	<-edgesDone
	close(stopProgress)
	<-progressDone
	return c.result(ctx, ws, barrier)
}

// offsets measures every worker's clock offset at once.
func (c *Coordinator) offsets(ctx context.Context, ws []*worker, hs []*Handle) error {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		w.h = hs[i]
		wg.Go(func() {
			var err error
			w.offset, w.bound, err = c.clock(ctx, w.h.Addr)
			if err != nil {
				errs[i] = fmt.Errorf("loadgen worker %d (pid %d) does not answer: %w", i, w.h.Pid, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clock measures a worker's offset (its clock minus ours), NTP-style: we
// send at t0, it reads its clock t1, we receive at t2; offset = t1 -
// (t0+t2)/2, off by at most half the round trip, the bound returned. Of
// several round trips the one of least delay is kept.
func (c *Coordinator) clock(ctx context.Context, addr string) (offset, bound time.Duration, err error) {
	best := time.Duration(math.MaxInt64)
	for range clockSamples {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+addr+PathClock, nil)
		t0 := time.Now()
		resp, err := c.client.Do(req)
		if err != nil {
			cancel()
			return 0, 0, err
		}
		var ck Clock
		err = json.NewDecoder(resp.Body).Decode(&ck)
		resp.Body.Close()
		rtt := time.Since(t0) // monotonic
		cancel()
		if err != nil {
			return 0, 0, fmt.Errorf("its clock: %w", err)
		}
		if rtt < best {
			best = rtt
			offset = time.Duration(ck.UnixNano - (t0.UnixNano() + rtt.Nanoseconds()/2))
		}
	}
	return offset, best / 2, nil
}

// stream sends worker w its cell and reads its progress and its end.
func (c *Coordinator) stream(ctx context.Context, id string, barrier time.Time, spec Spec, w *worker) {
	body, err := json.Marshal(CellRequest{ID: id, Segment: w.seg, Barrier: barrier.Add(w.offset), Spec: spec})
	if err != nil {
		w.fail(err.Error())
		return
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.h.Addr+PathCell, bytes.NewReader(body))
	resp, err := c.client.Do(req)
	if err != nil {
		w.fail(c.lost(ctx, w, "could not be given the cell", err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		w.fail(fmt.Sprintf("loadgen worker %d (pid %d) refused the cell: %s", w.seg.Index, w.h.Pid, strings.TrimSpace(string(b))))
		return
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var m Message
		if err := dec.Decode(&m); err != nil {
			w.fail(c.lost(ctx, w, "mid-cell", err))
			return
		}
		w.mu.Lock()
		if m.Progress != nil {
			w.progress = m.Progress
		}
		if m.End != nil {
			w.end = m.End
		}
		w.mu.Unlock()
		if m.End != nil {
			return
		}
	}
}

func (w *worker) fail(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed = why
}

// lost says what happened to a worker whose stream broke: it died (its
// process is gone), went silent past the deadline, or its connection broke.
func (c *Coordinator) lost(ctx context.Context, w *worker, when string, err error) string {
	name := fmt.Sprintf("loadgen worker %d (pid %d)", w.seg.Index, w.h.Pid)
	if w.h.Exited != nil {
		select {
		case <-w.h.Exited:
			return fmt.Sprintf("%s died %s (%s)", name, when, w.h.Exit())
		case <-time.After(cmp.Or(w.h.ExitLag, time.Second)): // the process may take a moment to be reaped
		}
	}
	if ctx.Err() != nil {
		return fmt.Sprintf("%s sent no result by %s, the window's end plus the request timeout and %s: it is unresponsive", name,
			deadline(ctx).Format("15:04:05.000"), endGrace)
	}
	return fmt.Sprintf("%s: its connection broke %s: %v", name, when, err)
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// cancel asks every worker to end attack id now (Ctrl-C): each ends its
// window and sends what it measured.
func (c *Coordinator) cancel(id string, ws []*worker) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.h.Addr+PathCancel+"?id="+id, nil)
			if resp, err := c.client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

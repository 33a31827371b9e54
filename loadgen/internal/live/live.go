// Package live owns the live view of `loadgen run`: a small web page the
// loadgen serves on loopback while it runs (index.html, app.js and the
// vendored uPlot, embedded: no CDN, nothing to build). It shows the run's
// plan and progress, the current cell with its req/s, p50/p99, errors and
// the proxy's and the loadgen's CPU, each finished cell's status as the
// runner decided it (manifest.json's: the report's validity verdicts come
// from Prometheus after the run), and where the results go at the end.
//
// Data flows one way: the runner tells the view what happens through the
// progress.Display it wraps (Wrap); once a second the view reads the
// current cell's numbers from Prometheus's query API (the recording rules
// the Grafana dashboards read), or, when Prometheus does not answer, takes
// the loadgen's own counters and says so; the page polls /api/state.
package live

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/promapi"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

//go:embed web
var web embed.FS

// View is the live view of one run.
type View struct {
	ctx  context.Context // the run's: done once Ctrl-C came
	prom *promapi.Client
	log  *slog.Logger
	srv  *http.Server
	addr string
	done chan struct{} // closes the sampler

	mu      sync.Mutex
	st      State
	labels  *cellLabels
	last    attack.Progress
	self    own
	ended   bool      // Finish was called
	polled  time.Time // the page's last /api/state
	final   chan struct{}
	stopped bool
}

// Listen serves the view of the run x on addr. promURL is the Prometheus
// it reads. ctx is the run's: once it is done the page says the run is
// being interrupted.
func Listen(ctx context.Context, addr, promURL string, x *plan.Expanded, log *slog.Logger) (*View, error) {
	prom, err := promapi.New(promURL, &http.Client{Timeout: promTimeout})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard address %s: %w (another loadgen running? pick one with -dashboard, or -dashboard %s)", addr, err, plan.DashboardOff)
	}
	v := &View{ctx: ctx, prom: prom, log: log, addr: ln.Addr().String(), done: make(chan struct{}), final: make(chan struct{})}
	v.st = State{Run: x.Run, Status: "running", Started: time.Now(), EstimateS: x.Estimate().Seconds(), Cells: rows(x), PromURL: promURL, History: []Point{}}
	sub, _ := fs.Sub(web, "web")
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /api/state", v.serveState)
	v.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := v.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("live view stopped", "err", err)
		}
	}()
	go v.sample()
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		log.Warn("the live view listens beyond loopback: anyone who reaches it sees the run", "addr", v.addr)
	}
	return v, nil
}

// URL is the page's address.
func (v *View) URL() string { return "http://" + v.addr + "/" }

// Wrap returns d, also telling the view of every cell.
func (v *View) Wrap(d progress.Display) progress.Display { return &tee{Display: d, v: v} }

type tee struct {
	progress.Display
	v *View
}

func (t *tee) CellStart(n, total int, c plan.Cell) {
	t.Display.CellStart(n, total, c)
	t.v.mu.Lock()
	defer t.v.mu.Unlock()
	t.v.st.Current = &Current{N: n, Of: total, ID: c.ID, Started: time.Now(),
		WarmupS: time.Duration(c.Warmup).Seconds(), WindowS: time.Duration(c.Duration).Seconds()}
	t.v.labels = &cellLabels{proxy: c.Proxy, origin: c.Origin, scenario: c.Scenario}
	t.v.last = attack.Progress{}
	if i := n - 1; i >= 0 && i < len(t.v.st.Cells) {
		t.v.st.Cells[i].Status = "running"
	}
}

func (t *tee) Progress(p attack.Progress) {
	t.Display.Progress(p)
	t.v.mu.Lock()
	t.v.last = p
	t.v.mu.Unlock()
}

func (t *tee) CellEnd(n, total int, c manifest.Cell) {
	t.Display.CellEnd(n, total, c)
	t.v.mu.Lock()
	defer t.v.mu.Unlock()
	if i := n - 1; i >= 0 && i < len(t.v.st.Cells) {
		t.v.st.Cells[i].ended(c)
	}
	if t.v.labels != nil { // an empty reading: the charts break between cells
		t.v.addReading(Point{T: float64(time.Now().UnixMilli()) / 1000, Cell: c.ID})
	}
	t.v.st.Current, t.v.labels = nil, nil
}

// Finish records how the run ended (nil m: it could not write its
// results) and where its results are.
func (v *View) Finish(m *manifest.Manifest, dir string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.st.Current, v.labels = nil, nil
	v.st.Status = "failed"
	if m != nil {
		v.st.Status = m.Status
		for i, c := range m.Cells {
			if i < len(v.st.Cells) && c.ID == v.st.Cells[i].ID {
				v.st.Cells[i].ended(c)
			}
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	v.st.Report = &ReportRef{Dir: abs, Manifest: filepath.Join(abs, "manifest.json"), HTML: filepath.Join(abs, "report.html"),
		Command: fmt.Sprintf("reporter build -run %s -results %s", v.st.Run, filepath.Dir(dir))}
	v.ended = true
}

// Close stops the view. A page that was watching gets the run's final
// state first: Close waits up to 2 s for its next poll.
func (v *View) Close() {
	v.mu.Lock()
	watched := v.ended && time.Since(v.polled) < 5*time.Second
	v.mu.Unlock()
	if watched {
		select {
		case <-v.final:
		case <-time.After(2 * time.Second):
		}
	}
	close(v.done)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = v.srv.Shutdown(ctx)
}

func (v *View) serveState(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	st := v.st
	st.Now = time.Now()
	if !v.ended && v.ctx.Err() != nil {
		st.Status = "interrupting"
	}
	v.polled = st.Now
	b, err := json.Marshal(st)
	if v.ended && !v.stopped {
		v.stopped = true
		close(v.final)
	}
	v.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// sample takes a reading of the current cell every second.
func (v *View) sample() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-v.done:
			return
		case <-tick.C:
		}
		v.mu.Lock()
		l, last, id := v.labels, v.last, ""
		if v.st.Current != nil {
			id = v.st.Current.ID
		}
		v.mu.Unlock()
		now := time.Now()
		mine := v.self.point(last, now) // every tick: its CPU is over the last second
		if l == nil {
			continue
		}
		p, err := fromProm(context.WithoutCancel(v.ctx), v.prom, *l, now.Add(-Lag).Truncate(time.Millisecond))
		if err != nil {
			p = mine
		}
		p.Cell = id
		v.mu.Lock()
		if v.labels == l { // still the same cell
			v.st.Live, v.st.Source = &p, p.Source
			v.st.PromError = ""
			if err != nil {
				v.st.PromError = err.Error()
			}
			v.addReading(p)
		}
		v.mu.Unlock()
	}
}

// addReading keeps p in the history (v.mu held).
func (v *View) addReading(p Point) {
	v.st.History = append(v.st.History, p)
	if len(v.st.History) > maxHistory {
		v.st.History = v.st.History[len(v.st.History)-maxHistory:]
	}
}

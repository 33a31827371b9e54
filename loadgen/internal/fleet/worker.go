package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
	"proxybench/internal/metricdefs"
	"proxybench/internal/metricsserver"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/selfcpu"
)

// Worker serves one loadgen worker's control API. Its attacks may run at
// once (a traffic mix's variants are one attack each).
type Worker struct {
	Index    int
	Attacker *attack.Attacker
	Self     *selfcpu.Collector
	Log      *slog.Logger
	// ScrapedAfter is the metrics server's (metricsserver.Server): closed
	// once a scrape of /metrics began at or after t. Nil: GET /scraped
	// answers 404.
	ScrapedAfter func(t time.Time) <-chan struct{}

	mu      sync.Mutex
	running map[string]context.CancelFunc
	// cancelled holds the last ids cancelled before their cell arrived
	// (Ctrl-C while the coordinator was still sending them).
	cancelled []string
}

// maxCancelled bounds Worker.cancelled.
const maxCancelled = 64

// Routes adds the control API to mux (the worker's metrics server).
func (w *Worker) Routes(mux interface{ Handle(string, http.Handler) }) {
	mux.Handle("GET "+PathClock, http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, Clock{UnixNano: time.Now().UnixNano()})
	}))
	mux.Handle("POST "+PathCell, http.HandlerFunc(w.cell))
	mux.Handle("POST "+PathCancel, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		w.mu.Lock()
		cancel := w.running[id]
		if cancel == nil {
			w.cancelled = append(w.cancelled, id)
			if len(w.cancelled) > maxCancelled {
				w.cancelled = w.cancelled[1:]
			}
		}
		w.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	mux.Handle("GET "+PathScraped, http.HandlerFunc(w.scraped))
}

// scraped answers GET /scraped?in=D once a scrape began at or after now +
// D, or never (the client gives up).
func (w *Worker) scraped(rw http.ResponseWriter, r *http.Request) {
	if w.ScrapedAfter == nil {
		http.Error(rw, "this worker serves no /metrics", http.StatusNotFound)
		return
	}
	var in time.Duration
	if s := r.URL.Query().Get("in"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			http.Error(rw, "in: "+err.Error(), http.StatusBadRequest)
			return
		}
		in = max(d, 0)
	}
	select {
	case <-w.ScrapedAfter(time.Now().Add(in)):
		rw.WriteHeader(http.StatusNoContent)
	case <-r.Context().Done():
	}
}

func writeJSON(rw http.ResponseWriter, v any) {
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(v) //nolint:errcheck // the peer is gone
}

// cell runs one attack at its barrier and streams its progress and its end.
func (w *Worker) cell(rw http.ResponseWriter, r *http.Request) {
	var req CellRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(rw, "decode the cell: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.Segment.Index != w.Index {
		http.Error(rw, fmt.Sprintf("this is worker %d; the cell is for worker %d", w.Index, req.Segment.Index), http.StatusBadRequest)
		return
	}
	spec, err := req.Spec.Attack(req.Segment)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	w.mu.Lock()
	if w.running == nil {
		w.running = map[string]context.CancelFunc{}
	}
	w.running[req.ID] = cancel
	if slices.Contains(w.cancelled, req.ID) {
		cancel() // it ends before it begins: its window is empty
	}
	w.mu.Unlock()
	defer func() { w.mu.Lock(); delete(w.running, req.ID); w.mu.Unlock() }()

	rw.Header().Set("Content-Type", "application/x-ndjson")
	rw.WriteHeader(http.StatusOK)
	var out sync.Mutex // progress comes from the engine's goroutine
	enc := json.NewEncoder(rw)
	flush := http.NewResponseController(rw)
	ended := false
	send := func(m Message) {
		out.Lock()
		defer out.Unlock()
		if ended {
			return
		}
		ended = m.End != nil
		if err := enc.Encode(m); err == nil {
			flush.Flush() //nolint:errcheck // the peer is gone: ctx ends
		}
	}
	send(Message{}) // the header: the coordinator knows the cell is taken

	ed := &workerEdges{self: w.Self}
	spec.StartAt, spec.OnEdge = req.Barrier, ed.on
	res, err := w.Attacker.Run(ctx, spec, func(p attack.Progress) { send(Message{Progress: &p}) })
	end := &End{}
	if err != nil {
		end.Error = err.Error()
		w.Log.Warn("the attack failed", "worker", w.Index, "err", err)
	}
	if end.Result, err = ResultOf(res); err != nil {
		end.Error = errors.Join(errors.New(end.Error), err).Error()
	}
	end.Loadgen, end.CPU = ed.account()
	send(Message{End: end})
}

// workerEdges reads the worker process's CPU at its window's two edges.
type workerEdges struct {
	self *selfcpu.Collector
	once selfcpu.Edges
	read [2]workerRead
}

type workerRead struct {
	self    selfcpu.Snapshot
	stat    cputime.Stat
	statErr error
}

func (e *workerEdges) on(end bool, _ time.Time) {
	e.once.Take(end, func(i int) {
		r := &e.read[i]
		r.self = e.self.Snapshot()
		r.stat, r.statErr = cputime.ReadStat("/proc")
	})
}

// account is the process's CPU over the window and its role loadgen; nil
// when an edge was never reached.
func (e *workerEdges) account() (*manifest.LoadgenCPU, *manifest.RoleContention) {
	both := false
	var a, b workerRead
	e.once.Both(func(ok bool) { both, a, b = ok, e.read[0], e.read[1] })
	if !both {
		return nil, nil
	}
	lg := b.self.Since(a.self)
	cpus, err := cputime.Affinity(0)
	note := ""
	if err != nil {
		note = fmt.Sprintf("cpus: the worker's affinity mask: %v", err)
	}
	role := b.self.Role(a.self, cpus, note)
	switch t, err := b.stat.Since(a.stat, cpus); {
	case len(cpus) == 0:
	case errors.Join(a.statErr, b.statErr, err) != nil:
		role.Unread = append(role.Unread, "busy and steal: "+errors.Join(a.statErr, b.statErr, err).Error())
	default:
		busy, steal := t.Busy().Seconds(), t.Steal.Seconds()
		role.BusySeconds, role.StealSeconds = &busy, &steal
	}
	return &lg, &role
}

// Main is `loadgen worker [-index I] [-listen ADDR] [-exit-with-stdin]`:
// it serves the control API on the address (default 127.0.0.1:0), prints
// its Hello as one JSON line on stdout, and runs until ctx ends (or, with
// -exit-with-stdin, its stdin closes: the coordinator that started it is
// gone).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("loadgen "+Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	index := fs.Int("index", 0, "the worker's `index`: its segment of every cell's load, and the value of its series' worker label")
	listen := fs.String("listen", "127.0.0.1:0", "listen `address` of the control API and /metrics")
	withStdin := fs.Bool("exit-with-stdin", false, "exit when stdin closes (the coordinator that started this process is gone)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *index < 0 {
		fmt.Fprintln(stderr, "loadgen worker: -index must be >= 0")
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen worker:", err)
		return 1
	}
	if *withStdin {
		// The coordinator that started this process decides when it ends:
		// a Ctrl-C on the terminal reaches it and us alike, and it ends
		// our cells itself (POST /cancel) to collect what they measured.
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *withStdin {
		go func() { io.Copy(io.Discard, os.Stdin); cancel() }() //nolint:errcheck // EOF or error: the coordinator is gone
	}
	log = log.With("worker", *index)
	w, reg := NewWorker(*index, log)
	srv := metricsserver.New(reg, log)
	w.ScrapedAfter = srv.ScrapedAfter
	w.Routes(srv)
	srv.Serve(ln)
	defer srv.Stop()
	host, _ := os.Hostname()
	if err := json.NewEncoder(stdout).Encode(Hello{Addr: srv.Addr(), Index: *index, Pid: os.Getpid(), Host: host}); err != nil {
		return 1
	}
	select {
	case <-ctx.Done():
		return 0
	case err := <-srv.Err():
		fmt.Fprintln(stderr, "loadgen worker:", err)
		return 1
	}
}

// NewWorker is worker index and its registry: the traffic series, its own
// CPU, the process and Go collectors, every series with the constant label
// worker (metricdefs.WorkerLabel).
func NewWorker(index int, log *slog.Logger) (*Worker, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{metricdefs.WorkerLabel: strconv.Itoa(index)}, reg)
	wrapped.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	self := selfcpu.New(log)
	wrapped.MustRegister(self)
	return &Worker{Index: index, Attacker: attack.New(attack.NewMetrics(wrapped), attack.WithLogger(log)), Self: self, Log: log}, reg
}

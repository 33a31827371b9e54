// Package metricsserver owns how every proxybench process serves /metrics
// (the loadgen's run and attack commands, the exporter): the exposition
// handler's options, decided once, and the HTTP server around it.
//
// The handler negotiates OpenMetrics, sends no gzip (Prometheus scrapes over
// loopback, where compression only burns CPU on both ends), serves what it
// could gather when a collector fails (ContinueOnError: one failing source
// must not blank every other series of the scrape; the failure is logged and
// counted in promhttp_metric_handler_errors_total) and writes each response
// in one write with its length. The server bounds how long a client may take
// to send its request head and shuts down gracefully.
package metricsserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server timeouts.
const (
	ReadHeaderTimeout = 5 * time.Second
	ShutdownTimeout   = 5 * time.Second // in-flight scrapes finish within this at Stop
)

// Handler is the /metrics handler of reg; failures are logged to log.
func Handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	return oneWrite(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:           reg, // promhttp_metric_handler_errors_total
		EnableOpenMetrics:  true,
		DisableCompression: true,
		ErrorHandling:      promhttp.ContinueOnError,
		ErrorLog:           slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
}

// Server serves /metrics, and whatever else its owner adds with Handle
// before Serve.
type Server struct {
	mux     *http.ServeMux
	srv     *http.Server
	log     *slog.Logger
	addr    string
	scraped chan struct{}
	once    sync.Once
	errc    chan error

	mu      sync.Mutex
	waiters []waiter  // ScrapedAfter's, until a scrape after their time
	last    time.Time // when the latest scrape served began
}

type waiter struct {
	after time.Time
	ch    chan struct{}
}

// New returns a server of reg's metrics at /metrics, not yet serving.
func New(reg *prometheus.Registry, log *slog.Logger) *Server {
	s := &Server{mux: http.NewServeMux(), log: log, scraped: make(chan struct{}), errc: make(chan error, 1)}
	h := Handler(reg, log)
	s.mux.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now() // what is served was gathered after this
		h.ServeHTTP(w, r)
		s.once.Do(func() { close(s.scraped) })
		s.served(began)
	}))
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: ReadHeaderTimeout}
	return s
}

// Handle adds a route next to /metrics; call it before Serve.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Serve starts serving on ln, which the server then owns, in the background.
func (s *Server) Serve(ln net.Listener) {
	s.addr = ln.Addr().String()
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server", "err", err)
			s.errc <- err
		}
	}()
}

// Addr is the address it serves on.
func (s *Server) Addr() string { return s.addr }

// Scraped is closed once the first /metrics response has been written.
func (s *Server) Scraped() <-chan struct{} { return s.scraped }

// ScrapedAfter is closed once a /metrics response has been written whose
// scrape began at or after t, already or later: every value as of t has
// then reached Prometheus (the loadgen's linger waits for it).
func (s *Server) ScrapedAfter(t time.Time) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if !s.last.Before(t) {
		close(ch)
		return ch
	}
	s.waiters = append(s.waiters, waiter{t, ch})
	return ch
}

// served closes the waiters whose time a scrape that began at began
// passed.
func (s *Server) served(began time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if began.After(s.last) {
		s.last = began
	}
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if began.Before(w.after) {
			kept = append(kept, w)
		} else {
			close(w.ch)
		}
	}
	s.waiters = kept
}

// Err receives the error that ended serving early (never after Stop).
func (s *Server) Err() <-chan error { return s.errc }

// Stop shuts the server down, letting in-flight scrapes finish for up to
// ShutdownTimeout.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	s.srv.Shutdown(ctx) //nolint:errcheck // best effort at exit
}

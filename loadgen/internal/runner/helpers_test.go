package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/scenario"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
	"proxybench/loadgen/internal/routecheck"
)

// origin answers like the origins behind a working proxy: the real origins
// are other helpers' work and a test must not depend on the stack.
func origin(w http.ResponseWriter, r *http.Request) {
	o, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	w.Header().Set("X-Origin", o)
	io.WriteString(w, routecheck.Body)
}

// fakeProxy is a real HTTP server on 127.0.0.1 standing in for a proxy.
func fakeProxy(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	if h == nil {
		h = origin
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func targets(m map[string]*httptest.Server) routecheck.Target {
	return func(p string) (string, error) {
		if s := m[p]; s != nil {
			return s.URL, nil
		}
		return "", errors.New("no test server for " + p)
	}
}

// sleeper is a clock whose sleeps cost nothing and are recorded; Now is
// real because the engine measures real time.
type sleeper struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (s *sleeper) Now() time.Time { return time.Now() }
func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.sleeps = append(s.sleeps, d)
	s.mu.Unlock()
	return ctx.Err()
}
func (s *sleeper) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.sleeps...)
}

// hooks wraps the real display to look at a run while it happens.
type hooks struct {
	progress.Display
	start func(n int, c plan.Cell)
	end   func(n int, c manifest.Cell)
}

func (h *hooks) CellStart(n, total int, c plan.Cell) {
	if h.start != nil {
		h.start(n, c)
	}
	h.Display.CellStart(n, total, c)
}

func (h *hooks) CellEnd(n, total int, c manifest.Cell) {
	if h.end != nil {
		h.end(n, c)
	}
	h.Display.CellEnd(n, total, c)
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) { l.t.Log(strings.TrimSpace(string(p))); return len(p), nil }

func noDocker(context.Context) (Docker, error) {
	return nil, errors.New("docker not used by this test")
}

// listenLocal holds a fresh 127.0.0.1 port until the test ends: a port
// picked and released before use can be taken by a parallel test.
func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// args are the flags every test run shares: short cells, no Docker, a
// private results dir (the workers' scrape targets beside it), a metrics
// port the kernel picks, and no placement (pinning would confine the whole
// test binary to the loadgen's CPUs).
//
// A closed loop is capped at 2000 req/s (-max-rate, unless a test gives
// its own): uncapped, four connections to a local server keep both of the
// host's CPUs busy for every second a test runs, beside the packages make
// test runs with this one.
func args(t *testing.T, dir string, extra ...string) []string {
	a := []string{"-run", "t1", "-results", dir, "-isolate=false", "-metrics-addr", "127.0.0.1:0", "-dashboard", "off", "-placement", "none",
		"-concurrency", "4", "-linger", "0s", "-preflight-wait", "0s", "-timeout", "1s", "-prometheus-targets", filepath.Join(dir, "targets")}
	if !slices.Contains(extra, "-max-rate") {
		a = append(a, "-max-rate", "2000")
	}
	return append(a, extra...)
}

var _ Attacker = (*attack.Attacker)(nil)

func mustScenario(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

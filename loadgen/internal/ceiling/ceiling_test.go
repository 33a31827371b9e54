package ceiling

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"proxybench/internal/manifest"
	"proxybench/internal/placement"
)

// The test binary is the trivial server too: with PROXYBENCH_CEILING_SERVER
// set it runs ServerMain instead of the tests (the helper-process pattern),
// so Measure starts a real process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("PROXYBENCH_CEILING_SERVER") == "1" {
		if len(os.Args) > 1 && os.Args[1] == ServerCommand {
			os.Exit(ServerMain(context.Background(), os.Args[2:], os.Stdout, os.Stderr, slog.New(slog.DiscardHandler)))
		}
	}
	os.Exit(m.Run())
}

func opts(t *testing.T) Options {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Placement: "none", Concurrency: 8, Binary: exe, Env: []string{"PROXYBENCH_CEILING_SERVER=1"},
		Warmup: 100 * time.Millisecond, Window: 400 * time.Millisecond, Cache: t.TempDir(), MaxAge: time.Hour}
}

// A measurement against the real trivial server, then the same key from the
// cache; a different cap is a different key, and the cap holds.
func TestResolveMeasuresThenCaches(t *testing.T) {
	o := opts(t)
	c, err := Resolve(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != manifest.CeilingMeasured || c.RPS < 1000 || c.Concurrency != 8 || c.Loadgen == "" || c.CacheFile == "" {
		t.Fatalf("first resolve: %+v", c)
	}
	again, err := Resolve(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Source != manifest.CeilingCached || again.RPS != c.RPS || !again.MeasuredAt.Equal(c.MeasuredAt) {
		t.Fatalf("second resolve is not the cached one: %+v", again)
	}
	o.MaxAge = 0 // always measure
	if fresh, err := Resolve(t.Context(), o); err != nil || fresh.Source != manifest.CeilingMeasured {
		t.Fatalf("max age 0: %+v %v", fresh, err)
	}
	o.MaxAge = time.Hour
	o.MaxRate = 500
	capped, err := Resolve(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if capped.Source != manifest.CeilingMeasured || capped.MaxRate != 500 {
		t.Fatalf("a capped ceiling is its own key: %+v", capped)
	}
	if capped.RPS > 505 || capped.RPS < 400 {
		t.Errorf("capped at 500 req/s, the ceiling is %.0f", capped.RPS)
	}
	if capped.Engine != "netpoll" {
		t.Errorf("a capped closed loop runs on %q, want netpoll", capped.Engine)
	}
}

// An open-loop measurement is its own key and model: the open-loop engine
// offered more than it can send, and what it completed is its ceiling.
func TestOpenCeiling(t *testing.T) {
	o := opts(t)
	closed, err := Resolve(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Open = true
	open, err := Resolve(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if open.Source != manifest.CeilingMeasured || open.Model != manifest.CeilingOpen || closed.Model != manifest.CeilingClosed {
		t.Fatalf("open %+v after closed %+v: want a measurement of its own, model open", open, closed)
	}
	if open.CacheKey == closed.CacheKey || open.RPS < 500 || len(open.WindowRPS) != Windows {
		t.Errorf("open ceiling %+v", open)
	}
	for _, w := range open.WindowRPS {
		if w > open.RPS {
			t.Errorf("window %.0f above the ceiling %.0f: the ceiling is the best window", w, open.RPS)
		}
	}
}

// The trivial server starts pinned to the CPUs it is given (placement.Pin
// checks every thread took them before it says where it listens).
func TestServerStartsPinned(t *testing.T) {
	online, err := placement.Online()
	if err != nil || len(online) < 1 {
		t.Skip("online CPUs unknown")
	}
	o := opts(t)
	o.ServerCPUs = online[len(online)-1:]
	if err := o.fill(); err != nil {
		t.Fatal(err)
	}
	addr, stop, err := startServer(t.Context(), &o)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if addr == "" {
		t.Fatal("no address")
	}
}

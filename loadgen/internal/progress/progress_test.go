package progress

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/plan"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var (
	t0   = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	cell = plan.Cell{Key: cellid.Key{ID: "nginx.fast.simple.medium.r1"}, Duration: plan.Duration(60 * time.Second), Warmup: plan.Duration(5 * time.Second),
		Mode: "closed", Concurrency: 50}
	done = manifest.Cell{Key: cellid.Key{ID: "nginx.fast.simple.medium.r1"}, Status: manifest.CellOK, Start: t0, End: t0.Add(2 * time.Second),
		Requests: 24000, Errors: 3, Latency: manifest.Latency{P50: 0.00125, P99: 0.0071, Max: 0.2}}
)

func TestLive(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := &clock{t0}
	d := New(&buf, nil, true, c.now)
	d.CellStart(3, 16, cell)
	c.t = t0.Add(2 * time.Second)
	d.Progress(attack.Progress{RPS: 12345, P99: 1500 * time.Microsecond, Errors: 2, InFlight: 50})
	c.t = t0.Add(30 * time.Second)
	d.Progress(attack.Progress{RPS: 999, P99: 800 * time.Microsecond})
	d.CellEnd(3, 16, done)
	d.Close()
	got := strings.Split(buf.String(), "\r\033[K")
	want := []string{
		"",
		"[3/16] nginx.fast.simple.medium.r1 warm-up 0s/1m5s left 1m5s  0 rps  p99 -  err 0  in-flight 0",
		"[3/16] nginx.fast.simple.medium.r1 warm-up 2s/1m5s left 1m3s  12.3k rps  p99 1.5ms  err 2  in-flight 50",
		"[3/16] nginx.fast.simple.medium.r1 30s/1m5s left 35s  999 rps  p99 800µs  err 0  in-flight 0",
		"[3/16] nginx.fast.simple.medium.r1 ok: 24000 req, 12.0k rps, p50 1.25ms, p99 7.1ms, max 200ms, errors 3\n",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("live output\n got %q\nwant %q", got, want)
	}
}

func TestPlain(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	d := New(&buf, log, false, time.Now)
	d.CellStart(1, 2, cell)
	d.Progress(attack.Progress{RPS: 1})
	d.CellEnd(1, 2, done)
	skipped := manifest.Cell{Key: cellid.Key{ID: "x"}, Status: manifest.CellSkipped, Reason: "scenario auth is not implemented yet"}
	d.CellEnd(2, 2, skipped)
	want := `level=INFO msg="cell start" n=1/2 cell=nginx.fast.simple.medium.r1 duration=1m0s warmup=5s mode=closed concurrency=50 rate=0
level=INFO msg="cell end" n=1/2 cell=nginx.fast.simple.medium.r1 status=ok requests=24000 rps=12000 p50=1.25ms p99=7.1ms max=200ms errors=3
level=INFO msg="cell end" n=2/2 cell=x status=skipped reason="scenario auth is not implemented yet"
`
	if buf.String() != want {
		t.Errorf("plain output\n got %s\nwant %s", buf.String(), want)
	}
}

// Late and missed requests are shown when there are any.
func TestSummaryShowsLateAndMissed(t *testing.T) {
	t.Parallel()
	c := done
	c.Late, c.Missed = 4, 7
	want := "nginx.fast.simple.medium.r1 ok: 24000 req, 12.0k rps, p50 1.25ms, p99 7.1ms, max 200ms, errors 3, late 4, missed 7"
	if got := Summary(c); got != want {
		t.Errorf("summary\n got %q\nwant %q", got, want)
	}
}

//go:build e2e

package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/manifest"
)

// faultCell is what TestFaults reads of a report cell.
type faultCell struct {
	ID           string                 `json:"id"`
	Proxy        string                 `json:"proxy"`
	Start        time.Time              `json:"start"`
	End          time.Time              `json:"end"`
	ScenarioData *manifest.ScenarioData `json:"scenario_data"`
}

// TestFaults runs the faults scenario on all four proxies with a
// compressed schedule: an open loop at 1000 req/s for 4 s, replica B
// killed at 25 % (1 s) and started at 50 % (2 s). For each proxy the lab's
// fault log must match the schedule and Docker's own record of the
// replica, and the errors, the detection and the recovery the report
// finds must agree with the log within one scrape interval (1 s): no
// failure before the kill, the first within 1 s of it, the last (the
// detection) before the replica came back (or failures up to it), the
// recovery within the span after it, with no failure after it.
func TestFaults(t *testing.T) {
	const scrape = time.Second
	results := t.TempDir()
	began := time.Now()
	runCells(t, results, "faults", nil, "-tier", "4s", "-scenarios", "faults", "-origins", "fast",
		"-proxies", "nginx,haproxy,traefik,caddy", "-rate", "1000", "-concurrency", "200", "-settle", "1s",
		"-isolate=false", "-faults", "kill@25%-50%")
	t.Logf("run and report in %s", time.Since(began).Round(100*time.Millisecond))

	cells := readCells[faultCell](t, results, "faults")
	if len(cells) != 4 {
		t.Fatalf("%d cells, want one per proxy", len(cells))
	}
	var lastRestored time.Time
	failedSomewhere := false
	for _, c := range cells {
		d := c.ScenarioData
		if d == nil || d.Faults == nil {
			t.Errorf("%s: no scenario_data.faults", c.ID)
			continue
		}
		fs := d.Faults
		if len(fs.Log) != 1 || len(fs.Results) != 1 || fs.Unavailable != "" {
			t.Errorf("%s: log %+v, results %+v (%s), want one kill", c.ID, fs.Log, fs.Results, fs.Unavailable)
			continue
		}
		ev, r := fs.Log[0], fs.Results[0]
		if ev.Kind != "kill" || ev.Error != "" || ev.Replica != "proxybench-origin-fast-b" {
			t.Errorf("%s: fault %+v", c.ID, ev)
		}
		// The lab's clock against the schedule: asked at 1 s and 2 s.
		off := func(t time.Time) time.Duration { return t.Sub(c.Start) }
		if d := off(ev.Start) - time.Second; d < 0 || d > 200*time.Millisecond {
			t.Errorf("%s: kill asked %s into the window, want 1 s", c.ID, off(ev.Start))
		}
		if d := off(ev.End) - 2*time.Second; d < 0 || d > 200*time.Millisecond || ev.Restored.Sub(ev.End) > scrape {
			t.Errorf("%s: start asked %s, confirmed %s into the window, want 2 s and within 1 s", c.ID, off(ev.End), off(ev.Restored))
		}
		lastRestored = ev.Restored
		// The errors: none before the kill (less a scrape interval),
		// all of the timeline's failures counted in the kill's span.
		bin := time.Duration(fs.BinS * float64(time.Second))
		var inSpan int64
		for k, n := range fs.Timeline.Failed {
			at := c.Start.Add(time.Duration(k) * bin)
			if n > 0 && at.Add(bin).Before(ev.Start.Add(-scrape)) {
				t.Errorf("%s: %d failures in the bin at %s, before the kill at %s", c.ID, n, off(at), off(ev.Start))
			}
			if !at.Add(bin / 2).Before(ev.Start) {
				inSpan += n
			}
		}
		if inSpan != r.Failed {
			t.Errorf("%s: %d failures in the span, the timeline has %d", c.ID, r.Failed, inSpan)
		}
		t.Logf("%s: kill at %s (confirmed +%s), back at %s (confirmed +%s): failed %d (timed out %d, 5xx %d), first %v, detection %v %s, recovery %v %s, retries %v %s",
			c.Proxy, off(ev.Start).Round(time.Millisecond), ev.Applied.Sub(ev.Start).Round(time.Millisecond),
			off(ev.End).Round(time.Millisecond), ev.Restored.Sub(ev.End).Round(time.Millisecond),
			r.Failed, r.TimedOut, r.Status5xx, num(r.FirstFailureS), num(r.DetectionS), r.Detection, num(r.RecoveryS), r.Recovery,
			num64(fs.Retries), fs.RetriesNA)
		if r.Failed > 0 {
			failedSomewhere = true
			first := secs(*r.FirstFailureS)
			if first < -bin || first > ev.Applied.Sub(ev.Start)+scrape {
				t.Errorf("%s: first failure %s after the kill was asked, want within 1 s of its confirmation", c.ID, first)
			}
		}
		// Detection: errors stopped before the replica came back, or went
		// on up to it.
		switch {
		case r.DetectionS != nil:
			if det := secs(*r.DetectionS); det < 0 || det > ev.End.Sub(ev.Start) {
				t.Errorf("%s: detection %s outside the fault (%s)", c.ID, det, ev.End.Sub(ev.Start))
			}
		case r.Failed > 0 && r.Detection != "failed until the replica came back" && r.Detection != "none failed":
			t.Errorf("%s: no detection time and no reason: %q", c.ID, r.Detection)
		}
		// Recovery: within the span after the replica came back, and no
		// failure from then on.
		if r.RecoveryS == nil {
			t.Errorf("%s: no recovery: %s", c.ID, r.Recovery)
			continue
		}
		back := ev.Restored.Add(secs(*r.RecoveryS))
		if back.After(c.End) {
			t.Errorf("%s: recovered %s after the window's end", c.ID, back.Sub(c.End))
		}
		for k, n := range fs.Timeline.Failed {
			if at := c.Start.Add(time.Duration(k) * bin); n > 0 && !at.Before(back) {
				t.Errorf("%s: %d failures at %s, after the recovery at %s", c.ID, n, off(at), off(back))
			}
		}
	}
	if !failedSomewhere {
		t.Log("no proxy let a failure through the kill: every one retried them all")
	}
	// Docker's own record of the replica: it was last started by the lab,
	// within a scrape interval of the last fault's logged return.
	var insp []struct {
		State struct{ StartedAt, FinishedAt time.Time }
	}
	if err := json.Unmarshal([]byte(docker(t, "inspect", "proxybench-origin-fast-b")), &insp); err != nil || len(insp) != 1 {
		t.Fatalf("docker inspect: %v", err)
	}
	if d := insp[0].State.StartedAt.Sub(lastRestored); d > 0 || d < -scrape {
		t.Errorf("the replica started at %s by Docker, the lab logged it back at %s", insp[0].State.StartedAt, lastRestored)
	}
	// The report shows the faults: a table per cell and fault, and the figure.
	md, err := os.ReadFile(filepath.Join(results, "faults", "report.md"))
	if err != nil || !strings.Contains(string(md), "faults: a replica of the pool") || !strings.Contains(string(md), "figures/faults.svg") {
		t.Errorf("report.md has no faults table or figure (%v)", err)
	}
	if svg, err := os.ReadFile(filepath.Join(results, "faults", "figures", "faults.svg")); err != nil || !strings.Contains(string(svg), ">kill</text>") {
		t.Errorf("figures/faults.svg does not mark the kill (%v)", err)
	}
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func num(p *float64) any {
	if p == nil {
		return "–"
	}
	return secs(*p).Round(time.Millisecond)
}

func num64(p *int64) any {
	if p == nil {
		return "–"
	}
	return *p
}

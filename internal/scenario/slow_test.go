package scenario

import (
	"math"
	"strings"
	"testing"
	"time"

	"proxybench/internal/manifest"
)

func TestSlowShape(t *testing.T) {
	t.Parallel()
	set := Settings{SlowDelay: 20 * time.Second}
	if p, sh := slow.Path("caddy", set), slow.Resolve(set); p != "/caddy/delay/20000" || sh.DelayS != 20 || slow.Skip("caddy") != nil {
		t.Errorf("path %s shape %+v", p, sh)
	}
	if slow.Probes != ProbeMemory {
		t.Errorf("probes %b, want the memory probe", slow.Probes)
	}
}

func TestSlowAccountAndJudging(t *testing.T) {
	t.Parallel()
	mem := &manifest.ProxyMemory{Held: 100, IdleBytes: 10e6, PeakBytes: 30e6, PerConnBytes: 200 * 1024}
	d := slowAccount(slow.Resolve(Settings{SlowDelay: 2 * time.Second}), Counts{Memory: mem})
	if d == nil || d.DelayS != 2 || d.Memory != mem {
		t.Fatalf("account %+v", d)
	}
	if d := slowAccount(slow.Resolve(Settings{}), Counts{Memory: mem}); d != nil {
		t.Errorf("no delay, no account: %+v", d)
	}
	if floor, note := slowFloor(d); floor != 2 || !strings.Contains(note, "2 s delay") {
		t.Errorf("latency floor %g %q", floor, note)
	}
	if floor, _ := slowFloor(nil); floor != 0 {
		t.Errorf("floor without data %g", floor)
	}
	fs, ok := row(t, slowTable, ReportCell{Name: "c", RPS: 50, P50: 2.001, P99: 2.01, Data: d})
	if got := strings.Join(texts(fs), "|"); !ok || got != "c|2.000 s|100|50|2.001 s|2.010 s|0.001 s|10.0|30.0|200.0 KiB" {
		t.Errorf("row %s", got)
	}
	d.Memory = &manifest.ProxyMemory{Held: 3, Unavailable: "no container"}
	if fs, _ := row(t, slowTable, ReportCell{Name: "c", P50: math.NaN(), P99: math.NaN(), Data: d}); fs[9].Text != "n/a: no container" || fs[6].Text != "– s" {
		t.Errorf("row without memory %q", texts(fs))
	}
}

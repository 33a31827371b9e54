package scenario

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"proxybench/internal/manifest"
)

// MaxSlowDelay bounds the plan's slow_delay (2 s by default).
const MaxSlowDelay = 20 * time.Second

// slow makes every request wait at the origin, so the concurrency is the
// number of connections the proxy holds; the runner samples the proxy's
// memory meanwhile, and the p99 objective is judged above the delay.
var slow = Scenario{
	Name:   "slow",
	About:  "slow upstream: GET /delay/<slow_delay>; concurrency = connections the proxy holds",
	Rank:   40,
	Method: http.MethodGet,
	Path: func(o string, set Settings) string {
		return "/" + o + "/delay/" + strconv.FormatInt(set.SlowDelay.Milliseconds(), 10)
	},
	Delay:        func(set Settings) time.Duration { return set.SlowDelay },
	Probes:       ProbeMemory,
	Account:      slowAccount,
	LatencyFloor: slowFloor,
	Report:       slowTable,
}

func init() { register(&slow) }

// slowAccount is the delay and the proxy's memory while holding the
// connections; a cell without a delay holds none and has no account.
func slowAccount(sh Shape, n Counts) *manifest.ScenarioData {
	if sh.DelayS <= 0 {
		return nil
	}
	return &manifest.ScenarioData{DelayS: sh.DelayS, Memory: n.Memory}
}

func slowFloor(d *manifest.ScenarioData) (float64, string) {
	if d == nil || d.DelayS <= 0 {
		return 0, ""
	}
	return d.DelayS, fmt.Sprintf("minus the origin's %g s delay", d.DelayS)
}

var slowTable = &Table{
	Caption: "slow: origin delay, connections held by the proxy",
	Header:  []string{"cell", "delay", "held", "req/s", "p50 exact", "p99 exact", "p50 over delay", "idle MB", "peak MB", "memory / held connection"},
	Right:   []bool{false, true, true, true, true, true, true, true, true, true},
	Notes:   []string{"memory / held connection = (peak − idle working set of the proxy container) / connections held; working set as cAdvisor's container_memory_working_set_bytes (usage − inactive file)."},
	Row: func(c ReportCell, f Format) ([]Field, bool) {
		sd := c.Data
		if sd == nil || sd.DelayS == 0 {
			return nil, false
		}
		held, idle, peak, per := "–", "–", "–", "–"
		if m := sd.Memory; m != nil {
			held = f.Int(int64(m.Held))
			if m.Unavailable == "" {
				idle, peak = f.MB(float64(m.IdleBytes)), f.MB(float64(m.PeakBytes))
				per = fmt.Sprintf("%.1f KiB", m.PerConnBytes/1024)
			} else {
				per = "n/a: " + m.Unavailable
			}
		}
		return []Field{text(c.Name), text(f.Dur(sd.DelayS)), text(held), text(f.Num(c.RPS, 0)),
			text(f.Dur(c.P50)), text(f.Dur(c.P99)), text(f.Dur(c.P50 - sd.DelayS)), text(idle), text(peak), text(per)}, true
	},
}

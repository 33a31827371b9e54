package load

import (
	"math"
	"strings"
	"testing"
	"time"
)

func stages(st ...float64) []Stage { // pairs of seconds, target
	var out []Stage
	for i := 0; i+1 < len(st); i += 2 {
		out = append(out, Stage{Duration: time.Duration(st[i] * float64(time.Second)), Target: st[i+1]})
	}
	return out
}

// Every model reports each problem with the field at fault, its value and
// what to do; a valid model reports none.
func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		m    Model
		want []string // one per problem, in order; none = valid
	}{
		{"closed", Closed{Connections: 50, Duration: time.Second}, nil},
		{"closed without connections", Closed{Duration: time.Second}, []string{"Connections 0: closed loop needs at least 1 connection"}},
		{"closed without duration", Closed{Connections: -1}, []string{"Connections -1: closed loop needs at least 1 connection",
			"Duration 0s: closed loop needs a positive duration such as 10s"}},
		{"open", Open{Rate: 100, Duration: time.Second}, nil},
		{"open without rate", Open{Duration: time.Second}, []string{"Rate 0: open loop needs a positive rate in requests/s"}},
		{"open NaN rate", Open{Rate: math.NaN(), Duration: time.Second}, []string{"Rate NaN: open loop needs a positive rate"}},
		{"open infinite rate", Open{Rate: math.Inf(1), Duration: time.Second}, []string{"Rate +Inf: open loop needs a positive rate"}},
		{"open negative cap", Open{Rate: 1, MaxInFlight: -2, Duration: time.Second}, []string{"MaxInFlight -2: an open loop's max in flight must not be negative"}},
		{"open without duration", Open{Rate: 1}, []string{"Duration 0s: open loop needs a positive duration"}},
		{"rate stages", RateStages{Stages: stages(1, 100, 1, 0)}, nil},
		{"rate stages without stages", RateStages{}, []string{"Stages []: give stages such as 10s:100,30s:500"}},
		{"rate stage without duration", RateStages{Stages: stages(1, 100, 0, 5)}, []string{"Stages[1] 0s:5: a stage needs a duration > 0 and a target >= 0"}},
		{"rate stage negative", RateStages{Stages: stages(1, -1)}, []string{"Stages[0] 1s:-1: a stage needs"}},
		{"rate stage not finite", RateStages{Stages: stages(1, math.Inf(1))}, []string{"Stages[0] target +Inf: must be a finite number"}},
		{"rate stages negative cap", RateStages{Stages: stages(1, 1), MaxInFlight: -1}, []string{"MaxInFlight -1"}},
		{"concurrency stages", ConcurrencyStages{Stages: stages(1, 0.5, 1, 1)}, nil},
		{"concurrency stages never 1", ConcurrencyStages{Stages: stages(1, 0.4)}, []string{"Stages 1s:0.4: concurrency stages need a target of at least 1 somewhere"}},
		{"concurrency stages too many", ConcurrencyStages{Stages: stages(1, 20000)}, []string{"concurrency target 20000 is above 10000 connections"}},
		{"concurrency stages NaN", ConcurrencyStages{Stages: stages(1, 2, 1, math.NaN())}, []string{"Stages[1] target NaN: must be a finite number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.m.Validate()
			got := Problems(err)
			if len(got) != len(tc.want) {
				t.Fatalf("%v: %d problems, want %d %q", err, len(got), len(tc.want), tc.want)
			}
			for i, p := range got {
				if !strings.Contains(p.Error(), tc.want[i]) {
					t.Errorf("problem %d %q, want %q", i, p, tc.want[i])
				}
			}
		})
	}
}

// Settings pick the model a plan or `loadgen attack` asks for; the mode
// defaults from the rate and the stages, and settings a mode does not use
// are ignored.
func TestSettings(t *testing.T) {
	t.Parallel()
	st := stages(10, 100, 20, 300)
	for _, tc := range []struct {
		name string
		s    Settings
		want Model
		err  string
	}{
		{"closed by default", Settings{Concurrency: 50, Duration: time.Minute}, Closed{Connections: 50, Duration: time.Minute}, ""},
		{"a rate means open", Settings{Concurrency: 50, Rate: 500, Duration: time.Minute}, Open{Rate: 500, MaxInFlight: 50, Duration: time.Minute}, ""},
		{"stages mean stages", Settings{Concurrency: 50, Rate: 500, Stages: st, StageKind: KindRate, Duration: time.Minute},
			RateStages{Stages: st, MaxInFlight: 50}, ""},
		{"concurrency stages", Settings{Mode: NameStages, Concurrency: 50, Stages: st, StageKind: KindConcurrency},
			ConcurrencyStages{Stages: st}, ""},
		{"closed ignores the rate", Settings{Mode: NameClosed, Concurrency: 3, Rate: 10, Duration: time.Second},
			Closed{Connections: 3, Duration: time.Second}, ""},
		{"unknown mode", Settings{Mode: "turbo"}, nil, `Mode "turbo": use closed, open or stages`},
		{"unknown stage kind", Settings{Stages: st, StageKind: "vus"}, nil, `StageKind "vus": use rate (open loop) or concurrency (closed loop)`},
		{"a stage kind without stages is unused", Settings{Concurrency: 1, StageKind: "vus", Duration: time.Second},
			Closed{Connections: 1, Duration: time.Second}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := tc.s.Model()
			if tc.err != "" {
				if p := Problems(err); len(p) != 1 || !strings.Contains(p[0].Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || m.String() != tc.want.String() || m.Name() != tc.want.Name() || m.Window() != tc.want.Window() {
				t.Fatalf("%v %v, want %v", m, err, tc.want)
			}
		})
	}
	if !(Settings{Rate: 1}).OpenLoop() || !(Settings{Stages: st, StageKind: KindRate}).OpenLoop() ||
		(Settings{Stages: st, StageKind: KindConcurrency}).OpenLoop() || (Settings{}).OpenLoop() {
		t.Error("OpenLoop: want open and rate stages only")
	}
}

// What the engine runs: the window, the workers, the schedule (a pacer for
// the open loops, the active workers for concurrency stages), and what a
// cell shows.
func TestSchedule(t *testing.T) {
	t.Parallel()
	closed := Closed{Connections: 8, Duration: 30 * time.Second}
	if closed.Window() != 30*time.Second || closed.MaxWorkers() != 8 || closed.Pacer() != nil || closed.Active() != nil {
		t.Errorf("closed: %v %d %v", closed.Window(), closed.MaxWorkers(), closed.Pacer())
	}
	if c, r := closed.Summary(); c != 8 || r != 0 {
		t.Errorf("closed shows %d %g", c, r)
	}

	open := Open{Rate: 200, Duration: 2 * time.Second}
	if open.MaxWorkers() != DefaultMaxInFlight || open.Active() != nil {
		t.Errorf("open: %d workers, want the default cap %d", open.MaxWorkers(), DefaultMaxInFlight)
	}
	if n := CountDue(open.Pacer(), 0, open.Window()); n != 400 {
		t.Errorf("open: %d due, want 400", n)
	}
	if c, r := open.Summary(); c != 0 || r != 200 { // the cap as given
		t.Errorf("open shows %d %g", c, r)
	}

	rs := RateStages{Stages: stages(10, 100, 20, 300), MaxInFlight: 50}
	if rs.Window() != 30*time.Second || rs.MaxWorkers() != 50 || rs.Active() != nil {
		t.Errorf("rate stages: %v %d", rs.Window(), rs.MaxWorkers())
	}
	// 0 -> 100 over 10 s (500), then 100 -> 300 over 20 s (4000).
	if n := CountDue(rs.Pacer(), 0, rs.Window()); n < 4499 || n > 4500 {
		t.Errorf("rate stages: %d due, want 4500", n)
	}
	if c, r := rs.Summary(); c != 50 || r != 150 { // the schedule's average: 4500 / 30 s
		t.Errorf("rate stages show %d %g, want 50 and 150", c, r)
	}

	cs := ConcurrencyStages{Stages: stages(1, 2.5, 1, 2.5, 1, 0)}
	if cs.Window() != 3*time.Second || cs.MaxWorkers() != 3 || cs.Pacer() != nil {
		t.Errorf("concurrency stages: %v %d", cs.Window(), cs.MaxWorkers())
	}
	active := cs.Active()
	for _, tc := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {500 * time.Millisecond, 1}, {time.Second, 3}, {1500 * time.Millisecond, 3}, {2500 * time.Millisecond, 1}, {3 * time.Second, 0}} {
		if got := active(tc.at); got != tc.want {
			t.Errorf("concurrency stages: %d active at %v, want %d", got, tc.at, tc.want)
		}
	}
	if c, r := cs.Summary(); c != 2 || r != 0 { // the peak, as a whole number
		t.Errorf("concurrency stages show %d %g", c, r)
	}
}

// The warm-up holds the load for d; for stages it ramps from 0 to the
// first stage's target over d.
func TestWarmup(t *testing.T) {
	t.Parallel()
	d := 5 * time.Second
	for _, tc := range []struct {
		name string
		m    Model
		want Model
	}{
		{"closed", Closed{Connections: 8, Duration: time.Minute}, Closed{Connections: 8, Duration: d}},
		{"open", Open{Rate: 100, MaxInFlight: 7, Duration: time.Minute}, Open{Rate: 100, MaxInFlight: 7, Duration: d}},
		{"rate stages", RateStages{Stages: stages(10, 100, 20, 300), MaxInFlight: 7}, RateStages{Stages: stages(5, 100), MaxInFlight: 7}},
		{"concurrency stages", ConcurrencyStages{Stages: stages(10, 4, 20, 30)}, ConcurrencyStages{Stages: stages(5, 4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.m.Warmup(d)
			if w.String() != tc.want.String() || w.Window() != d || w.MaxWorkers() != tc.want.MaxWorkers() {
				t.Errorf("warm-up %v over %v, want %v over %v", w, w.Window(), tc.want, d)
			}
			if err := w.Validate(); err != nil {
				t.Errorf("warm-up of a valid model: %v", err)
			}
		})
	}
	// 0 -> 100/s over 5 s: 250 requests.
	if n := CountDue(RateStages{Stages: stages(10, 100)}.Warmup(d).Pacer(), 0, d); n < 249 || n > 250 {
		t.Errorf("rate stages warm-up: %d due, want 250", n)
	}
}

// A variant of a traffic mix gets its share of the rate or the
// connections, at least one connection.
func TestShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		m    Model
		f    float64
		want Model
	}{
		{"closed", Closed{Connections: 10, Duration: time.Second}, 0.9, Closed{Connections: 9, Duration: time.Second}},
		{"closed at least one", Closed{Connections: 10, Duration: time.Second}, 0.05, Closed{Connections: 1, Duration: time.Second}},
		{"open", Open{Rate: 1000, MaxInFlight: 100, Duration: time.Second}, 0.05, Open{Rate: 50, MaxInFlight: 5, Duration: time.Second}},
		{"rate stages", RateStages{Stages: stages(1, 1000), MaxInFlight: 100}, 0.1, RateStages{Stages: stages(1, 100), MaxInFlight: 10}},
		{"concurrency stages", ConcurrencyStages{Stages: stages(1, 10, 1, 0)}, 0.05, ConcurrencyStages{Stages: stages(1, 1, 1, 1)}},
	} {
		if got := tc.m.Share(tc.f); got.String() != tc.want.String() || got.MaxWorkers() != tc.want.MaxWorkers() || got.Window() != tc.want.Window() {
			t.Errorf("%s: share %g is %v, want %v", tc.name, tc.f, got, tc.want)
		}
	}
}

// TestStreams: requests in flight as connections carrying streams: a
// closed loop's connections and an open loop's most in flight are split
// (at least one), the rate and stages stay.
func TestStreams(t *testing.T) {
	t.Parallel()
	if got := (Closed{Connections: 50}).Streams(10); got != (Closed{Connections: 5}) {
		t.Errorf("closed %+v", got)
	}
	if got := (Closed{Connections: 4}).Streams(10); got != (Closed{Connections: 1}) {
		t.Errorf("closed below one connection %+v", got)
	}
	if got := (Open{Rate: 100, MaxInFlight: 50}).Streams(10); got != (Open{Rate: 100, MaxInFlight: 5}) {
		t.Errorf("open %+v: the rate stays, the most in flight is split", got)
	}
	if got := (Open{Rate: 100}).Streams(10).(Open); got.MaxInFlight != DefaultMaxInFlight/10 {
		t.Errorf("open with the default cap %+v", got)
	}
	st := ConcurrencyStages{Stages: []Stage{{Target: 10, Duration: time.Second}}}
	if got := st.Streams(10); got.MaxWorkers() != st.MaxWorkers() {
		t.Errorf("stages changed: %+v", got)
	}
}

package attack

import (
	"strings"
	"testing"
	"time"

	"proxybench/internal/cputime"
	"proxybench/loadgen/internal/load"
)

// rateOf is the achieved rate of a window: completions with a status or an
// error, per second of the planned window.
func rateOf(res *Result) float64 {
	return float64(res.Requests+res.Errors+res.Late) / res.End.Sub(res.Start).Seconds()
}

// A closed loop that would go far faster than the cap is held to it; an
// open loop offered twice the cap sends at the cap and counts the hold as
// latency from the intended send time; 0 is no cap.
func TestMaxRateHolds(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	const cap = 400.0
	d := 1500 * time.Millisecond
	for _, tc := range []struct {
		name string
		m    load.Model
	}{
		{"closed", load.Closed{Connections: 8, Duration: d}},
		{"open", load.Open{Rate: 2 * cap, MaxInFlight: 64, Duration: d}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newAttacker(t)
			// The cap's slots a stall of this process took are lost, not
			// made up in a burst: the floor is the cap over the time the
			// host let the process run (its longest stall, by the same
			// watch the runner judges cells with).
			w := cputime.WatchSteal(nil)
			res := mustRun(t, a, Spec{URL: srv.URL + "/", Load: tc.m, MaxRate: cap})
			_, _ = w.Stop()
			stall, _ := w.Stall()
			got := rateOf(res)
			// At most one slot per 1/cap: cap*window + 1 sends.
			if limit := cap*d.Seconds() + 1; float64(res.Requests+res.Errors+res.Late) > limit {
				t.Errorf("%s: %d sends in %v, cap allows %.0f", tc.name, res.Requests+res.Errors+res.Late, d, limit)
			}
			ran := max(0, d-stall).Seconds() / d.Seconds()
			if got > cap*1.01 || got < cap*0.8*ran {
				t.Errorf("%s: achieved %.0f req/s with a cap of %.0f, want within (0.8, 1.01] of it (the floor times %.2f: the process stalled %v)", tc.name, got, cap, ran, stall)
			}
			if res.Held == 0 {
				t.Errorf("%s: no send counted as held by the cap", tc.name)
			}
			if tc.name == "open" {
				// Offered 2x the cap, the backlog grows by cap/s: the
				// held sends' latency from their due time shows it.
				if p50 := res.Quantile(50); p50 < 100*time.Millisecond {
					t.Errorf("open: p50 %v; the hold must count from the intended send time", p50)
				}
				if why, retry, instrument := kneeWhy(res, KneeOptions{P99: time.Hour, MaxErrorRatio: 1}, 2*cap, cap, 0); why == "" || retry || !instrument || !strings.Contains(why, "max rate cap of 400 req/s") {
					t.Errorf("open: a step the cap held at twice the cap: %q (run again %v), want the cap named and no second run", why, retry)
				}
			}
		})
	}
}

func TestMaxRateOff(t *testing.T) {
	t.Parallel()
	srv := newCounted(t, hello)
	a, _ := newAttacker(t)
	d := time.Second
	res := mustRun(t, a, Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 4, Duration: d}})
	// A local closed loop of 4 connections goes well above the 400 of the
	// capped test; no cap means no hold.
	if res.Held != 0 {
		t.Errorf("held %d sends without a cap", res.Held)
	}
	if got := rateOf(res); got < 1000 {
		t.Errorf("uncapped closed loop %.0f req/s: want far above a cap's 400", got)
	}
	if _, err := a.Run(t.Context(), Spec{URL: srv.URL + "/", Load: load.Closed{Connections: 1, Duration: d}, MaxRate: -1}, nil); err == nil {
		t.Error("a negative MaxRate is accepted")
	}
}

package attack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"proxybench/internal/cputime"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/load"
)

// Knee finds the breaking point: open-loop steps from StartRate up by Step
// until a step's p99 exceeds P99, its error ratio (transport errors and 5xx
// responses: a proxy shedding load answers 502/503) exceeds MaxErrorRatio, or
// fewer than 99 % of the scheduled requests were sent in the window: either
// max in flight was reached (the target could not take the offered rate) or
// the loadgen itself could not keep up. A step the loadgen alone broke
// (missed sends, neither max in flight nor the MaxRate cap reached) is run
// once more at the same rate, its first run kept with Retried set: a host's
// stall of a few milliseconds near a window's end is not the target's knee,
// and a loadgen that truly cannot keep up breaks the second run too (a step
// at or above the cap is not run again: the cap is no stall); while the
// host stalls the loadgen's process in each run (manifest.StallFloor or
// more), up to KneeMaxRuns runs in all. So is a
// step whose p99 broke while the loadgen's process could not run for about
// as long as the tail's excess over the median (its stall, timed by a
// cputime.StealWatch around each step): a request caught in the stall
// waited out the host, not the target. Every step is an open loop
// (load.Open, s.Load is not used) of StepDuration with at most MaxInFlight
// in flight; the first is preceded by the warm-up of WarmUp at StartRate
// when o.Warmup is set. last is the last rate that held, 0 if none did.
func (a *Attacker) Knee(ctx context.Context, s Spec, o KneeOptions, progress func(Progress)) (last float64, steps []KneeStep, err error) {
	if o.StartRate <= 0 || o.Step <= 0 || o.MaxRate < o.StartRate {
		return 0, nil, fmt.Errorf("knee options: need StartRate > 0, Step > 0 and MaxRate >= StartRate (got %v, %v, %v)", o.StartRate, o.Step, o.MaxRate)
	}
	if o.StepDuration <= 0 {
		o.StepDuration = 10 * time.Second
	}
	if o.P99 <= 0 {
		return 0, nil, errors.New("knee options: P99 must be positive, e.g. 100ms")
	}
	step := func(rate float64) load.Model {
		return load.Open{Rate: rate, MaxInFlight: o.MaxInFlight, Duration: o.StepDuration}
	}
	s.Load = step(o.StartRate)
	s.NoDrain = true // a step is judged on what it sent inside its window
	if err := s.validate(); err != nil {
		return 0, nil, err
	}
	run := func(ctx context.Context, s Spec) (*Result, error) { return a.Run(ctx, s, progress) }
	warmStart, err := WarmUp(ctx, s, o.Warmup, 0, run, nil) // only the first step needs warming
	if err != nil && ctx.Err() == nil {
		return 0, nil, err
	} // cut short by ctx: the first step reports the interruption
	for rate, runs := o.StartRate, 0; rate <= o.MaxRate+1e-9; {
		s.Load = step(rate)
		watch := cputime.WatchSteal(nil)
		res, err := run(ctx, s)
		watch.Stop()
		stall, _ := watch.Stall()
		if err != nil {
			if res != nil {
				steps = append(steps, KneeStep{Rate: rate, Result: res, Why: "interrupted", Stall: stall, WarmupStart: warmStart})
			}
			return last, steps, err
		}
		why, retry, instrument := kneeWhy(res, o, rate, s.MaxRate, stall)
		st := KneeStep{Rate: rate, Result: res, Why: why, Held: why == "", Instrument: instrument, Stall: stall, WarmupStart: warmStart}
		warmStart = time.Time{}
		runs++
		if retry && (runs == 1 || (stall.Seconds() >= manifest.StallFloor && runs < KneeMaxRuns)) {
			st.Retried = true
			steps = append(steps, st)
			continue
		}
		steps = append(steps, st)
		if !st.Held {
			return last, steps, nil
		}
		last, rate, runs = rate, rate+o.Step, 0
	}
	return last, steps, nil
}

// KneeMaxRuns is how many times Knee runs one rate at most: a step the
// loadgen alone broke runs once more, and again while the run before was
// one in which the host stalled the loadgen's process (manifest.StallFloor
// or longer: its stall, not its pace, missed the sends).
const KneeMaxRuns = 4

// kneeWhy says why a step at rate broke, "" when it held. instrument is
// true when the loadgen broke it, not the target: missed sends (the
// loadgen could not keep up), or the MaxRate cap. A broken step at or above
// the cap, or one whose sends the cap held (more than 1 %: after a stall
// the cap lets the backlog out at only the cap's rate), names the cap
// first. retry is true for missed sends below the cap, or a p99 the
// loadgen's stall (the longest time its process could not run during the
// step) accounts for: a host's stall, worth a second run.
func kneeWhy(res *Result, o KneeOptions, rate, maxRate float64, stall time.Duration) (why string, retry, instrument bool) {
	why, loadgen := kneeBroke(res, o, stall)
	retry = loadgen && (maxRate <= 0 || rate < maxRate)
	instrument = loadgen
	if why != "" && maxRate > 0 && (rate >= maxRate || 100*res.Held > res.Sent) {
		why = fmt.Sprintf("the loadgen's max rate cap of %g req/s held %d of %d sends: %s", maxRate, res.Held, res.Sent, why)
		instrument = true
	}
	return why, retry, instrument
}

// KneeValidity judges a knee search's breaking point: against the
// instrument's ceiling (when given, > 0: a knee at or above
// manifest.CeilingFraction of it), then by what broke its last step
// (KneeInstrument). bad is true when the knee is the instrument's, not the
// target's; why says which. `loadgen attack -knee` and the ceiling study
// judge with it.
func KneeValidity(ceiling, last float64, steps []KneeStep) (why string, bad bool) {
	if ceiling > 0 {
		if why, bad := (&manifest.Ceiling{RPS: ceiling}).Near("knee", last, manifest.CeilingFraction); bad {
			return why, true
		}
	}
	return KneeInstrument(steps)
}

// KneeInstrument says, when the step that ended a knee search broke for
// the loadgen rather than the target (KneeStep.Instrument), why the
// breaking point is the instrument's; ok is false when it is the target's
// (or every step held).
func KneeInstrument(steps []KneeStep) (why string, ok bool) {
	if len(steps) == 0 {
		return "", false
	}
	last := steps[len(steps)-1]
	if last.Held || !last.Instrument {
		return "", false
	}
	return fmt.Sprintf("the step at %g req/s broke for the loadgen, not the target (%s): the breaking point is the instrument's", last.Rate, last.Why), true
}

func kneeBroke(res *Result, o KneeOptions, stall time.Duration) (why string, loadgen bool) {
	total := res.Requests + res.Errors
	failed := res.Errors
	for code, n := range res.Codes {
		if code >= 500 {
			failed += n
		}
	}
	p99 := res.Quantile(99)
	switch {
	case total == 0:
		return "no request completed", false
	case float64(failed)/float64(total) > o.MaxErrorRatio:
		return fmt.Sprintf("error ratio %.4f > %.4f (errors and 5xx)", float64(failed)/float64(total), o.MaxErrorRatio), false
	case p99 > o.P99 && stall > 0 && stall+cputime.StallEvery >= p99-res.Quantile(50):
		// The tail's excess over the median fits inside one stall of
		// the loadgen's process (timed to within StallEvery).
		return fmt.Sprintf("p99 %v > %v while the loadgen could not run for %v (a host's stall, not the target's tail)",
			p99.Round(time.Microsecond), o.P99, stall.Round(time.Millisecond)), true
	case p99 > o.P99:
		return fmt.Sprintf("p99 %v > %v", p99.Round(time.Microsecond), o.P99), false
	case float64(res.Sent-res.Queued) < 0.99*float64(res.Scheduled):
		// Sent inside the window: what was still queued at its end was
		// sent after it.
		if 100*res.Capped > res.Sent {
			// More than 1 % of the sends waited for a free connection: the
			// target is saturated (a few capped sends at the start are only
			// the pool connecting).
			return fmt.Sprintf("sent %d of %d scheduled inside the window: max in flight reached (capped %d, %d queued past its end)", res.Sent-res.Queued, res.Scheduled, res.Capped, res.Queued), false
		}
		return fmt.Sprintf("sent %d of %d scheduled inside the window: the loadgen could not keep up (missed %d, queued past its end %d, lag p99 %v)",
			res.Sent-res.Queued, res.Scheduled, res.Missed, res.Queued, res.LagP99), true
	}
	return "", false
}

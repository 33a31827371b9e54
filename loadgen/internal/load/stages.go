package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stage ramps linearly from the previous target (0 before the first stage)
// to Target over Duration, k6 style.
type Stage struct {
	Duration time.Duration
	Target   float64
}

func (s Stage) String() string { return fmt.Sprintf("%s:%g", s.Duration, s.Target) }

// FormatStages writes stages as 10s:100,30s:500.
func FormatStages(st []Stage) string {
	parts := make([]string, len(st))
	for i, s := range st {
		parts[i] = s.String()
	}
	return strings.Join(parts, ",")
}

// ParseStages reads "10s:100,20s:500": each stage ramps linearly from the
// previous target to its own over its duration.
func ParseStages(s string) ([]Stage, error) {
	if s == "" {
		return nil, nil
	}
	if strings.TrimSpace(s) == "" { // given, but blank: a typo, not "no stages"
		return nil, fmt.Errorf("stage 1 %q: want DURATION:TARGET, e.g. 10s:100", s)
	}
	var out []Stage
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		d, t, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("stage %d %q: want DURATION:TARGET, e.g. 10s:100", i+1, part)
		}
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("stage %d %q: duration %q is not a positive Go duration like 10s", i+1, part, d)
		}
		target, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || target < 0 || target != target || target > 1e9 {
			return nil, fmt.Errorf("stage %d %q: target %q is not a number >= 0", i+1, part, t)
		}
		out = append(out, Stage{Duration: dur, Target: target})
	}
	return out, nil
}

// checkStages is the problems of stages every stages model has: none at
// all, a stage without a positive duration or with a negative target, a
// target that is not a finite number.
func checkStages(st []Stage) []error {
	var errs []error
	if len(st) == 0 {
		errs = append(errs, problem("Stages", "[]", "give stages such as 10s:100,30s:500"))
	}
	for i, s := range st {
		if s.Duration <= 0 || s.Target < 0 {
			errs = append(errs, &Problem{Field: "Stage", Stage: i, Value: s, Need: "a stage needs a duration > 0 and a target >= 0"})
		}
		if math.IsNaN(s.Target) || math.IsInf(s.Target, 0) {
			errs = append(errs, &Problem{Field: "Target", Stage: i, Value: s.Target, Need: "must be a finite number"})
		}
	}
	return errs
}

func sumStages(st []Stage) (d time.Duration) {
	for _, s := range st {
		d += s.Duration
	}
	return d
}

func peak(st []Stage) (m float64) {
	for _, s := range st {
		m = max(m, s.Target)
	}
	return m
}

// mean is the schedule's own average over its duration: the integral of
// the ramps (each stage linear from the previous target, 0 before the
// first) divided by the total duration.
func mean(st []Stage) float64 {
	var sum, d, prev float64
	for _, s := range st {
		sec := s.Duration.Seconds()
		sum += (prev + s.Target) / 2 * sec
		d += sec
		prev = s.Target
	}
	if d <= 0 {
		return 0
	}
	return sum / d
}

// stageValue is the linearly interpolated target at offset t (0 after the
// last stage).
func stageValue(start float64, stages []Stage, t time.Duration) float64 {
	prev := start
	for _, s := range stages {
		if t < s.Duration {
			return prev + (s.Target-prev)*float64(t)/float64(s.Duration)
		}
		t -= s.Duration
		prev = s.Target
	}
	return 0
}

// warmStages is the warm-up of stages: a ramp from 0 to the first stage's
// target over d.
func warmStages(st []Stage, d time.Duration) []Stage {
	if len(st) == 0 {
		return nil
	}
	return []Stage{{Duration: d, Target: st[0].Target}}
}

// shareStages scales every target by f; round makes each a whole number of
// connections, at least one.
func shareStages(st []Stage, f float64, round bool) []Stage {
	out := make([]Stage, len(st))
	for i, s := range st {
		out[i] = Stage{Duration: s.Duration, Target: s.Target * f}
		if round {
			out[i].Target = max(1, math.Round(s.Target*f))
		}
	}
	return out
}

// shareConns is a share f of n connections: at least one, so a small share
// is still sent.
func shareConns(n int, f float64) int { return max(1, int(math.Round(f*float64(n)))) }

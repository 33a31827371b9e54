package plan

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"proxybench/loadgen/internal/load"
)

// Tier is a named cell duration.
type Tier struct {
	Name     string // label value: quick, medium, soak, or the duration as written (10s)
	Duration time.Duration
}

// NamedTiers are the named tiers, in the order "all" runs them.
var NamedTiers = []Tier{
	{"quick", 5 * time.Second},
	{"medium", 60 * time.Second},
	{"soak", 300 * time.Second},
}

// MaxCell bounds a custom duration so a typo (90m for 90s) fails loudly.
const MaxCell = 2 * time.Hour

// ParseTiers reads quick|medium|soak|all or a comma list mixing names and
// durations (10s,90s).
func ParseTiers(s string) ([]Tier, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty: use quick, medium, soak, all or durations such as 10s,90s")
	}
	var out []Tier
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		var add []Tier
		switch {
		case part == "all":
			add = NamedTiers
		case lookupTier(part) != nil:
			add = []Tier{*lookupTier(part)}
		default:
			d, err := time.ParseDuration(part)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a tier (quick, medium, soak, all) nor a duration such as 10s", part)
			}
			if d < time.Second || d > MaxCell {
				return nil, fmt.Errorf("duration %s: use 1s..%s", d, MaxCell)
			}
			add = []Tier{{Name: part, Duration: d}}
		}
		for _, t := range add {
			if seen[t.Name] {
				return nil, fmt.Errorf("%q listed twice", t.Name)
			}
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	return out, nil
}

func lookupTier(name string) *Tier {
	for i := range NamedTiers {
		if NamedTiers[i].Name == name {
			return &NamedTiers[i]
		}
	}
	return nil
}

// tiers are the plan's tiers; in stages mode one pseudo tier "stages" whose
// duration is the sum of the stages.
func (p *Plan) tiers() ([]Tier, error) {
	if p.Mode == load.NameStages {
		var sum time.Duration
		for _, s := range p.Stages {
			sum += time.Duration(s.Duration)
		}
		return []Tier{{Name: "stages", Duration: sum}}, nil
	}
	return ParseTiers(p.Tier)
}

// Duration is a time.Duration written as "5s" in YAML, JSON and flags.
type Duration time.Duration

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes "5s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "5s"; a negative duration is an error.
func (d *Duration) UnmarshalText(b []byte) error { return d.Set(string(b)) }

// UnmarshalYAML reads "5s" and names the line on error.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.Set(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// Set parses a flag value.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("duration %q: write it like 500ms, 5s or 2m", s)
	}
	if v < 0 {
		return fmt.Errorf("duration %q: must not be negative", s)
	}
	*d = Duration(v)
	return nil
}

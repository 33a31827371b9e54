// Package studydata owns the schema of a lab study's raw record,
// results/<study-run>/study.json: what `loadgen study` measured (one sample
// per group × variant × repeat, the checks that verify each mechanism, the
// variants that could not run and why, the original findings to compare
// with) and what `reporter study` turns into report.md, the SVG figures,
// summary.json and samples.csv. The loadgen rewrites the file atomically
// after every sample, so a crash or a Ctrl-C keeps every sample measured.
package studydata

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"proxybench/internal/atomicfile"
)

// Schema versions study.json.
const Schema = "proxybench.study/v1"

// File is the record's name inside results/<study-run>/.
const File = "study.json"

// Statuses of a record.
const (
	StatusRunning     = "running"
	StatusDone        = "done"
	StatusInterrupted = "interrupted" // Ctrl-C: the samples so far are kept
	StatusFailed      = "failed"      // Error says why: the samples so far are kept
)

// Record is one study run.
type Record struct {
	Schema string    `json:"schema"`
	Run    string    `json:"run"`   // the study run's id: results/<Run>/
	Study  string    `json:"study"` // netstack, cc, scaleout, ceiling
	Title  string    `json:"title"`
	Scale  string    `json:"scale"` // tiny (make test) or full
	Status string    `json:"status"`
	Error  string    `json:"error,omitempty"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Host   Host      `json:"host"`

	// Question is what the study asks, in one sentence.
	Question string `json:"question"`
	// Method says how it was measured, one line per point: the load, the
	// rate and how it was chosen, the warm-up excluded, the order.
	Method []string `json:"method"`
	// Metrics are the per-sample values in display order.
	Metrics []Metric `json:"metrics"`
	// Groups are the conditions variants are compared within (a cc
	// profile, a scaleout rate), in order; one group named "" when the
	// study has none.
	Groups []Group `json:"groups"`
	// Variants are what is compared (a network mode, a congestion
	// control, a scaleout case), in order. Baseline names the one every
	// other is compared with ("" for none).
	Variants []Variant `json:"variants"`
	Baseline string    `json:"baseline,omitempty"`
	// Samples are the measurements, in the order taken.
	Samples []Sample `json:"samples"`
	// Checks verify the mechanisms: that the modes really differ, that the
	// congestion control asked for is the one in effect, that the loss
	// measured matches the profile, that quotas were applied.
	Checks []Check `json:"checks"`
	// NA lists the group × variant combinations that cannot run here,
	// each with the reason (never dropped silently).
	NA []NA `json:"na,omitempty"`
	// Original holds the findings of the study this one reproduces.
	Original []Reference `json:"original,omitempty"`
	// Notes are facts a reader needs that fit nowhere else.
	Notes []string `json:"notes,omitempty"`
}

// Host describes where the study ran.
type Host struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	CPUs     int    `json:"cpus"`
	Loadgen  string `json:"loadgen_version,omitempty"`
	Docker   string `json:"docker_version,omitempty"`
}

// Metric describes one value of a sample.
type Metric struct {
	Name  string `json:"name"`  // key in Sample.Values, e.g. p99_us
	Label string `json:"label"` // e.g. "p99 latency"
	Unit  string `json:"unit"`  // e.g. µs, Mbit/s, req/s, %
	// Better is "lower", "higher" or "" (neither: a check value).
	Better string `json:"better,omitempty"`
}

// Group is a condition.
type Group struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Mechanism says what made the condition (e.g. "tbf 1 Gbit/s +
	// clsact eBPF drop 1 %").
	Mechanism string `json:"mechanism,omitempty"`
}

// Variant is one of the compared things.
type Variant struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Detail says what it is exactly (the command, the network mode, the
	// quotas).
	Detail string `json:"detail,omitempty"`
}

// Sample is one measurement of a variant in a group.
type Sample struct {
	Group   string             `json:"group"`
	Variant string             `json:"variant"`
	Repeat  int                `json:"repeat"` // 1-based
	Order   int                `json:"order"`  // position in the run, 1-based
	Start   time.Time          `json:"start"`
	End     time.Time          `json:"end"`
	Values  map[string]float64 `json:"values"`
	// Error, when set, says why the sample failed; its Values are then
	// what was measured before the failure (possibly none) and are not
	// summarised.
	Error string `json:"error,omitempty"`
}

// Check is one verification of the mechanism.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// NA is a combination that cannot run, with the reason.
type NA struct {
	Group   string `json:"group,omitempty"` // "" = every group
	Variant string `json:"variant,omitempty"`
	Reason  string `json:"reason"`
}

// Reference is one finding of the original study.
type Reference struct {
	Group   string  `json:"group,omitempty"`
	Variant string  `json:"variant"`
	Metric  string  `json:"metric"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Note    string  `json:"note,omitempty"`
}

// Write stores r at path atomically.
func Write(path string, r *Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// Read loads a record and checks its schema.
func Read(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read study record: %w (run `make study STUDY=<name>` first)", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q (rerun the study with this loadgen)", path, r.Schema, Schema)
	}
	return &r, nil
}

// Values returns the given metric of every good sample of group × variant,
// in the order taken.
func (r *Record) Values(group, variant, metric string) []float64 {
	var out []float64
	for _, s := range r.Samples {
		if s.Group != group || s.Variant != variant || s.Error != "" {
			continue
		}
		if v, ok := s.Values[metric]; ok {
			out = append(out, v)
		}
	}
	return out
}

// Failed counts the failed samples of group × variant.
func (r *Record) Failed(group, variant string) int {
	n := 0
	for _, s := range r.Samples {
		if s.Group == group && s.Variant == variant && s.Error != "" {
			n++
		}
	}
	return n
}

// NAReason is why group × variant cannot run, "" when it can.
func (r *Record) NAReason(group, variant string) string { return NAReason(r.NA, group, variant) }

// NAReason is why group × variant cannot run according to na, "" when it
// can.
func NAReason(na []NA, group, variant string) string {
	for _, n := range na {
		if (n.Group == "" || n.Group == group) && (n.Variant == "" || n.Variant == variant) {
			return n.Reason
		}
	}
	return ""
}

// Check returns the named check, ok false when there is none.
func (r *Record) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

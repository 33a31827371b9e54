package build

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// settings is what the report takes from the run's plan, read and
// checked from manifest.Settings.
type settings struct {
	SLO       *report.SLO   // {"slo": {"p99": "120ms", "error_ratio": 0.01}}, nil when the plan has none
	Margin    float64       // the comparisons' margin ({"margin": 0.05}), 0 when it has none
	Candidate bool          // a duet's candidate ran in a container of its own (candidate_image, candidate_config)
	Timeout   time.Duration // the per-request timeout ({"timeout": "10s"}), 0 when it has none
	Keep      bool          // paired comparisons keep the pairs the host disturbed ({"keep_disturbed": true})
}

// planSettings reads the settings from the run's manifest in dir (its Settings;
// a manifest written before it had them, its plan's); the zero settings
// when there is no manifest.
func planSettings(dir string, man *manifest.Manifest) (settings, error) {
	if man == nil {
		return settings{}, nil
	}
	src := filepath.Join(dir, "manifest.json")
	p, err := man.PlanSettings()
	if err != nil {
		return settings{}, fmt.Errorf("%s: %w", src, err)
	}
	out := settings{Margin: p.Margin, Candidate: p.Candidate(), Keep: p.KeepDisturbed}
	if p.Timeout != "" {
		if out.Timeout, err = time.ParseDuration(p.Timeout); err != nil {
			return out, fmt.Errorf("%s: timeout %q: want a duration like 10s", src, p.Timeout)
		}
	}
	if p.SLO == nil {
		return out, nil
	}
	s := report.SLO{ErrorRatio: p.SLO.ErrorRatio}
	if p.SLO.P99 != "" {
		d, err := time.ParseDuration(p.SLO.P99)
		if err != nil {
			return out, fmt.Errorf("%s: slo.p99 %q: want a duration like 120ms", src, p.SLO.P99)
		}
		s.P99 = d
	}
	out.SLO = &s
	return out, nil
}

// readManifest is results/<run>/manifest.json, nil when there is none.
func readManifest(dir string) (*manifest.Manifest, error) {
	p := filepath.Join(dir, "manifest.json")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return manifest.Read(p)
}

package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// settings is what the report takes from the run's plan.
type settings struct {
	SLO       *report.SLO   // {"slo": {"p99": "120ms", "error_ratio": 0.01}}, nil when the plan has none
	Margin    float64       // the comparisons' margin ({"margin": 0.05}), 0 when it has none
	Candidate bool          // a duet's candidate ran in a container of its own (candidate_image, candidate_config)
	Timeout   time.Duration // the per-request timeout ({"timeout": "10s"}), 0 when it has none
	Keep      bool          // paired comparisons keep the pairs the host disturbed ({"keep_disturbed": true})
}

// planSettings reads the settings from results/<run>/plan.json or the
// manifest's plan; the zero settings when there is neither.
func planSettings(dir string, man *manifest.Manifest) (settings, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	src := filepath.Join(dir, "plan.json")
	if errors.Is(err, os.ErrNotExist) {
		if man == nil || len(man.Plan) == 0 {
			return settings{}, nil
		}
		raw, err, src = man.Plan, nil, "manifest plan"
	}
	if err != nil {
		return settings{}, fmt.Errorf("read plan: %w", err)
	}
	var p struct {
		SLO *struct {
			P99        string  `json:"p99"`
			ErrorRatio float64 `json:"error_ratio"`
		} `json:"slo"`
		Margin          float64 `json:"margin"`
		CandidateImage  string  `json:"candidate_image"`
		CandidateConfig string  `json:"candidate_config"`
		Timeout         string  `json:"timeout"`
		KeepDisturbed   bool    `json:"keep_disturbed"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return settings{}, fmt.Errorf("decode %s: %w", src, err)
	}
	out := settings{Margin: p.Margin, Candidate: p.CandidateImage != "" || p.CandidateConfig != "", Keep: p.KeepDisturbed}
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

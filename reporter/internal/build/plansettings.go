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

// planSettings reads what the report takes from results/<run>/plan.json
// or the manifest's plan: the SLO ({"slo": {"p99": "120ms",
// "error_ratio": 0.01}}, nil when the plan has none) and the margin the
// comparisons are decided at ({"margin": 0.05}, 0 when it has none).
func planSettings(dir string, man *manifest.Manifest) (*report.SLO, float64, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	src := filepath.Join(dir, "plan.json")
	if errors.Is(err, os.ErrNotExist) {
		if man == nil || len(man.Plan) == 0 {
			return nil, 0, nil
		}
		raw, err, src = man.Plan, nil, "manifest plan"
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read plan: %w", err)
	}
	var p struct {
		SLO *struct {
			P99        string  `json:"p99"`
			ErrorRatio float64 `json:"error_ratio"`
		} `json:"slo"`
		Margin float64 `json:"margin"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, 0, fmt.Errorf("decode %s: %w", src, err)
	}
	if p.SLO == nil {
		return nil, p.Margin, nil
	}
	s := report.SLO{ErrorRatio: p.SLO.ErrorRatio}
	if p.SLO.P99 != "" {
		d, err := time.ParseDuration(p.SLO.P99)
		if err != nil {
			return nil, p.Margin, fmt.Errorf("%s: slo.p99 %q: want a duration like 120ms", src, p.SLO.P99)
		}
		s.P99 = d
	}
	return &s, p.Margin, nil
}

// readManifest is results/<run>/manifest.json, nil when there is none.
func readManifest(dir string) (*manifest.Manifest, error) {
	p := filepath.Join(dir, "manifest.json")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return manifest.Read(p)
}

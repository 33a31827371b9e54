package manifest

import (
	"encoding/json"
	"fmt"
)

// Settings is what the reporter takes from the run's plan: the SLO, the
// comparisons' margin and whether they keep disturbed pairs, a duet's
// candidate, the request timeout, isolation. Its JSON names are the plan's
// own (results/<run>/plan.json), so the plan a manifest written before
// Settings existed carries (Manifest.Plan) decodes into it: Manifest.PlanSettings.
// Durations are Go duration text ("10s") as the plan writes them.
type Settings struct {
	SLO             *SLO    `json:"slo,omitempty"`
	Margin          float64 `json:"margin,omitempty"`
	KeepDisturbed   bool    `json:"keep_disturbed,omitempty"`
	CandidateImage  string  `json:"candidate_image,omitempty"`
	CandidateConfig string  `json:"candidate_config,omitempty"`
	Timeout         string  `json:"timeout,omitempty"` // per request
	Isolate         *bool   `json:"isolate,omitempty"` // the other proxies paused while one runs; nil when not said
}

// SLO is what the reporter judges a cell against.
type SLO struct {
	P99        string  `json:"p99"` // duration text, "120ms"
	ErrorRatio float64 `json:"error_ratio"`
}

// Candidate says whether a duet's candidate ran in a container of its own.
func (s Settings) Candidate() bool { return s.CandidateImage != "" || s.CandidateConfig != "" }

// PlanSettings is m's Settings. A manifest written before it had them
// gives its plan's (Plan, decoded under the same JSON names); one without
// either the zero Settings.
func (m *Manifest) PlanSettings() (Settings, error) {
	switch {
	case m.Settings != nil:
		return *m.Settings, nil
	case len(m.Plan) == 0:
		return Settings{}, nil
	}
	var s Settings
	if err := json.Unmarshal(m.Plan, &s); err != nil {
		return Settings{}, fmt.Errorf("decode the manifest's plan: %w", err)
	}
	return s, nil
}

package plan

import "proxybench/internal/manifest"

// Settings is what the reporter takes from the plan, as the manifest
// carries it (manifest.Settings, in the plan's own JSON names and text).
func (p *Plan) Settings() *manifest.Settings {
	isolate := p.Isolate
	return &manifest.Settings{
		SLO:    &manifest.SLO{P99: p.SLO.P99.String(), ErrorRatio: p.SLO.ErrorRatio},
		Margin: p.Margin, KeepDisturbed: p.KeepDisturbed,
		CandidateImage: p.CandidateImage, CandidateConfig: p.CandidateConfig,
		Timeout: p.Timeout.String(), Isolate: &isolate,
	}
}

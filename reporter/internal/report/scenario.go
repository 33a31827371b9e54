package report

import (
	"proxybench/internal/manifest"
	"proxybench/internal/stack"
)

// Support statuses of a proxy x scenario pair.
const (
	SupportNative = "native"
	SupportNA     = "n/a"
)

// Support is one cell of the proxy x scenario support matrix: native when
// the run measured it, n/a (with the reason) when the proxy cannot do the
// scenario without a plugin its official image lacks. Never silently
// absent: every proxy x scenario of the run has an entry.
type Support struct {
	Proxy    string `json:"proxy"`
	Scenario string `json:"scenario"`
	Status   string `json:"status"` // native | n/a
	Reason   string `json:"reason,omitempty"`
}

// SupportMatrix reads the matrix from a run's manifest: a pair is n/a when
// its cells were skipped as not applicable (manifest.SkipNotApplicable),
// native otherwise (including pairs whose
// cells failed or were skipped for other reasons: those are the proxy's
// result, shown in the cells themselves). Pairs keep the run's order.
func SupportMatrix(m *manifest.Manifest) []Support {
	if m == nil {
		return nil
	}
	type key struct{ proxy, scenario string }
	seen := map[key]*Support{}
	var order []key
	for _, c := range m.Cells {
		if stack.IsDirect(c.Proxy) { // no proxy: the direct control supports nothing
			continue
		}
		k := key{c.Proxy, c.Scenario}
		s := seen[k]
		if s == nil {
			s = &Support{Proxy: c.Proxy, Scenario: c.Scenario, Status: SupportNative}
			seen[k] = s
			order = append(order, k)
		}
		if c.Status == manifest.CellSkipped && c.Skip != nil && c.Skip.Kind == manifest.SkipNotApplicable {
			s.Status, s.Reason = SupportNA, c.Skip.Reason
		}
	}
	out := make([]Support, 0, len(order))
	for _, k := range order {
		out = append(out, *seen[k])
	}
	return out
}

package stats

import (
	"math"
	"sort"
)

// Holm adjusts a family of p-values for multiple comparisons by the
// Holm-Bonferroni step-down method: sorted ascending, the k-th smallest
// (k from 0) becomes (m - k) x p, never below the one before it, capped at
// 1, where m counts the finite p-values. Rejecting where the adjusted p is
// below alpha keeps the chance of any false alarm in the family at alpha
// or less. NaN entries (untested) stay NaN and do not count in m.
func Holm(p []float64) []float64 {
	out := make([]float64, len(p))
	var idx []int
	for i, v := range p {
		out[i] = math.NaN()
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return p[idx[i]] < p[idx[j]] })
	m := len(idx)
	prev := 0.0
	for k, i := range idx {
		adj := math.Min(1, float64(m-k)*p[i])
		adj = math.Max(adj, prev)
		out[i], prev = adj, adj
	}
	return out
}

package stats

import (
	"math"
	"sort"
)

// MWResult is a two-sided Mann-Whitney U test of a against b.
type MWResult struct {
	U     float64 `json:"u"`     // U statistic of sample a
	P     float64 `json:"p"`     // two-sided p-value
	Exact bool    `json:"exact"` // exact permutation distribution (no ties, small n)
	MinP  float64 `json:"min_p"` // smallest p-value these sample sizes can reach
}

// MannWhitney tests whether a and b come from the same distribution. Small
// samples without ties use the exact distribution of U; otherwise the normal
// approximation with tie correction and continuity correction.
func MannWhitney(a, b []float64) MWResult {
	a, b = finite(a), finite(b)
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return MWResult{P: math.NaN(), MinP: 1}
	}
	type obs struct {
		v     float64
		fromA bool
	}
	all := make([]obs, 0, n1+n2)
	for _, x := range a {
		all = append(all, obs{x, true})
	}
	for _, x := range b {
		all = append(all, obs{x, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	var rankA, tieTerm float64
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1..j
		t := float64(j - i)
		if t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		for k := i; k < j; k++ {
			if all[k].fromA {
				rankA += r
			}
		}
		i = j
	}
	u := rankA - float64(n1*(n1+1))/2
	res := MWResult{U: u, MinP: exactMinP(n1, n2)}
	if !ties && n1+n2 <= 40 {
		res.Exact = true
		res.P = exactP(u, n1, n2)
		return res
	}
	N := float64(n1 + n2)
	mu := float64(n1*n2) / 2
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((N + 1) - tieTerm/(N*(N-1))))
	if sigma == 0 {
		res.P = 1
		return res
	}
	z := (math.Abs(u-mu) - 0.5) / sigma
	if z < 0 {
		z = 0
	}
	res.P = math.Min(1, math.Erfc(z/math.Sqrt2))
	return res
}

// uCounts returns how many rank arrangements give each U for sizes n1, n2.
func uCounts(n1, n2 int) []float64 {
	// f[i][j][u]: arrangements of i a's and j b's with statistic u; rolled over j.
	maxU := n1 * n2
	prev := make([][]float64, n1+1) // prev[i] for j-1
	cur := make([][]float64, n1+1)
	for i := 0; i <= n1; i++ {
		prev[i] = make([]float64, maxU+1)
		cur[i] = make([]float64, maxU+1)
	}
	for j := 0; j <= n2; j++ {
		for i := 0; i <= n1; i++ {
			for u := range cur[i] {
				cur[i][u] = 0
			}
			if i == 0 || j == 0 {
				cur[i][0] = 1
				continue
			}
			// Largest element from a: it beats all j b's, adding j to U.
			for u := j; u <= maxU; u++ {
				cur[i][u] += cur[i-1][u-j]
			}
			for u := 0; u <= maxU; u++ {
				cur[i][u] += prev[i][u]
			}
		}
		prev, cur = cur, prev
	}
	return prev[n1]
}

func exactP(u float64, n1, n2 int) float64 {
	c := uCounts(n1, n2)
	var total, tail float64
	mu := float64(n1*n2) / 2
	d := math.Abs(u - mu)
	for k, cnt := range c {
		total += cnt
		if math.Abs(float64(k)-mu) >= d-1e-9 {
			tail += cnt
		}
	}
	return math.Min(1, tail/total)
}

func exactMinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	return exactP(0, n1, n2)
}

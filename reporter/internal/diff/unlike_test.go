package diff

import (
	"slices"
	"testing"
)

// TestUnlikeNamesWhatDiffers: two runs of the same plan read alike; a
// different request timeout, host or load is named with both values.
func TestUnlikeNamesWhatDiffers(t *testing.T) {
	a, b := mkReport("a", baseCells()), mkReport("b", baseCells())
	a.RequestTimeoutS, b.RequestTimeoutS = 10, 10
	if got := unlike(a, b); len(got) != 0 {
		t.Fatalf("the same plan: %q", got)
	}
	b.RequestTimeoutS = 2
	b.Environment.Host = map[string]string{"cpus": "4"}
	got := unlike(a, b)
	for _, want := range []string{"request timeout: 10 s in A, 2 s in B", "host CPUs: – in A, 4 in B"} {
		if !slices.Contains(got, want) {
			t.Errorf("unlike = %q, want %q among them", got, want)
		}
	}
}

package runner

import (
	"slices"

	"proxybench/internal/atomicfile"
)

// writeAtomic stores b at path so that a crash leaves the previous version
// whole (internal/atomicfile).
func writeAtomic(path string, b []byte) error { return atomicfile.WriteFile(path, b, 0o644) }

func addUniq(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

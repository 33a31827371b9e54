package runner

import (
	"proxybench/internal/atomicfile"
)

// writeAtomic stores b at path so that a crash leaves the previous version
// whole (internal/atomicfile).
func writeAtomic(path string, b []byte) error { return atomicfile.WriteFile(path, b, 0o644) }

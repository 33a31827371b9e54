//go:build !linux

package selfcpu

import "errors"

// affinityCPUs is Linux only: elsewhere GOMAXPROCS alone bounds capacity.
func affinityCPUs() (int, error) { return 0, errors.ErrUnsupported }

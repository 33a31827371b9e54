//go:build !linux

package cputime

import "errors"

// Affinity is Linux only.
func Affinity(int) ([]int, error) { return nil, errors.ErrUnsupported }

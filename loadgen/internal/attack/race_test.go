//go:build race

package attack

// The race detector slows the hot path several-fold: sub-millisecond
// timing assertions do not hold under it.
const raceEnabled = true

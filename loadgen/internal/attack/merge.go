package attack

import (
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
	"proxybench/internal/reqsample"
)

// Merge is the exact account of attacks run at once as one: a traffic
// mix's variants, or the loadgen workers of one instrument. The window
// spans them all; counts add up; the HdrHistograms merge into a new one
// (counts add bucket by bucket, so every quantile of the merge is that of
// the union of the raw samples, and the parts stay as they were); the drain
// ends with the last; the lag p99 is the worst part's (the parts' lag
// histograms are not kept); the protocol and what TLS negotiated are the
// first part's that has them, its handshakes the sum; workers of the parts
// merge by index the same way; the request samples add up. nil parts are skipped; nil when none is
// left.
func Merge(rs ...*Result) *Result {
	var m *Result
	for _, r := range rs {
		if r == nil {
			continue
		}
		if m == nil {
			m = &Result{Start: r.Start, End: r.End,
				Codes: map[int]int64{}, ErrorReasons: map[string]int64{},
				LateCodes: map[int]int64{}, LateReasons: map[string]int64{}}
		}
		if !r.Start.IsZero() && (m.Start.IsZero() || r.Start.Before(m.Start)) {
			m.Start = r.Start
		}
		if r.End.After(m.End) {
			m.End = r.End
		}
		if m.Protocol == "" {
			m.Protocol = r.Protocol
		}
		m.TLS = mergeTLS(m.TLS, r.TLS)
		m.Requests += r.Requests
		m.Errors += r.Errors
		m.Bytes += r.Bytes
		m.Scheduled += r.Scheduled
		m.Sent += r.Sent
		m.WrongOrigin += r.WrongOrigin
		m.Missed += r.Missed
		m.Queued += r.Queued
		m.Capped += r.Capped
		m.Held += r.Held
		m.Late += r.Late
		m.LagP99 = max(m.LagP99, r.LagP99)
		if r.DrainEnd.After(m.DrainEnd) {
			m.DrainEnd = r.DrainEnd
		}
		for k, n := range r.Codes {
			m.Codes[k] += n
		}
		for k, n := range r.ErrorReasons {
			m.ErrorReasons[k] += n
		}
		for k, n := range r.LateCodes {
			m.LateCodes[k] += n
		}
		for k, n := range r.LateReasons {
			m.LateReasons[k] += n
		}
		if r.Hist != nil {
			if m.Hist == nil {
				m.Hist = hdrhistogram.Import(r.Hist.Export())
			} else {
				m.Hist.Merge(r.Hist)
			}
		}
		if r.Samples != nil {
			if m.Samples == nil {
				m.Samples = &reqsample.Set{}
			}
			m.Samples.Merge(r.Samples)
		}
		m.Workers = mergeWorkers(m.Workers, r.Workers)
		mergeSplit(m, r)
	}
	return m
}

// mergeTLS adds b's handshakes to a copy of a; the negotiated fields are
// a's, else b's.
func mergeTLS(a, b *manifest.TLS) *manifest.TLS {
	if b == nil {
		return a
	}
	if a == nil {
		c := *b
		return &c
	}
	if a.ALPN == "" && a.Version == "" {
		a.ALPN, a.Version, a.Cipher = b.ALPN, b.Version, b.Cipher
	}
	a.HandshakesFull += b.HandshakesFull
	a.HandshakesResumed += b.HandshakesResumed
	a.CertErrors += b.CertErrors
	a.ALPNMismatches += b.ALPNMismatches
	a.VersionRefused += b.VersionRefused
	a.HandshakeErrors += b.HandshakeErrors
	return a
}

// mergeWorkers merges the workers of b into those of a by index: one
// worker's parts of a mix (its attacks of each variant) become one part.
// Its counts and histogram merge, its segment's load adds up, the first
// failure is kept, the skew is the part furthest from the barrier; its
// clock offset and its CPU readings (of the one process, over the same
// window) are the first part's.
func mergeWorkers(a, b []WorkerResult) []WorkerResult {
	for _, w := range b {
		i := slices.IndexFunc(a, func(x WorkerResult) bool { return x.Index == w.Index })
		if i < 0 {
			w.Result = Merge(w.Result) // a copy: the part stays as it was
			a = append(a, w)
			continue
		}
		x := &a[i]
		x.Result = Merge(x.Result, w.Result)
		x.Concurrency += w.Concurrency
		x.Rate += w.Rate
		if x.Err == "" {
			x.Err = w.Err
		}
		if abs(w.Skew) > abs(x.Skew) {
			x.Skew = w.Skew
		}
		if x.Loadgen == nil {
			x.Loadgen = w.Loadgen
		}
		if x.CPU == nil {
			x.CPU = w.CPU
		}
	}
	slices.SortFunc(a, func(x, y WorkerResult) int { return x.Index - y.Index })
	return a
}

func abs[T ~int64](d T) T {
	if d < 0 {
		return -d
	}
	return d
}

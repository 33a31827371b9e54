// Package reqsample owns sampling an attack's requests by their times on
// the host's wall clock without slowing the attack: every request into a
// uniform reservoir, and every request slower than a running high-latency
// threshold into a tail reservoir, both of bounded size (Algorithm L: one
// comparison per request once full); and
// the Set the samplers of an attack make together, which a cell's file
// keeps (package gctail).
//
// A Sampler is owned by one recorder of the attack engine and called under
// its lock: it takes no lock and allocates only until its reservoirs are
// full.
package reqsample

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Req is one sampled request.
type Req struct {
	Done     int64   // completion, Unix nanoseconds of the host's wall clock
	Latency  int64   // ns, what the exact histogram counts (in an open loop from the intended send)
	InFlight int64   // ns, from the actual send to Done: the request was at the target over [Done-InFlight, Done]
	W        float32 // how many requests of the attack it stands for
}

// Sent is when the request was actually sent, Unix nanoseconds.
func (r Req) Sent() int64 { return r.Done - r.InFlight }

// Set is the sample of one attack (or of several merged): Uniform is a
// uniform sample of all its requests, Tail holds requests that were slower
// than the threshold when they completed. A request may be in both.
type Set struct {
	Uniform []Req `json:"uniform"`
	Tail    []Req `json:"tail"`
	// Seen is the requests the samplers saw; TailSeen the ones above the
	// threshold (each in Tail with weight TailSeen/len(Tail) of its sampler).
	Seen     int64 `json:"seen"`
	TailSeen int64 `json:"tail_seen"`
	// TailQuantile is the threshold's quantile of the running latencies
	// (0..100).
	TailQuantile float64 `json:"tail_quantile"`
	// TailThreshold is the highest of the samplers' last thresholds, ns:
	// above it the tail holds every request the samplers saw (up to
	// their reservoirs' weights).
	TailThreshold int64 `json:"tail_threshold_ns"`
}

// Merge appends o's samples to s.
func (s *Set) Merge(o *Set) {
	if o == nil {
		return
	}
	s.Uniform = append(s.Uniform, o.Uniform...)
	s.Tail = append(s.Tail, o.Tail...)
	s.Seen += o.Seen
	s.TailSeen += o.TailSeen
	s.TailThreshold = max(s.TailThreshold, o.TailThreshold)
	if s.TailQuantile == 0 {
		s.TailQuantile = o.TailQuantile
	}
}

// Defaults of an attack's samplers: the tail's threshold is the running
// 90th percentile of the sampler's requests, refreshed every 256 requests
// (everything goes to the tail before the first refresh), and each
// reservoir of the whole attack holds at most 1<<15 requests. The
// threshold sits well below the p99 the tail is read at: it is a running
// percentile of all the requests so far, and a slow start (cold caches,
// the first connections) keeps it high for a while, so a threshold near
// the p99 (the 98th) missed up to 38 % of the requests above a Traefik
// cell's final p99 in one of four runs on the lab's VM.
const (
	TailQuantile = 90
	Refresh      = 256
	MaxPerAttack = 1 << 15
)

// buckets of the running latency histogram: 8 per octave of nanoseconds
// (about 9 % wide), enough for a threshold and cheap to walk.
const buckets = 64 * 8

// reservoir is Algorithm L (Li, 1994): a uniform sample of at most cap of
// the candidates offered, which after the first cap costs one comparison
// per candidate and draws random numbers only for the few it keeps.
type reservoir struct {
	kept []Req
	cap  int
	seen int64   // candidates offered
	next int64   // the candidate that replaces a kept one next (1-based)
	w    float64 // Algorithm L's running W
}

// Sampler samples the requests one recorder sees.
type Sampler struct {
	count        uint32
	thresh       int64 // ns; slower requests go to the tail
	hist         [buckets]uint32
	uni, tail    reservoir
	seen         int64
	rng          uint64
	tailQuantile float64
}

// New makes a sampler keeping at most capacity requests in each
// reservoir, its tail above the running tailQuantile (0..100) of its
// requests' latencies; seed seeds its reservoirs' choices.
func New(capacity int, tailQuantile float64, seed uint64) *Sampler {
	capacity = max(capacity, 1)
	return &Sampler{uni: reservoir{cap: capacity}, tail: reservoir{cap: capacity}, rng: seed | 1, tailQuantile: tailQuantile}
}

// Add samples one completed request.
func (s *Sampler) Add(done time.Time, latency, inFlight time.Duration) {
	s.seen++
	s.hist[bucket(int64(latency))]++
	if s.count++; s.count >= Refresh {
		s.count = 0
		s.thresh = s.quantile()
	}
	if int64(latency) > s.thresh {
		s.offer(&s.tail, done, latency, inFlight)
	}
	s.offer(&s.uni, done, latency, inFlight)
}

// offer offers one request to a reservoir.
func (s *Sampler) offer(r *reservoir, done time.Time, latency, inFlight time.Duration) {
	r.seen++
	if len(r.kept) < r.cap {
		r.kept = append(r.kept, Req{Done: done.UnixNano(), Latency: int64(latency), InFlight: int64(inFlight)})
		if len(r.kept) == r.cap {
			r.w = math.Exp(math.Log(s.uniform()) / float64(r.cap))
			s.skip(r)
		}
		return
	}
	if r.seen < r.next {
		return
	}
	r.kept[s.rand()%uint64(r.cap)] = Req{Done: done.UnixNano(), Latency: int64(latency), InFlight: int64(inFlight)}
	r.w *= math.Exp(math.Log(s.uniform()) / float64(r.cap))
	s.skip(r)
}

// skip draws the next candidate r keeps after the one just handled: a
// geometric gap of parameter r.w.
func (s *Sampler) skip(r *reservoir) {
	gap := math.Floor(math.Log(s.uniform()) / math.Log1p(-r.w))
	if gap > 1<<62 || math.IsNaN(gap) {
		gap = 1 << 62
	}
	r.next = r.seen + int64(gap) + 1
}

// rand is xorshift64*: a few ns, no lock, no allocation.
func (s *Sampler) rand() uint64 {
	s.rng ^= s.rng >> 12
	s.rng ^= s.rng << 25
	s.rng ^= s.rng >> 27
	return s.rng * 2685821657736338717
}

// uniform is a random number in (0, 1).
func (s *Sampler) uniform() float64 { return (float64(s.rand()>>11) + 0.5) / (1 << 53) }

// Threshold is the current tail threshold.
func (s *Sampler) Threshold() time.Duration { return time.Duration(s.thresh) }

// quantile is the lower edge of the bucket holding the tail quantile.
func (s *Sampler) quantile() int64 {
	target := uint64(float64(s.seen) * s.tailQuantile / 100)
	var cum uint64
	for b, n := range s.hist {
		if cum += uint64(n); cum > target {
			return lower(b)
		}
	}
	return lower(buckets - 1)
}

// bucket is v's bucket: values under 8 have their own, then 8 per octave.
func bucket(v int64) int {
	if v < 8 {
		return int(max(v, 0))
	}
	n := bits.Len64(uint64(v))
	return (n-3)*8 + int((v>>(n-4))&7)
}

// lower is the least value of bucket b.
func lower(b int) int64 {
	if b < 8 {
		return int64(b)
	}
	n := b/8 + 3
	return int64(8+b%8) << (n - 4)
}

// Set is what the sampler kept, with each request's weight: how many of
// the reservoir's candidates each kept one stands for.
func (s *Sampler) Set() *Set {
	out := &Set{Seen: s.seen, TailSeen: s.tail.seen, TailQuantile: s.tailQuantile, TailThreshold: s.thresh}
	out.Uniform, out.Tail = s.uni.weighed(), s.tail.weighed()
	return out
}

func (r *reservoir) weighed() []Req {
	if len(r.kept) == 0 {
		return nil
	}
	w := float32(float64(r.seen) / float64(len(r.kept)))
	out := make([]Req, len(r.kept))
	for i, q := range r.kept {
		q.W = w
		out[i] = q
	}
	return out
}

// MarshalJSON writes a request as [done, latency, in_flight, weight]: a
// cell's file holds tens of thousands.
func (r Req) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "[%d,%d,%d,%g]", r.Done, r.Latency, r.InFlight, r.W), nil
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (r *Req) UnmarshalJSON(b []byte) error {
	var a []json.Number
	if err := json.Unmarshal(b, &a); err != nil || len(a) != 4 {
		return fmt.Errorf("a sampled request is [done_ns, latency_ns, in_flight_ns, weight], not %s", clip(b))
	}
	var err error
	for i, p := range []*int64{&r.Done, &r.Latency, &r.InFlight} {
		if *p, err = a[i].Int64(); err != nil {
			return fmt.Errorf("sampled request %s: %w", clip(b), err)
		}
	}
	w, err := a[3].Float64()
	if err != nil {
		return fmt.Errorf("sampled request %s: %w", clip(b), err)
	}
	r.W = float32(w)
	return nil
}

func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// Package reqsample owns sampling an attack's requests by their times on
// the host's wall clock without slowing the attack: every Nth request into
// a uniform reservoir, and every request slower than a running
// high-latency threshold into a tail reservoir, both of bounded size; and
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
	// Every is the uniform stride, TailQuantile the threshold's quantile
	// of the running latencies (0..100).
	Every        int     `json:"every"`
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
	if s.Every == 0 {
		s.Every, s.TailQuantile = o.Every, o.TailQuantile
	}
}

// Defaults of an attack's samplers: every 8th request, the threshold the
// running 98th percentile of the sampler's requests, refreshed every 256
// requests (everything goes to the tail before the first refresh), and at
// most 1<<15 requests in each reservoir of the whole attack.
const (
	Every        = 8
	TailQuantile = 98
	Refresh      = 256
	MaxPerAttack = 1 << 15
)

// buckets of the running latency histogram: 8 per octave of nanoseconds
// (about 9 % wide), enough for a threshold and cheap to walk.
const buckets = 64 * 8

// Sampler samples the requests one recorder sees.
type Sampler struct {
	every, n     uint32
	count        uint32
	thresh       int64 // ns; slower requests go to the tail
	hist         [buckets]uint32
	uni, tail    []Req
	capacity     int
	seen         int64
	uniSeen      int64 // every-Nth candidates
	tailSeen     int64
	rng          uint64
	tailQuantile float64
}

// New makes a sampler of every Nth request keeping at most capacity
// requests in each reservoir, its tail above the running tailQuantile
// (0..100) of its requests' latencies; seed seeds its reservoirs' choices.
func New(every, capacity int, tailQuantile float64, seed uint64) *Sampler {
	return &Sampler{every: uint32(max(every, 1)), capacity: max(capacity, 1), rng: seed | 1, tailQuantile: tailQuantile}
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
		s.tailSeen++
		s.tail = s.keep(s.tail, s.tailSeen, done, latency, inFlight)
	}
	if s.n++; s.n >= s.every {
		s.n = 0
		s.uniSeen++
		s.uni = s.keep(s.uni, s.uniSeen, done, latency, inFlight)
	}
}

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

// keep is Algorithm R: the k-th candidate replaces a random kept one with
// probability capacity/k once the reservoir is full.
func (s *Sampler) keep(buf []Req, k int64, done time.Time, latency, inFlight time.Duration) []Req {
	if len(buf) < s.capacity {
		return append(buf, Req{Done: done.UnixNano(), Latency: int64(latency), InFlight: int64(inFlight)})
	}
	// xorshift64*: a few ns, no lock, no allocation.
	s.rng ^= s.rng >> 12
	s.rng ^= s.rng << 25
	s.rng ^= s.rng >> 27
	if j := int64((s.rng * 2685821657736338717) % uint64(k)); j < int64(s.capacity) {
		buf[j] = Req{Done: done.UnixNano(), Latency: int64(latency), InFlight: int64(inFlight)}
	}
	return buf
}

// Set is what the sampler kept, with each request's weight.
func (s *Sampler) Set() *Set {
	out := &Set{Seen: s.seen, TailSeen: s.tailSeen, Every: int(s.every), TailQuantile: s.tailQuantile, TailThreshold: s.thresh}
	if n := len(s.uni); n > 0 {
		w := float32(float64(s.seen) / float64(n))
		out.Uniform = make([]Req, n)
		for i, r := range s.uni {
			r.W = w
			out.Uniform[i] = r
		}
	}
	if n := len(s.tail); n > 0 {
		w := float32(float64(s.tailSeen) / float64(n))
		out.Tail = make([]Req, n)
		for i, r := range s.tail {
			r.W = w
			out.Tail[i] = r
		}
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

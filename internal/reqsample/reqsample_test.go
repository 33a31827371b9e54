package reqsample

import (
	"encoding/json"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	for _, v := range []int64{0, 1, 7, 8, 15, 16, 17, 100, 999, 1 << 20, 123456789, 60e9} {
		b := bucket(v)
		if lo := lower(b); lo > v || (b+1 < buckets && lower(b+1) <= v) {
			t.Errorf("value %d in bucket %d [%d, %d)", v, b, lo, lower(b+1))
		}
	}
}

// TestSampler feeds 100,000 requests whose latency is their index in µs:
// the uniform reservoir holds all of them, the threshold settles at the
// 98th percentile within a bucket, and the tail holds every request above
// it.
func TestSampler(t *testing.T) {
	s := New(1<<20, 98, 1)
	t0 := time.Unix(1e9, 0)
	const n = 100_000
	for i := range n {
		lat := time.Duration(i+1) * time.Microsecond
		s.Add(t0.Add(time.Duration(i)*time.Millisecond), lat, lat/2)
	}
	set := s.Set()
	if len(set.Uniform) != n || set.Seen != n {
		t.Fatalf("uniform %d of %d seen, want all", len(set.Uniform), set.Seen)
	}
	var w float64
	for _, r := range set.Uniform {
		w += float64(r.W)
	}
	if w < n-1 || w > n+1 {
		t.Errorf("uniform weights add up to %v, want %d", w, n)
	}
	if th := s.Threshold(); th < 90*time.Millisecond || th > 98*time.Millisecond {
		t.Errorf("threshold %v, want within a bucket (9 %%) under the p98 of 98 ms", th)
	}
	above := 0
	for _, r := range set.Tail {
		if r.Latency > int64(98*time.Millisecond) {
			above++
		}
		if r.Sent() != r.Done-r.InFlight || r.W != 1 {
			t.Fatalf("tail request %+v", r)
		}
	}
	if above != 2000 {
		t.Errorf("%d tail requests above 98 ms, want all 2000", above)
	}
}

// TestSamplerBounded: full reservoirs keep their size, allocate nothing
// more, and weigh their requests by how many each stands for.
func TestSamplerBounded(t *testing.T) {
	s := New(100, 50, 7)
	now := time.Now()
	for i := range 10_000 {
		s.Add(now, time.Duration(i%1000)*time.Microsecond, time.Microsecond)
	}
	if a := testing.AllocsPerRun(1000, func() { s.Add(now, time.Millisecond, time.Microsecond) }); a != 0 {
		t.Errorf("Add allocates %v times with full reservoirs", a)
	}
	set := s.Set()
	if len(set.Uniform) != 100 || len(set.Tail) != 100 {
		t.Fatalf("reservoirs of %d and %d, want 100", len(set.Uniform), len(set.Tail))
	}
	if want := float32(set.Seen) / 100; set.Uniform[0].W != want {
		t.Errorf("uniform weight %v, want %v", set.Uniform[0].W, want)
	}
}

// TestReservoirUniform: a full reservoir keeps a uniform sample of all it
// was offered (Algorithm L): 1,000 of 100,000 requests numbered by their
// latency have a mean near 50,000 (the standard error is 913) and half of
// them come from each half.
func TestReservoirUniform(t *testing.T) {
	s := New(1000, 100, 3)
	now := time.Now()
	const n = 100_000
	for i := range n {
		s.Add(now, time.Duration(i), 0)
	}
	set := s.Set()
	if len(set.Uniform) != 1000 {
		t.Fatalf("%d kept, want 1000", len(set.Uniform))
	}
	var sum float64
	first := 0
	for _, r := range set.Uniform {
		sum += float64(r.Latency)
		if r.Latency < n/2 {
			first++
		}
	}
	if mean := sum / 1000; mean < 46_000 || mean > 54_000 {
		t.Errorf("mean of the kept %v, want about 50,000", mean)
	}
	if first < 440 || first > 560 {
		t.Errorf("%d of 1000 kept from the first half, want about 500", first)
	}
}

func TestReqJSON(t *testing.T) {
	in := []Req{{Done: 1_700_000_000_123_456_789, Latency: 1234, InFlight: 1000, W: 8}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "[[1700000000123456789,1234,1000,8]]" {
		t.Fatalf("marshalled %s", b)
	}
	var out []Req
	if err := json.Unmarshal(b, &out); err != nil || len(out) != 1 || out[0] != in[0] {
		t.Fatalf("round trip %v %v", out, err)
	}
	if err := json.Unmarshal([]byte(`[[1,2,3]]`), &out); err == nil {
		t.Fatal("a request of three numbers: no error")
	}
}

// BenchmarkAdd is what a sampled request costs the recorder that owns the
// sampler, with full reservoirs (the steady state of a long window).
func BenchmarkAdd(b *testing.B) {
	s := New(1024, TailQuantile, 1)
	now := time.Now()
	for i := range 100_000 {
		s.Add(now, time.Duration(100+i%500)*time.Microsecond, time.Millisecond)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		s.Add(now, time.Duration(100+i%500)*time.Microsecond, time.Millisecond)
	}
}

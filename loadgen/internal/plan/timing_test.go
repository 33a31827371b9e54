package plan

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestWarmupAndCooldownThreshold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tier       string
		wantWarmup []time.Duration
		long       bool
	}{
		{"quick", []time.Duration{0}, false},
		{"29s", []time.Duration{0}, false},
		{"30s", []time.Duration{5 * time.Second}, true},
		{"5s,60s", []time.Duration{0, 5 * time.Second}, true},
		{"all", []time.Duration{0, 5 * time.Second, 5 * time.Second}, true},
	}
	for _, tc := range tests {
		t.Run(tc.tier, func(t *testing.T) {
			t.Parallel()
			p, err := Load([]string{"-tier", tc.tier, "-proxies", "nginx", "-origins", "fast"}, now, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			x, err := p.Expand()
			if err != nil {
				t.Fatal(err)
			}
			if len(x.Cells) != len(tc.wantWarmup) {
				t.Fatalf("%d cells", len(x.Cells))
			}
			for i, c := range x.Cells {
				if time.Duration(c.Warmup) != tc.wantWarmup[i] {
					t.Errorf("%s warmup %s, want %s", c.ID, c.Warmup, tc.wantWarmup[i])
				}
			}
			if x.LongRun != tc.long {
				t.Errorf("long run %v, want %v", x.LongRun, tc.long)
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	p, err := Load(strings.Fields("-tier 30s -proxies nginx,caddy -origins fast -settle 3s -cooldown 10s -warmup 5s -linger 5s"), now, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := p.Expand()
	// (5 warm-up + 3 gap + 30) + (3 settle + 7 more cooldown) + 38 + 5 linger
	if got, want := x.Estimate(), 91*time.Second; got != want {
		t.Errorf("estimate %s, want %s", got, want)
	}
}

// TestQuietBetweenCells: the settle after traffic of the same label set
// (repeats in a row), a counting span's margin after another's, never more
// than the settle asked for (0 is 0), and what is left of the settle when
// the label set's traffic ended a while ago.
func TestQuietBetweenCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args string
		want time.Duration
	}{
		{"-tier 1s -proxies nginx -origins fast -repeats 3 -control=false -settle 3s -linger 0s", 3*time.Second + 2*3*time.Second},
		{"-tier 1s -proxies nginx,caddy -origins fast -settle 3s -linger 0s", 2*time.Second + 1500*time.Millisecond},
		{"-tier 1s -proxies nginx,caddy -origins fast -settle 1s -linger 0s", 2*time.Second + time.Second},
		{"-tier 1s -proxies nginx,caddy -origins fast -settle 0s -linger 0s", 2 * time.Second},
	} {
		p, err := Load(strings.Fields(tc.args), now, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := p.Expand()
		if got := x.Estimate(); got != tc.want {
			t.Errorf("%s: estimate %s, want %s", tc.args, got, tc.want)
		}
	}
	x := &Expanded{Plan: Plan{Settle: Duration(3 * time.Second)}}
	for _, tc := range []struct {
		since time.Duration
		same  bool
		want  time.Duration
	}{{0, true, 3 * time.Second}, {time.Second, true, 2 * time.Second}, {2900 * time.Millisecond, true, 1500 * time.Millisecond}, {0, false, 1500 * time.Millisecond}} {
		if got := x.Quiet(tc.since, tc.same); got != tc.want {
			t.Errorf("quiet %v after the same label set (%v): %v, want %v", tc.since, tc.same, got, tc.want)
		}
	}
}

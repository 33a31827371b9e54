package plan

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestBudgetKeepsTheRoundsThatFit: a duet with a budget keeps the rounds
// whose estimated time fits it, two at least, and says so in Repeats.
func TestBudgetKeepsTheRoundsThatFit(t *testing.T) {
	t.Parallel()
	load := func(args string) (*Expanded, error) {
		p, err := Load(strings.Fields(args), now, io.Discard)
		if err != nil {
			return nil, err
		}
		return p.Expand()
	}
	// A pair of 5 s cells with 3 s of settle before each: 16 s a pair.
	x, err := load("-tier 5s -proxies traefik -origins fast -repeats 100 -duet-cpus 0.9 -control=false -budget 2m")
	if err != nil {
		t.Fatal(err)
	}
	if x.Repeats < 6 || x.Repeats > 8 || len(x.Cells) != 2*x.Repeats || x.Estimate() > 2*time.Minute {
		t.Fatalf("2 min budget: %d pairs, %d cells, estimate %s", x.Repeats, len(x.Cells), x.Estimate())
	}
	tiny, err := load("-tier 5s -proxies traefik -origins fast -repeats 100 -duet-cpus 0.9 -budget 1s")
	if err != nil || tiny.Repeats != 2 {
		t.Fatalf("a budget under one pair still measures 2: %v, %+v", err, tiny)
	}
	for args, want := range map[string]string{
		"-budget 1m -repeats 5":                 "budget 1m0s: a duet's time limit (with duet_cpus, candidate_image or candidate_config)",
		"-margin 0 -repeats 5 -duet-cpus 0.9":   "margin 0:",
		"-margin 1.5 -repeats 5 -duet-cpus 0.9": "margin 1.5:",
		"-budget -1s -repeats 5 -duet-cpus 0.9": "must not be negative",
	} {
		if _, err := load("-tier 5s -proxies traefik -origins fast " + args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", args, err, want)
		}
	}
}

// TestDuetControlEveryOtherBlock: a duet's A/A control is measured next to
// its twin in rounds 1-2, 5-6, ...: its ABBA order kept, the pairs given
// four fifths of the time.
func TestDuetControlEveryOtherBlock(t *testing.T) {
	t.Parallel()
	p, err := Load(strings.Fields("-tier 5s -proxies traefik -origins fast -repeats 8 -duet-cpus 0.9"), now, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range x.Cells {
		got = append(got, c.ID)
	}
	want := "traefik.fast.simple.5s.aa.r1 traefik.fast.simple.5s.r1 traefik.fast.simple.5s.candidate.r1 " +
		"traefik.fast.simple.5s.candidate.r2 traefik.fast.simple.5s.r2 traefik.fast.simple.5s.aa.r2 " +
		"traefik.fast.simple.5s.r3 traefik.fast.simple.5s.candidate.r3 traefik.fast.simple.5s.candidate.r4 traefik.fast.simple.5s.r4 " +
		"traefik.fast.simple.5s.aa.r5 traefik.fast.simple.5s.r5 traefik.fast.simple.5s.candidate.r5 " +
		"traefik.fast.simple.5s.candidate.r6 traefik.fast.simple.5s.r6 traefik.fast.simple.5s.aa.r6 " +
		"traefik.fast.simple.5s.r7 traefik.fast.simple.5s.candidate.r7 traefik.fast.simple.5s.candidate.r8 traefik.fast.simple.5s.r8"
	if strings.Join(got, " ") != want {
		t.Errorf("duet order\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

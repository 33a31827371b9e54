package netlab

import (
	"context"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestThreshold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p    float64
		want uint64
	}{
		{0, 0}, {-1, 0}, {math.NaN(), 0},
		{1, 1 << 32}, {2, 1 << 32},
		{0.5, 1 << 31},
		{0.01, 42949673}, // round(0.01 * 2^32 = 42949672.96)
		{0.02, 85899346}, // round(85899345.92)
	} {
		if got := Threshold(c.p); got != c.want {
			t.Errorf("Threshold(%v) = %d, want %d", c.p, got, c.want)
		}
	}
	// The exact probability is within half a step of what was asked.
	for _, p := range []float64{0.001, 0.01, 0.02, 0.3} {
		if d := math.Abs(ThresholdProb(Threshold(p)) - p); d > 0.5/(1<<32) {
			t.Errorf("ThresholdProb(Threshold(%v)) off by %g", p, d)
		}
	}
}

func TestWilsonInterval(t *testing.T) {
	t.Parallel()
	// 1 % of a million: the interval is about ±0.026 %, and holds 1 %.
	lo, hi := WilsonInterval(10000, 1000000, Z99)
	if !(lo < 0.01 && hi > 0.01) || hi-lo > 0.0006 || hi-lo < 0.0004 {
		t.Errorf("WilsonInterval(10000, 1e6) = [%g, %g]", lo, hi)
	}
	// 1.2 % of a million excludes 1 %: the check can fail.
	if lo, _ := WilsonInterval(12000, 1000000, Z99); lo <= 0.01 {
		t.Errorf("1.2 %% of 1e6 gives lo %g, want > 0.01", lo)
	}
	if lo, hi := WilsonInterval(0, 0, Z99); lo != 0 || hi != 1 {
		t.Errorf("no trials: [%g, %g], want [0, 1]", lo, hi)
	}
	if lo, hi := WilsonInterval(0, 1000, Z99); lo != 0 || hi <= 0 || hi > 0.01 {
		t.Errorf("0 of 1000: [%g, %g]", lo, hi)
	}
}

func TestParseQdiscStats(t *testing.T) {
	t.Parallel()
	out := "qdisc tbf 1: root refcnt 3 rate 1Gbit burst 15000b lat 10ms overhead 24 \n Sent 811261648 bytes 537874 pkt (dropped 3, overlimits 60385 requeues 0) \n backlog 0b 0p requeues 0\n"
	s, err := ParseQdiscStats(out)
	if err != nil || s != (QdiscStats{Sent: 537874, Dropped: 3, Overlimits: 60385}) {
		t.Fatalf("ParseQdiscStats = %+v, %v", s, err)
	}
	if _, err := ParseQdiscStats("qdisc noqueue 0: root\n"); err == nil {
		t.Error("no Sent line: want an error")
	}
}

func TestCPUMaskAndTBFArgs(t *testing.T) {
	t.Parallel()
	if m := CPUMask([]int{0}); m != "1" {
		t.Errorf("CPUMask(0) = %s", m)
	}
	if m := CPUMask([]int{1, 3}); m != "a" {
		t.Errorf("CPUMask(1,3) = %s", m)
	}
	if a := strings.Join(TBFArgs(1e9, 24), " "); a != "tbf rate 1000000000bit burst 15000 latency 10ms overhead 24" {
		t.Errorf("TBFArgs = %s", a)
	}
}

// needRoot skips a test that makes namespaces or loads BPF.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, BPF)")
	}
}

// TestDropperKernel loads the program into the kernel and test-runs it at
// loss 0, 1 and 0.5: the counters and the drop rate follow the threshold.
func TestDropperKernel(t *testing.T) {
	needRoot(t)
	d, err := LoadDropper()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runN := func(p float64, n int) (drops int) {
		t.Helper()
		if _, err := d.SetLoss(p); err != nil {
			t.Fatal(err)
		}
		for range n {
			dropped, err := d.TestRun()
			if err != nil {
				t.Fatal(err)
			}
			if dropped {
				drops++
			}
		}
		return drops
	}
	if n := runN(0, 200); n != 0 {
		t.Errorf("loss 0 dropped %d of 200", n)
	}
	if n := runN(1, 200); n != 200 {
		t.Errorf("loss 1 dropped %d of 200", n)
	}
	half := runN(0.5, 2000)
	if lo, hi := WilsonInterval(uint64(half), 2000, 4); lo > 0.5 || hi < 0.5 {
		t.Errorf("loss 0.5 dropped %d of 2000", half)
	}
	c, err := d.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.SeenSkbs != 2400 || c.SeenSegs != 2400 || c.DropSkbs != uint64(200+half) || c.SeenBytes != 2400*64 {
		t.Errorf("counters %+v: want 2400 seen (64 bytes each, 1 segment), %d dropped", c, 200+half)
	}
}

// TestLabUpAndClean makes a lab, checks that the two ends reach each other
// and that the drop program attaches, then that CleanStale removes it.
func TestLabUpAndClean(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	const prefix = "pbnt-"
	if _, err := CleanStale(prefix); err != nil {
		t.Fatal(err)
	}
	l, err := Up(ctx, Config{Prefix: prefix, SenderAddr: "198.18.1.1", ReceiverAddr: "198.18.1.2", RateBit: 1e9, Overhead: 24})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := LoadDropper()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.AttachIngress(l.Receiver, l.ReceiverDev); err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := inNetns(l.Receiver, func() (err error) { ln, err = net.Listen("tcp", l.ReceiverAddr+":5300"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	if err := inNetns(l.Sender, func() error {
		c, err := net.DialTimeout("tcp", l.ReceiverAddr+":5300", 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(make([]byte, 100000))
		return err
	}); err != nil {
		t.Fatalf("TCP across the lab: %v", err)
	}
	c, err := d.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.SeenSkbs < 3 || c.DropSkbs != 0 {
		t.Errorf("after a 100 kB TCP write the program saw %+v: want >= 3 seen, 0 dropped", c)
	}
	if q, err := l.SenderQdisc(ctx); err != nil || q.Sent < 3 {
		t.Errorf("tbf stats %+v, %v: want >= 3 sent", q, err)
	}
	stale, err := CleanStale(prefix)
	if err != nil || len(stale) != 2 {
		t.Fatalf("CleanStale = %v, %v: want the lab's two namespaces", stale, err)
	}
	if _, err := os.Stat(nsDir + "/" + l.Sender); err == nil {
		t.Errorf("%s still exists after CleanStale", l.Sender)
	}
}

func TestEstimateLoss(t *testing.T) {
	t.Parallel()
	run := func(seen, drop uint64) Counters {
		return Counters{SeenSkbs: seen, SeenSegs: seen, DropSkbs: drop, DropSegs: drop}
	}
	// Three runs that agree within binomial noise: phi 1, the pooled Wilson interval.
	agree := EstimateLoss([]Counters{run(1e6, 10010), run(1e6, 9990), run(1e6, 10000), {}}, Z99, 1)
	lo, hi := WilsonInterval(30000, 3e6, Z99)
	if agree.Runs != 3 || agree.Dispersion != 1 || agree.Lo != lo || agree.Hi != hi || agree.Rate != 0.01 {
		t.Errorf("agreeing runs: %+v, want phi 1 and [%g, %g]", agree, lo, hi)
	}
	// Runs 5 sd apart: phi about 25, the interval about 5 times wider, and
	// still about the pooled rate.
	spread := EstimateLoss([]Counters{run(1e6, 10500), run(1e6, 9500), run(1e6, 10000)}, Z99, 1)
	if spread.Dispersion < 20 || spread.Dispersion > 30 {
		t.Errorf("spread runs: phi %g, want about 25", spread.Dispersion)
	}
	if w, w0 := spread.Hi-spread.Lo, hi-lo; w < 4.5*w0 || w > 5.5*w0 || spread.Lo > 0.01 || spread.Hi < 0.01 {
		t.Errorf("spread runs: [%g, %g] (width %g), want about 5 x %g around 1 %%", spread.Lo, spread.Hi, w, w0)
	}
	// A biased program is still caught: runs that agree with each other at 1.2 %.
	if b := EstimateLoss([]Counters{run(1e6, 12010), run(1e6, 11990)}, Z99, 1); b.Lo <= 0.01 {
		t.Errorf("1.2 %% in agreeing runs: %+v, want the interval above 1 %%", b)
	}
	// A known spread beyond the runs widens agreeing runs too (phi 4: twice
	// the width), and is reported as their dispersion.
	if f := EstimateLoss([]Counters{run(1e6, 10010), run(1e6, 9990), run(1e6, 10000)}, Z99, 4); f.Dispersion != 4 ||
		math.Abs((f.Hi-f.Lo)/(hi-lo)-2) > 0.01 {
		t.Errorf("minPhi 4: %+v, want phi 4 and twice [%g, %g]", f, lo, hi)
	}
}

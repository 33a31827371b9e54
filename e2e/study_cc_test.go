//go:build e2e

package e2e

import (
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStudyCC runs the cc study at the tiny scale for real (two network
// namespaces, tbf at 1 Gbit/s, the eBPF drop program, iperf3) and checks
// its mechanics from study.json: the congestion control read back from the
// socket is the one asked for, the 1 % profile's drop ratio holds 1 %
// within its 99 % interval, the clean link carries a plausible throughput
// under its 1 Gbit/s shape, and the delay profile is either measured or
// listed as n/a with the kernel's reason.
func TestStudyCC(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the cc study needs root (network namespaces, BPF)")
	}
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatal("the cc study needs iperf3: apt-get install iperf3")
	}
	r, _ := runStudy(t, "cc", 50*time.Second, nil)
	check := func(name string) (ok bool, detail string) {
		c, found := r.Check(name)
		if !found {
			t.Errorf("no check %q", name)
		}
		return c.OK, c.Detail
	}

	// The congestion control in effect is the one asked for, every variant.
	for _, v := range []string{"cubic", "bbr", "reno"} {
		if ok, d := check("congestion control in effect: " + v); !ok {
			t.Errorf("%s: %s", v, d)
		}
	}

	// 1 % loss: the pooled drop ratio's 99 % interval holds 1 %, and every
	// sample's own ratio is near it (about 100,000 packets a run: ±0.1 %).
	if ok, d := check("loss rate: loss1"); !ok {
		t.Errorf("loss rate: %s", d)
	}
	if ok, d := check("loss rate: clean"); !ok {
		t.Errorf("clean loss: %s", d)
	}
	if ok, d := check("one packet per segment"); !ok {
		t.Errorf("packets: %s", d)
	}
	n := map[string]int{}
	bestClean := 0.0
	for _, s := range r.Samples {
		if s.Error != "" {
			t.Errorf("%s/%s failed: %s", s.Group, s.Variant, s.Error)
			continue
		}
		n[s.Group]++
		drop, mbps := s.Values["drop_pct"], s.Values["throughput_mbps"]
		switch s.Group {
		case "loss1":
			if math.Abs(drop-1) > 0.35 {
				t.Errorf("loss1/%s dropped %.3f %%, want 1 %% ± 0.35", s.Variant, drop)
			}
			if s.Values["retransmits"] <= 0 {
				t.Errorf("loss1/%s: no retransmits under 1 %% loss", s.Variant)
			}
		case "clean":
			if drop != 0 {
				t.Errorf("clean/%s dropped %.3f %%", s.Variant, drop)
			}
			// Under the 1 Gbit/s shape (941.5 Mbit/s of payload): never above
			// it. A run on a host whose 2 CPUs are taken by others was seen at
			// 214 Mbit/s (load average 12), so one sample may fall to 100 and
			// the best must reach 300.
			if mbps > 1000 || mbps < 100 {
				t.Errorf("clean/%s: %.1f Mbit/s, want 100-1000", s.Variant, mbps)
			}
			bestClean = math.Max(bestClean, mbps)
		}
	}
	if bestClean < 300 {
		t.Errorf("best clean sample %.1f Mbit/s, want >= 300", bestClean)
	}
	if n["clean"] < 3 || n["loss1"] < 3 {
		t.Errorf("samples per group %v: want >= 3 in clean and loss1", n)
	}

	// The delay profile: measured, or n/a with the kernel's reason.
	if n["delay50-loss2"] == 0 {
		if reason := r.NAReason("delay50-loss2", ""); !strings.Contains(reason, "netem") {
			t.Errorf("delay profile neither measured nor n/a with a reason naming netem: %q", reason)
		}
	}
}

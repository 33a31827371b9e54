//go:build e2e

package e2e

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStudyNetstack runs the tiny netstack study and checks, from its
// record, that the three modes really differ (the numbers in the checks,
// not only their verdicts), that every sample had no error and was sent at
// the asked rate, that the latencies are ordered, and that nothing is left
// running.
func TestStudyNetstack(t *testing.T) {
	r, took := runStudy(t, "netstack", 55*time.Second, nil)
	if took > 40*time.Second {
		t.Errorf("the tiny study took %s, want under 40 s", took.Round(time.Second))
	}
	if r.Baseline != "bare" {
		t.Errorf("baseline %q, want bare", r.Baseline)
	}
	checks := studyChecks(t, r)
	mustHaveChecks(t, checks, "same nginx build", "bare: host process in the host netns", "hostnet: container cgroup, host netns",
		"bridge: container cgroup, own netns", "pinned, same workers", "no CPU quota", "bridge traffic crossed the bridge", "0 errors", "achieved rate")

	// The namespaces and cgroups, from the numbers the checks recorded.
	nsRE := regexp.MustCompile(`netns (net:\[\d+\]), host netns (net:\[\d+\]); cgroup (\S+)`)
	mode := func(check string) (ns, host, cg string) {
		m := nsRE.FindStringSubmatch(checks[check])
		if m == nil {
			t.Fatalf("check %q: no netns and cgroup in %q", check, checks[check])
		}
		return m[1], m[2], m[3]
	}
	if ns, host, cg := mode("bare: host process in the host netns"); ns != host || strings.Contains(cg, "docker") {
		t.Errorf("bare nginx: netns %s (host %s), cgroup %s: want the host's netns and no container cgroup", ns, host, cg)
	}
	if ns, host, cg := mode("hostnet: container cgroup, host netns"); ns != host || !strings.Contains(cg, "docker") {
		t.Errorf("hostnet nginx: netns %s (host %s), cgroup %s: want the host's netns in a docker cgroup", ns, host, cg)
	}
	if ns, host, cg := mode("bridge: container cgroup, own netns"); ns == host || !strings.Contains(cg, "docker") {
		t.Errorf("bridge nginx: netns %s (host %s), cgroup %s: want its own netns in a docker cgroup", ns, host, cg)
	}
	m := regexp.MustCompile(`received at least ([0-9.]+) packets per request over (\d+) samples`).FindStringSubmatch(checks["bridge traffic crossed the bridge"])
	if m == nil {
		t.Fatalf("bridge check without its numbers: %q", checks["bridge traffic crossed the bridge"])
	}
	if per, _ := strconv.ParseFloat(m[1], 64); per < 0.9 || m[2] == "0" {
		t.Errorf("the bridge container's eth0 received %s packets per request over %s samples: the traffic did not cross the bridge", m[1], m[2])
	}

	// The samples: every mode measured each repeat, no errors, the asked
	// rate sent, latencies > 0 and ordered.
	per := map[string]int{}
	for _, s := range r.Samples {
		per[s.Variant]++
		v := s.Values
		if s.Error != "" {
			t.Errorf("%s repeat %d failed: %s", s.Variant, s.Repeat, s.Error)
			continue
		}
		if v["error_ratio"] != 0 {
			t.Errorf("%s repeat %d: error ratio %g", s.Variant, s.Repeat, v["error_ratio"])
		}
		// The study's own rule is its "achieved rate" check; this test's
		// is looser (5 %), so that a sample far off the asked rate fails
		// even if that check were wrong.
		const tol = 0.05
		if asked := v["offered_rps"]; asked <= 0 || math.Abs(v["sent_rps"]/asked-1) > tol {
			t.Errorf("%s repeat %d: sent %.1f req/s, asked %.0f: want within %.3g %%", s.Variant, s.Repeat, v["sent_rps"], asked, tol*100)
		}
		if v["rps"] < 0.5*v["offered_rps"] {
			t.Errorf("%s repeat %d: %.0f req/s completed inside the window for %.0f asked", s.Variant, s.Repeat, v["rps"], v["offered_rps"])
		}
		for _, k := range []string{"mean_us", "p50_us", "p99_us", "p999_us", "nginx_cpu_us_per_req"} {
			if !(v[k] > 0) {
				t.Errorf("%s repeat %d: %s = %g, want > 0", s.Variant, s.Repeat, k, v[k])
			}
		}
		if !(v["p50_us"] <= v["p99_us"] && v["p99_us"] <= v["p999_us"]) {
			t.Errorf("%s repeat %d: p50 %g, p99 %g, p99.9 %g µs are not ordered", s.Variant, s.Repeat, v["p50_us"], v["p99_us"], v["p999_us"])
		}
	}
	for _, name := range []string{"bare", "hostnet", "bridge"} {
		if per[name] < 2 {
			t.Errorf("%s has %d samples, want the tiny scale's 2", name, per[name])
		}
	}

	// Nothing left behind: no host nginx of the study (its containers
	// runStudy checked by the study's label).
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "proxybench-study-netstack") {
			t.Errorf("a host nginx of the study is left running: %s %q", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}

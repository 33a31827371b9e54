//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cgroup"
)

// The plan the study must have applied: each case's containers and quotas.
var scaleoutPlan = map[string]map[string]float64{
	"A": {"pb-scaleout-a-nginx": 1.5},
	"B": {"pb-scaleout-b-haproxy": 0.5, "pb-scaleout-b-nginx": 1.0},
	"C": {"pb-scaleout-c-haproxy": 0.5, "pb-scaleout-c-nginx1": 0.5, "pb-scaleout-c-nginx2": 0.5},
}

// TestStudyScaleout runs the tiny scaleout study for real. While it runs,
// the test reads every container's quota itself (docker inspect NanoCpus
// and the cgroup's CFS quota / period) and fetches the body through each
// case; afterwards it reads study.json: the study's own quota checks carry
// the same numbers, each case totals 1.5 CPU, the body is 76800 bytes, both
// of C's nginx served, and every case has samples without errors and with
// p50 <= p99. Finally no study container is left behind.
func TestStudyScaleout(t *testing.T) {
	// While the samples run (at the first): the quotas from the engine
	// and the kernel, and the body through each case's front.
	sampled := false
	r, took := runStudy(t, "scaleout", 60*time.Second, func(line string) {
		if sampled || !strings.Contains(line, "scaleout sample") {
			return
		}
		sampled = true
		for c, ctrs := range scaleoutPlan {
			total := 0.0
			for name, want := range ctrs {
				out := docker(t, "inspect", "--format", "{{.State.Pid}} {{.HostConfig.NanoCpus}}", name)
				var pid int
				var nano int64
				if _, err := fmt.Sscan(out, &pid, &nano); err != nil {
					t.Fatalf("docker inspect %s: %q: %v", name, out, err)
				}
				if got := float64(nano) / 1e9; got != want {
					t.Errorf("%s: docker NanoCpus %d = %g CPU, want %g", name, nano, got, want)
				}
				g, err := cgroup.Of(pid)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				q, limited, err := g.Quota()
				if err != nil || !limited || math.Abs(q-want) > 1e-9 {
					t.Errorf("%s: cgroup quota %g (limited %t, %v), want %g", name, q, limited, err, want)
				}
				total += q
			}
			if math.Abs(total-1.5) > 1e-9 {
				t.Errorf("case %s: cgroup quotas total %g, want 1.5", c, total)
			}
		}
		for c, port := range map[string]int{"A": 18901, "B": 18911, "C": 18921} {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/body.bin", port))
			if err != nil {
				t.Errorf("case %s: %v", c, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || len(b) != 76800 {
				t.Errorf("case %s: status %d, %d body bytes, want 200 and 76800", c, resp.StatusCode, len(b))
			}
		}
	})
	if !sampled {
		t.Error("the study ended before its first sample")
	}
	if took > 45*time.Second {
		t.Errorf("the tiny study took %v, over its 45 s budget", took)
	}

	if r.Status != "done" || r.Baseline != "A" || len(r.Variants) != 3 || len(r.Groups) == 0 {
		t.Fatalf("status %q (%s), baseline %q, %d variants, %d groups: want done, A, 3, some", r.Status, r.Error, r.Baseline, len(r.Variants), len(r.Groups))
	}
	checks := studyChecks(t, r)
	// The study's own read-back, number by number.
	cfs := regexp.MustCompile(`(pb-scaleout-[a-z0-9-]+): plan [0-9.]+; docker NanoCpus (\d+) \([0-9.]+\); cgroup \S+ cfs_quota_us (\d+) / cfs_period_us (\d+)`)
	for c, ctrs := range scaleoutPlan {
		d, ok := checks["quota "+c]
		if !ok {
			t.Errorf("no check %q", "quota "+c)
			continue
		}
		got := map[string]float64{}
		total := 0.0
		for _, m := range cfs.FindAllStringSubmatch(d, -1) {
			nano, _ := strconv.ParseFloat(m[2], 64)
			q, _ := strconv.ParseFloat(m[3], 64)
			p, _ := strconv.ParseFloat(m[4], 64)
			if nano/1e9 != q/p {
				t.Errorf("%s: docker %g CPU, cgroup %g", m[1], nano/1e9, q/p)
			}
			got[m[1]] = q / p
			total += q / p
		}
		if fmt.Sprint(got) != fmt.Sprint(ctrs) || math.Abs(total-1.5) > 1e-9 {
			t.Errorf("case %s: cgroup quotas %v (total %g), want %v (total 1.5); detail: %s", c, got, total, ctrs, d)
		}
	}
	body := regexp.MustCompile(`status 200, Content-Length 76800, 76800 body bytes`)
	for _, c := range []string{"A", "B", "C"} {
		if !body.MatchString(checks["body "+c]) {
			t.Errorf("case %s: body check %q, want 200 with 76800 bytes", c, checks["body "+c])
		}
		if !strings.Contains(checks["body bytes per response "+c], ": 76800.0 per response") {
			t.Errorf("case %s: %q, want 76800 bytes per response", c, checks["body bytes per response "+c])
		}
	}
	bal := regexp.MustCompile(`pb-scaleout-c-nginx1 (\d+), pb-scaleout-c-nginx2 (\d+)`).FindStringSubmatch(checks["C balance"])
	if bal == nil {
		t.Errorf("C balance check %q names no counts", checks["C balance"])
	} else {
		n1, _ := strconv.Atoi(bal[1])
		n2, _ := strconv.Atoi(bal[2])
		if n1 <= 0 || n2 <= 0 || float64(min(n1, n2)) < 0.9*float64(max(n1, n2)) {
			t.Errorf("C's nginx served %d and %d requests: want both and roughly equal", n1, n2)
		}
	}
	per := map[string]int{}
	for _, s := range r.Samples {
		if s.Error != "" {
			t.Errorf("sample %s/%s failed: %s", s.Group, s.Variant, s.Error)
			continue
		}
		v := s.Values
		if v["error_ratio"] != 0 || v["rps"] <= 0 || v["p50_us"] <= 0 || v["p50_us"] > v["p99_us"] {
			t.Errorf("sample %s/%s: error_ratio %g, rps %g, p50 %g µs, p99 %g µs: want 0 errors and 0 < p50 <= p99",
				s.Group, s.Variant, v["error_ratio"], v["rps"], v["p50_us"], v["p99_us"])
		}
		per[s.Variant]++
	}
	for _, c := range []string{"A", "B", "C"} {
		if per[c] < 2*len(r.Groups) {
			t.Errorf("case %s: %d good samples, want %d (2 repeats per rate)", c, per[c], 2*len(r.Groups))
		}
	}
}

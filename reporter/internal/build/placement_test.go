package build

import (
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func TestPlacementEnv(t *testing.T) {
	t.Parallel()
	placed := &manifest.Placement{Mode: "auto", Reason: "2 CPUs", CPUs: 2, Online: "0-1",
		Planned:   manifest.RoleCPUs{Loadgen: "0", Proxy: "1", Origins: "0", Observability: "0"},
		ProxyCPUs: 1, Workers: 1, OriginWorkers: 1, Loadgen: manifest.LoadgenAffinity{CPUs: "0", Threads: 7, GOMAXPROCS: 1},
		Containers: []manifest.ContainerCPUs{
			{Name: "proxybench-nginx", Role: "proxy", Cpuset: "1", CPUs: 1},
			{Name: "proxybench-caddy", Role: "proxy", Cpuset: "1", CPUs: 0.7},
			{Name: "proxybench-origin-fast", Role: "origins", Cpuset: "0-1"},
			{Name: "proxybench-prometheus", Role: "observability", Cpuset: "0"},
		}}
	offPlan := *placed
	offPlan.Loadgen.CPUs = "0-1"
	offPlan.Containers = nil
	for _, tc := range []struct {
		name       string
		man        *manifest.Manifest
		placed     bool
		asPlanned  []bool
		mismatches []string
		isolation  string // in the statement
	}{
		{name: "no manifest", isolation: "With isolation on (the default)"},
		{name: "no placement", man: &manifest.Manifest{Plan: []byte(`{"isolate": false}`)}, isolation: "Isolation was off"},
		{name: "placed", man: &manifest.Manifest{Plan: []byte(`{"isolate": true}`), Placement: placed}, placed: true,
			asPlanned: []bool{true, false, false, true},
			mismatches: []string{"proxybench-caddy has a CPU quota of 0.7, the plan gives every proxy 1",
				"proxybench-origin-fast (origins) runs on CPUs 0-1, the plan gives origins CPUs 0"},
			isolation: "share (CPU 0 in this placement)"},
		{name: "loadgen off its CPUs", man: &manifest.Manifest{Placement: &offPlan}, placed: true,
			mismatches: []string{"the loadgen ran on CPUs 0-1, the plan gives it 0"}, isolation: "With isolation on (the default)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, iso := placementEnv(tc.man)
			if (p != nil) != tc.placed {
				t.Fatalf("placement %+v", p)
			}
			if !strings.Contains(strings.Join(append(iso.Isolates, iso.Not...), "\n"), tc.isolation) {
				t.Errorf("isolation %+v lacks %q", iso, tc.isolation)
			}
			if p == nil {
				return
			}
			if len(p.Roles) != 4 || p.Roles[1].Role != "proxy" || p.Roles[1].CPUs != "1" {
				t.Errorf("roles %+v", p.Roles)
			}
			for i, want := range tc.asPlanned {
				if p.Containers[i].AsPlanned != want {
					t.Errorf("%s as planned %v, want %v", p.Containers[i].Name, p.Containers[i].AsPlanned, want)
				}
			}
			if strings.Join(p.Mismatches, "|") != strings.Join(tc.mismatches, "|") {
				t.Errorf("mismatches\n%q\nwant\n%q", p.Mismatches, tc.mismatches)
			}
		})
	}
}

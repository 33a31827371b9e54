package render

import (
	"bytes"
	"strings"
	"testing"

	"proxybench/internal/manifest"
	"proxybench/reporter/internal/report"
)

// TestPlacementSection renders the environment of a run placed on 2 CPUs
// with one proxy found off its plan, and of a run with no placement.
func TestPlacementSection(t *testing.T) {
	t.Parallel()
	on := true
	auto := &report.Placement{Mode: "auto", Reason: "2 CPUs: the proxy on one, everything else on the other", CPUs: 2, Online: "0-1",
		Roles:     []report.PlacedRole{{Role: "loadgen", CPUs: "0"}, {Role: "proxy", CPUs: "1"}, {Role: "origins", CPUs: "0"}, {Role: "observability", CPUs: "0"}},
		ProxyCPUs: 1, Workers: 1, Loadgen: manifest.LoadgenAffinity{CPUs: "0", Threads: 8, GOMAXPROCS: 1},
		Containers: []report.PlacedContainer{
			{ContainerCPUs: manifest.ContainerCPUs{Name: "proxybench-nginx", Role: "proxy", Cpuset: "1", CPUs: 1}, AsPlanned: true},
			{ContainerCPUs: manifest.ContainerCPUs{Name: "proxybench-caddy", Role: "proxy", Cpuset: "1", CPUs: 0.7}},
			{ContainerCPUs: manifest.ContainerCPUs{Name: "proxybench-origin-fast", Role: "origins", Cpuset: "0"}, AsPlanned: true},
		},
		Mismatches: []string{"proxybench-caddy has a CPU quota of 0.7, the plan gives every proxy 1"}}
	swarm := &report.Placement{Mode: "none", Reason: "no cpusets", CPUs: 2, Online: "0-1", ProxyCPUs: 2, Workers: 2,
		Containers: []report.PlacedContainer{
			{ContainerCPUs: manifest.ContainerCPUs{Name: "proxybench_nginx.1.abc", Role: "proxy", CPUs: 2, Node: "node-b"}, AsPlanned: true},
			{ContainerCPUs: manifest.ContainerCPUs{Name: "proxybench_origin-fast.1.def", Role: "origins", Node: "node-a"}, AsPlanned: true},
		}}
	for _, tc := range []struct {
		name      string
		env       report.Environment
		has, lack []string
	}{
		{name: "auto", env: report.Environment{Placement: auto, Isolation: report.IsolationStatement(&on, auto)}, has: []string{
			"**CPU placement: auto (2 CPUs: the proxy on one, everything else on the other)**",
			"| loadgen | 0 | 0 (8 threads, GOMAXPROCS 1) |",
			"| proxy | 1 (each proxy: CPU quota 1, workers 1) | 1 of 2 containers differ (below) |",
			"| origins | 0 | as planned (1 of 1 containers) |",
			"| observability | 0 | no container |",
			"Not as planned: proxybench-caddy has a CPU quota of 0.7, the plan gives every proxy 1.",
			"| proxybench-caddy | proxy | 1 | 0.7 | ✗ |",
			"| proxybench-origin-fast | origins | 0 | none | ✓ |",
			"| does not isolate | The CPUs the loadgen, the origins and observability share (CPU 0 in this placement)",
			"| isolates | While a proxy is measured, every other proxy is frozen",
		}},
		{name: "swarm", env: report.Environment{Placement: swarm, Isolation: report.IsolationStatement(&on, swarm)}, has: []string{
			"| container | role | CPUs | CPU quota | as planned | Swarm node |",
			"| proxybench_nginx.1.abc | proxy | all | 2 | ✓ | node-b |",
			"| proxybench_origin-fast.1.def | origins | all | none | ✓ | node-a |",
			"tasks of a Docker Swarm stack on 2 node(s)",
		}},
		{name: "no placement", env: report.Environment{Isolation: report.IsolationStatement(nil, nil)}, has: []string{
			"| placement | not recorded (the manifest has none) |",
			"| isolates | With isolation on (the default), every other proxy is frozen",
		}, lack: []string{"Containers at the run's start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var md bytes.Buffer
			if err := Markdown(&md, Doc{Sections: []Section{envSection(&report.Report{Environment: tc.env})}}); err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.has {
				if !strings.Contains(md.String(), h) {
					t.Errorf("environment lacks %q:\n%s", h, md.String())
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(md.String(), l) {
					t.Errorf("environment has %q", l)
				}
			}
		})
	}
}

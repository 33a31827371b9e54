package render

import (
	"cmp"
	"fmt"
	"strings"

	"proxybench/internal/placement"
	"proxybench/reporter/internal/report"
)

// placementTables show the run's CPU placement: each role's planned CPUs
// beside the measured ones, then every container as the engine reported
// it at the run's start.
func placementTables(p *report.Placement) []Table {
	if p == nil {
		return []Table{{Caption: "CPU placement", Header: []string{"what", "value"},
			Rows:  [][]Cell{{txt("placement"), txt("not recorded (the manifest has none)")}},
			Notes: []string{"Without a recorded placement the proxies, the origins, observability and the loadgen may all have shared every CPU."}}}
	}
	roles := Table{Caption: "CPU placement: " + p.Mode + " (" + p.Reason + ")", Header: []string{"role", "planned CPUs", "measured at the start"}}
	for _, r := range p.Roles {
		planned := cpus(r.CPUs)
		var measured string
		switch r.Role {
		case placement.RoleLoadgen:
			measured = fmt.Sprintf("%s (%d threads, GOMAXPROCS %d)", cpus(p.Loadgen.CPUs), p.Loadgen.Threads, p.Loadgen.GOMAXPROCS)
			if p.Loadgen.Error != "" {
				measured = "unknown: " + p.Loadgen.Error
			}
		case placement.RoleProxy:
			planned += fmt.Sprintf(" (each proxy: CPU quota %g, workers %d)", p.ProxyCPUs, p.Workers)
			fallthrough
		default:
			measured = roleMeasured(p, r.Role)
		}
		roles.Rows = append(roles.Rows, []Cell{txt(r.Role), txt(planned), txt(measured)})
	}
	roles.Notes = []string{fmt.Sprintf("Online CPUs: %s. \"all\" is no cpuset: every online CPU. Given CPUs, the loadgen pins its own threads (sched_setaffinity) and sets GOMAXPROCS to their number; compose gives each container its cpuset and the proxies their quota when it creates them (make up PLACEMENT=...), and the run refuses to start when they differ from its plan.", p.Online)}
	if len(p.Mismatches) > 0 {
		roles.Notes = append(roles.Notes, "Not as planned: "+strings.Join(p.Mismatches, "; ")+".")
	}
	ctrs := Table{Caption: "Containers at the run's start (docker inspect)", Header: []string{"container", "role", "CPUs", "CPU quota", "as planned"},
		Right: []bool{false, false, false, true, false}}
	nodes := map[string]bool{}
	for _, c := range p.Containers {
		if c.Node != "" {
			nodes[c.Node] = true
		}
	}
	if len(nodes) > 0 {
		// A Swarm stack: where each task runs is part of the placement.
		ctrs.Header = append(ctrs.Header, "Swarm node")
		ctrs.Right = append(ctrs.Right, false)
		ctrs.Notes = append(ctrs.Notes, fmt.Sprintf("The containers are the tasks of a Docker Swarm stack on %d node(s), placed by their node labels (docs/swarm.md). Swarm sets no cpusets: on a node, every task may run on every CPU.", len(nodes)))
	}
	for _, c := range p.Containers {
		quota := "none"
		if c.CPUs > 0 {
			quota = fmt.Sprintf("%g", c.CPUs)
		}
		ok := Cell{Text: "✓", Class: "valid"}
		if !c.AsPlanned {
			ok = Cell{Text: "✗", Class: "invalid"}
		}
		row := []Cell{txt(c.Name), txt(c.Role), txt(cpus(c.Cpuset)), txt(quota), ok}
		if len(nodes) > 0 {
			row = append(row, txt(cmp.Or(c.Node, "not a task")))
		}
		ctrs.Rows = append(ctrs.Rows, row)
	}
	if len(p.Containers) == 0 {
		ctrs.Notes = []string{"No container was inspected: the run had no Docker."}
	}
	return []Table{roles, ctrs}
}

// roleMeasured sums up the measured containers of a role.
func roleMeasured(p *report.Placement, role string) string {
	n, ok := 0, 0
	for _, c := range p.Containers {
		if c.Role == role {
			n++
			if c.AsPlanned {
				ok++
			}
		}
	}
	switch {
	case n == 0:
		return "no container"
	case ok == n:
		return fmt.Sprintf("as planned (%d of %d containers)", ok, n)
	}
	return fmt.Sprintf("%d of %d containers differ (below)", n-ok, n)
}

// cpus is a CPU list as the tables show it (placement.ListOrAll).
func cpus(list string) string {
	cs, err := placement.ParseCPUSet(list)
	if err != nil {
		return list
	}
	return placement.ListOrAll(cs)
}

// isolationTable states what pausing the other proxies isolates and what
// it does not.
func isolationTable(s report.Isolation) Table {
	t := Table{Caption: "What isolation does and does not isolate", Header: []string{"", "what"}}
	for _, x := range s.Isolates {
		t.Rows = append(t.Rows, []Cell{{Text: "isolates", Class: "valid"}, txt(x)})
	}
	for _, x := range s.Not {
		t.Rows = append(t.Rows, []Cell{{Text: "does not isolate", Class: "suspect"}, txt(x)})
	}
	return t
}

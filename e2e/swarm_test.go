//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"proxybench/internal/manifest"
)

// swarmCell is what TestSwarmThreeLoadgens reads of a report.json cell:
// a workersCell and the proxy's cAdvisor numbers.
type swarmCell struct {
	workersCell
	Proxy struct {
		CPUPeak *float64 `json:"cpu_peak_cores"`
		MemPeak *float64 `json:"mem_working_set_peak_bytes"`
	} `json:"proxy_resources"`
}

// swarmEnv is what `scripts/swarm.sh env` says of the running swarm stack;
// the test is skipped unless PROXYBENCH_SWARM=1 (scripts/e2e.sh sets it
// once `scripts/swarm.sh up` has brought the stack up).
func swarmEnv(t *testing.T) map[string]string {
	t.Helper()
	if os.Getenv("PROXYBENCH_SWARM") != "1" {
		t.Skip("PROXYBENCH_SWARM=1 and a swarm stack (scripts/swarm.sh up) are needed; scripts/e2e.sh runs this test on one")
	}
	out, err := exec.Command("../scripts/swarm.sh", "env").Output()
	if err != nil {
		t.Fatalf("swarm.sh env: %v", err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	if st, err := exec.Command("../scripts/swarm.sh", "status").CombinedOutput(); err != nil {
		t.Fatalf("the swarm stack is not up (scripts/swarm.sh status): %v\n%s", err, st)
	}
	return env
}

// TestSwarmThreeLoadgens runs `make bench DIST=swarm`'s loadgen in node
// 1's namespace against the Swarm stack, with 3 workers launched as Swarm
// services on the load nodes (-launch swarm): nginx → fast, then nginx →
// go, and kills worker 1 with SIGKILL halfway through the second cell. The first cell, rebuilt from the swarm's own
// Prometheus, agrees with the manifest as on the compose stack
// (checkMergedCell: exact counts, quantiles within the native-histogram
// bound, the workers summing to the cell); the second fails naming worker
// 1, and workers 0 and 2 keep their counts, which are the cell's. The
// proxy's CPU comes from the exporter's container_* series of the swarm's
// cgroups, and every container of the manifest's placement names its
// Swarm node.
func TestSwarmThreeLoadgens(t *testing.T) {
	env := swarmEnv(t)
	results := t.TempDir()
	run := "swarm3-" + time.Now().UTC().Format("20060102T150405Z")
	targets := env["SWARM_TARGETS"] // the swarm's own, apart from the compose stack's
	cmd := exec.Command("../scripts/swarm.sh", "exec", bin(t, "loadgen"), "run", "-run", run, "-results", results, "-linger", "5s", "-tier", "3s",
		"-proxies", "nginx", "-origins", "fast,go", "-concurrency", "12", "-loadgens", "3", "-dist", "swarm", "-launch", "swarm", "-placement", "none",
		"-metrics-addr", env["SWARM_METRICS_HOST"]+":9500", "-prometheus-targets", targets)
	var out bytes.Buffer
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = &out
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			out.WriteString(l + "\n")
			if strings.Contains(l, `msg="cell start" n=2/2`) {
				go func() {
					time.Sleep(1500 * time.Millisecond)
					killed <- killWorker(cmd.Process.Pid, 1)
				}()
			}
		}
	}()
	err = cmd.Wait()
	took := time.Since(began)
	var victim string
	select {
	case victim = <-killed:
	case <-time.After(5 * time.Second):
	}
	if code := exitCode(err); code != 3 { // 3: a cell failed
		t.Fatalf("loadgen: exit %d, want 3 (a cell failed)\n%s", code, out.String())
	}
	if victim == "" || strings.HasPrefix(victim, "no ") {
		t.Fatalf("worker 1 was not killed mid-cell (%s):\n%s", victim, out.String())
	}
	t.Logf("killed %s", victim)
	// The workers ran as Swarm services: the killed one's process was in
	// a container of the swarm's daemons (their cgroups), and no worker
	// service is left.
	if !strings.Contains(victim, "/proxybench-swarm/") {
		t.Errorf("worker 1 (%s) was not a task of the swarm: want its cgroup under /proxybench-swarm/", victim)
	}
	if left, err := exec.Command("docker", "--host", env["SWARM_DOCKER_HOST"], "service", "ls", "-q", "--filter", "label=proxybench.loadgen-worker").Output(); err != nil || len(bytes.TrimSpace(left)) > 0 {
		t.Errorf("worker services left after the run: %q (%v)", left, err)
	}
	load, err := exec.Command("docker", "--host", env["SWARM_DOCKER_HOST"], "node", "ls", "--filter", "node.label=proxybench.role.load=true", "--format", "{{.Hostname}}").Output()
	if err != nil {
		t.Fatalf("the load nodes: %v", err)
	}
	loadNodes := strings.Fields(string(load))
	reportCellsFrom(t, env["SWARM_PROM"], results, run)
	man, err := manifest.Read(filepath.Join(results, run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := readCells[swarmCell](t, results, run)
	if len(got) != 2 || len(man.Cells) != 2 {
		t.Fatalf("%d report cells, %d manifest cells; want 2\n%s", len(got), len(man.Cells), out.String())
	}
	if man.Cells[0].Status != "ok" {
		t.Fatalf("cell %s: %s %s", man.Cells[0].ID, man.Cells[0].Status, man.Cells[0].Reason)
	}
	checkMergedCell(t, got[0].workersCell, man.Cells[0], took)
	checkUnion(t, man.Cells[0])
	for _, w := range man.Cells[0].Workers {
		if !slices.Contains(loadNodes, w.Host) {
			t.Errorf("worker %d ran on %q, not on a load node %v", w.Index, w.Host, loadNodes)
		}
	}
	if r := got[0].Proxy; r.CPUPeak == nil || *r.CPUPeak <= 0 || r.MemPeak == nil || *r.MemPeak <= 0 {
		t.Errorf("cell %s: proxy CPU peak %v, memory peak %v: the exporter's container_* series of the swarm's containers are missing", got[0].ID, r.CPUPeak, r.MemPeak)
	}

	// The killed worker fails the cell, naming it; the others' data stay.
	m := man.Cells[1]
	if m.Status != "failed" || !strings.Contains(m.Reason, "loadgen worker 1") || !strings.Contains(m.Reason, "died mid-cell") {
		t.Errorf("cell %s after worker 1 was killed: status %q, reason %q; want failed, naming worker 1", m.ID, m.Status, m.Reason)
	}
	var sum int64
	for _, w := range m.Workers {
		switch {
		case w.Index == 1 && w.Status == manifest.WorkerOK:
			t.Errorf("the killed worker 1 is ok: %+v", w)
		case w.Index != 1 && (w.Status != manifest.WorkerOK || w.Requests == 0):
			t.Errorf("worker %d lost its data: %+v", w.Index, w)
		case w.Index != 1:
			sum += w.Requests
		}
	}
	if len(m.Workers) != 3 || sum == 0 || sum != m.Requests {
		t.Errorf("cell %s: %d workers, workers 0 and 2 count %d requests, the cell %d: want them equal", m.ID, len(m.Workers), sum, m.Requests)
	}

	// Where each container ran.
	if man.Placement == nil || len(man.Placement.Containers) == 0 {
		t.Fatal("no placement recorded")
	}
	nodeOf := map[string]string{} // service -> node
	for _, c := range man.Placement.Containers {
		if c.Node == "" {
			t.Errorf("container %s names no Swarm node", c.Name)
		}
		nodeOf[c.Service] = c.Node
	}
	// On several nodes (SWARM_NODES=2 or 3) the proxies run on a node of
	// their own, away from node 1's loadgen and Prometheus; the cells above
	// then crossed the LAN to the proxy (published on its node only) and
	// the overlay to the origin.
	if n, _ := strconv.Atoi(env["SWARM_NODES"]); n > 1 {
		var hosts []string
		for _, w := range man.Cells[0].Workers {
			hosts = append(hosts, w.Host)
		}
		t.Logf("%d nodes: nginx on %s, origin-fast on %s, prometheus on %s, the workers on %v", n, nodeOf["nginx"], nodeOf["origin-fast"], nodeOf["prometheus"], hosts)
		if nodeOf["nginx"] == "" || nodeOf["nginx"] == nodeOf["prometheus"] {
			t.Errorf("nginx ran on node %q, the node of the loadgen and Prometheus %q: want a node of its own", nodeOf["nginx"], nodeOf["prometheus"])
		}
	}
}

// killWorker SIGKILLs the loadgen worker of index i, a child of parent or
// (launched as a Swarm service) any `worker` process of the host, and says
// which pid it was and its cgroup.
func killWorker(parent, i int) string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		cl, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		args := strings.Split(string(cl), "\x00")
		if len(f) < 2 || f[1] != strconv.Itoa(parent) && (len(args) < 2 || args[1] != "worker") {
			continue
		}
		for k := 0; k+1 < len(args); k++ {
			if args[k] == "-index" && args[k+1] == strconv.Itoa(i) {
				pid, _ := strconv.Atoi(filepath.Base(d))
				cg, _ := os.ReadFile(filepath.Join(d, "cgroup"))
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					return "no kill: " + err.Error()
				}
				return "worker " + strconv.Itoa(i) + " pid " + strconv.Itoa(pid) + " cgroup " + strings.TrimSpace(strings.SplitN(string(cg), "\n", 2)[0])
			}
		}
	}
	return "no worker " + strconv.Itoa(i) + " under pid " + strconv.Itoa(parent)
}

// checkUnion decodes each worker's HdrHistogram from the manifest and
// merges them anew: the union's count, p50, p99 and p99.9 are the cell's
// exactly.
func checkUnion(t *testing.T, m manifest.Cell) {
	t.Helper()
	var union *hdrhistogram.Histogram
	for _, w := range m.Workers {
		h, err := hdrhistogram.Decode([]byte(w.Histogram))
		if err != nil {
			t.Fatalf("cell %s worker %d: its histogram does not decode: %v", m.ID, w.Index, err)
		}
		if union == nil {
			union = h
		} else {
			union.Merge(h)
		}
	}
	if union == nil {
		t.Fatalf("cell %s: no worker histograms", m.ID)
	}
	if union.TotalCount() != m.Latency.Count || m.Latency.Count == 0 {
		t.Errorf("cell %s: the union of the workers' histograms holds %d latencies, the cell's %d", m.ID, union.TotalCount(), m.Latency.Count)
	}
	us := func(s float64) int64 { return int64(math.Round(s * 1e6)) }
	for _, q := range []struct {
		name string
		q    float64
		cell float64
	}{{"p50", 50, m.Latency.P50}, {"p99", 99, m.Latency.P99}, {"p99.9", 99.9, m.Latency.P999}} {
		if u := union.ValueAtQuantile(q.q); union.ValueAtQuantile(q.q) != us(q.cell) {
			t.Errorf("cell %s %s: the union of the workers' histograms gives %d µs, the cell %d µs", m.ID, q.name, u, us(q.cell))
		}
	}
}

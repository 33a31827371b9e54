//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/placement"
)

// placementManifest is what this test reads of manifest.json's placement.
type placementManifest struct {
	Placement *struct {
		Mode    string `json:"mode"`
		Online  string `json:"online"`
		Planned struct {
			Loadgen       string `json:"loadgen"`
			Proxy         string `json:"proxy"`
			Origins       string `json:"origins"`
			Observability string `json:"observability"`
		} `json:"planned"`
		ProxyCPUs float64 `json:"proxy_cpus"`
		Workers   int     `json:"workers"`
		Loadgen   struct {
			CPUs       string `json:"cpus"`
			GOMAXPROCS int    `json:"gomaxprocs"`
		} `json:"loadgen"`
		Containers []struct {
			Name   string  `json:"name"`
			Role   string  `json:"role"`
			Cpuset string  `json:"cpuset"`
			CPUs   float64 `json:"cpus"`
		} `json:"containers"`
	} `json:"placement"`
}

// TestPlacementApplied runs a short cell and, while it runs, reads the
// placement from the kernel and the engine, never from the loadgen: every
// thread's Cpus_allowed_list of the loadgen process, and every stack
// container's cpuset and quota (docker inspect). Both must be what the
// manifest records and what `loadgen placement` plans for this host (the
// plan make up applied), every proxy must share one cpuset, quota and
// worker count (parity), and the proxies must run that many workers.
func TestPlacementApplied(t *testing.T) {
	want := map[string]string{}
	out, err := execOut(bin(t, "loadgen"), "placement")
	if err != nil {
		t.Fatalf("loadgen placement: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			want[k] = v
		}
	}

	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd, lines := startRun(t, ctx, results, "placement", "-tier", "2s", "-linger", "0s", "-proxies", "nginx", "-origins", "fast",
		"-concurrency", "10", "-isolate=false")
	waitLine(t, lines, "cell start", 45*time.Second)
	threads := threadCPUs(t, cmd.Process.Pid)
	ctrs := containerCPUs(t)
	workers := proxyWorkers(t)
	go func() {
		for range lines {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("loadgen run: %v", err)
	}

	b, err := os.ReadFile(filepath.Join(results, "placement", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m placementManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	p := m.Placement
	if p == nil {
		t.Fatal("manifest has no placement")
	}
	// The run's plan is the one make up applied.
	plannedFor := map[string]string{"proxy": p.Planned.Proxy, "origins": p.Planned.Origins, "observability": p.Planned.Observability}
	for role, v := range map[string]string{"proxy": "PROXY_CPUSET", "origins": "ORIGIN_CPUSET", "observability": "INFRA_CPUSET"} {
		if !sameCPUs(t, plannedFor[role], want[v]) {
			t.Errorf("manifest plans %s on %q, loadgen placement (make up) on %q", role, plannedFor[role], want[v])
		}
	}
	if strconv.Itoa(p.Workers) != want["PROXY_WORKERS"] || strconv.FormatFloat(p.ProxyCPUs, 'f', -1, 64) != want["PROXY_CPUS"] {
		t.Errorf("manifest: proxies %g CPUs %d workers, loadgen placement: %s CPUs %s workers", p.ProxyCPUs, p.Workers, want["PROXY_CPUS"], want["PROXY_WORKERS"])
	}

	// The loadgen: every thread on the planned CPUs, as the manifest says.
	loadgenWant := p.Planned.Loadgen
	if loadgenWant == "" {
		loadgenWant = p.Online
	}
	if !sameCPUs(t, p.Loadgen.CPUs, loadgenWant) {
		t.Errorf("manifest: loadgen measured on %q, planned %q", p.Loadgen.CPUs, loadgenWant)
	}
	if len(threads) < 2 {
		t.Errorf("read %d threads of the loadgen", len(threads))
	}
	for tid, cs := range threads {
		if !sameCPUs(t, cs, loadgenWant) {
			t.Errorf("loadgen thread %s may run on %s, the plan gives the loadgen %s", tid, cs, loadgenWant)
		}
	}
	if p.Planned.Loadgen != "" {
		if n, _ := placement.ParseCPUSet(p.Planned.Loadgen); p.Loadgen.GOMAXPROCS != n.Len() {
			t.Errorf("loadgen GOMAXPROCS %d on %d planned CPUs", p.Loadgen.GOMAXPROCS, n.Len())
		}
	}

	// Every container: the engine's view now = the manifest's = the plan's.
	recorded := map[string]int{}
	for i, c := range p.Containers {
		recorded[c.Name] = i
	}
	var proxyCpusets, proxyQuotas []string
	for _, c := range ctrs {
		i, ok := recorded[c.name]
		if !ok {
			t.Errorf("container %s (%s) is not in the manifest's placement", c.name, c.role)
			continue
		}
		mc := p.Containers[i]
		if !sameCPUs(t, c.cpuset, mc.Cpuset) || c.cpus != mc.CPUs {
			t.Errorf("%s: engine cpuset %q quota %g, manifest %q %g", c.name, c.cpuset, c.cpus, mc.Cpuset, mc.CPUs)
		}
		planned := map[string]string{"proxy": p.Planned.Proxy, "origin": p.Planned.Origins, "infra": p.Planned.Observability}[c.role]
		if !sameCPUs(t, c.cpuset, planned) {
			t.Errorf("%s (%s): cpuset %q, planned %q", c.name, c.role, c.cpuset, planned)
		}
		if c.role == "proxy" {
			proxyCpusets = append(proxyCpusets, c.cpuset)
			proxyQuotas = append(proxyQuotas, strconv.FormatFloat(c.cpus, 'f', -1, 64))
			if c.cpus != p.ProxyCPUs {
				t.Errorf("%s: quota %g, planned %g", c.name, c.cpus, p.ProxyCPUs)
			}
		}
	}
	if len(proxyCpusets) < 4 {
		t.Errorf("only %d proxy containers found: %v", len(proxyCpusets), ctrs)
	}
	for i := range proxyCpusets {
		if proxyCpusets[i] != proxyCpusets[0] || proxyQuotas[i] != proxyQuotas[0] {
			t.Errorf("parity: proxies on cpusets %q with quotas %q", proxyCpusets, proxyQuotas)
			break
		}
	}
	for proxy, n := range workers {
		if n != p.Workers {
			t.Errorf("parity: %s runs %d workers, the placement gives every proxy %d", proxy, n, p.Workers)
		}
	}
	t.Logf("placement %s: loadgen %s (%d threads read), proxies %s quota %g workers %v", p.Mode, p.Loadgen.CPUs, len(threads), p.Planned.Proxy, p.ProxyCPUs, workers)
}

func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}

// sameCPUs compares two cpuset lists as sets ("" is no cpuset).
func sameCPUs(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := placement.ParseCPUSet(a)
	if err != nil {
		t.Errorf("cpuset %q: %v", a, err)
	}
	y, err := placement.ParseCPUSet(b)
	if err != nil {
		t.Errorf("cpuset %q: %v", b, err)
	}
	return x.Equal(y)
}

// threadCPUs reads Cpus_allowed_list of every thread of a process.
func threadCPUs(t *testing.T, pid int) map[string]string {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "status"))
		if err != nil {
			continue // the thread ended
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[e.Name()] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

type placedContainer struct {
	name, role, cpuset string
	cpus               float64
}

// containerCPUs inspects every container of the stack with the docker CLI.
func containerCPUs(t *testing.T) []placedContainer {
	t.Helper()
	ids := strings.Fields(docker(t, "ps", "-q", "--filter", "label=com.docker.compose.project=proxybench"))
	if len(ids) == 0 {
		t.Fatal("no container of the stack is running")
	}
	out := docker(t, append([]string{"inspect", "-f",
		`{{.Name}}|{{index .Config.Labels "proxybench.role"}}|{{.HostConfig.CpusetCpus}}|{{.HostConfig.NanoCpus}}|{{.HostConfig.CpuQuota}}|{{.HostConfig.CpuPeriod}}`}, ids...)...)
	var ctrs []placedContainer
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "|")
		if len(f) != 6 || f[1] == "" {
			continue
		}
		nano, _ := strconv.ParseFloat(f[3], 64)
		quota, _ := strconv.ParseFloat(f[4], 64)
		period, _ := strconv.ParseFloat(f[5], 64)
		c := placedContainer{name: strings.TrimPrefix(f[0], "/"), role: f[1], cpuset: f[2], cpus: nano / 1e9}
		if c.cpus == 0 && quota > 0 {
			if period == 0 {
				period = 100000
			}
			c.cpus = quota / period
		}
		ctrs = append(ctrs, c)
	}
	return ctrs
}

// proxyWorkers counts the workers each proxy really runs: nginx's worker
// processes, the threads of HAProxy's worker, the Go proxies' GOMAXPROCS.
func proxyWorkers(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	top := docker(t, "top", "proxybench-nginx")
	out["nginx"] = strings.Count(top, "nginx: worker process")
	most := 0
	for _, l := range strings.Split(docker(t, "top", "proxybench-haproxy"), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 1 {
			if ents, err := os.ReadDir(filepath.Join("/proc", f[1], "task")); err == nil && len(ents) > most {
				most = len(ents)
			}
		}
	}
	out["haproxy"] = most
	for _, p := range []string{"traefik", "caddy"} {
		for _, e := range strings.Fields(docker(t, "inspect", "-f", `{{range .Config.Env}}{{.}} {{end}}`, "proxybench-"+p)) {
			if v, ok := strings.CutPrefix(e, "GOMAXPROCS="); ok {
				out[p], _ = strconv.Atoi(v)
			}
		}
	}
	return out
}

//go:build e2e

package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/dockerx"
)

// The lab's exposure, read from the kernel and the engine rather than from
// its configuration: no socket of the stack listens beyond loopback, the
// exporter's way to the engine refuses anything but reading, and
// Prometheus's lifecycle and admin APIs are off.

// listener is one listening socket as ss reports it.
type listener struct {
	proto, local string
	pids         []int
	procs        []string
}

var ssUsers = regexp.MustCompile(`\("([^"]+)",pid=(\d+),`)

// listeners reads every listening TCP socket and bound UDP socket of the
// host's network namespace, with their owners.
func listeners(t *testing.T) []listener {
	t.Helper()
	out, err := exec.Command("ss", "-H", "-l", "-n", "-p", "-t", "-u").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v\n%s", err, out)
	}
	var ls []listener
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		l := listener{proto: f[0], local: f[4]}
		for _, m := range ssUsers.FindAllStringSubmatch(line, -1) {
			pid, _ := strconv.Atoi(m[2])
			l.pids, l.procs = append(l.pids, pid), append(l.procs, m[1])
		}
		ls = append(ls, l)
	}
	return ls
}

// loopback reports whether a local address as ss prints it (127.0.0.1:80,
// [::1]:80, [::ffff:127.0.0.1]:80, 127.0.0.1%lo:80) is bound to loopback.
func loopback(addr string) bool {
	host := addr[:strings.LastIndex(addr, ":")]
	host = strings.Trim(host, "[]")
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	return strings.HasPrefix(host, "127.") || host == "::1" || strings.HasPrefix(host, "::ffff:127.")
}

// stackPIDs maps every process of the stack's containers (by its cgroup
// naming the container id) to the container's name.
func stackPIDs(t *testing.T) map[int]string {
	t.Helper()
	ids := strings.Fields(docker(t, "ps", "-q", "--no-trunc", "--filter", "label=com.docker.compose.project=proxybench"))
	if len(ids) < 10 {
		t.Fatalf("only %d containers of the stack are running: is it up (make up)?", len(ids))
	}
	names := map[string]string{}
	for _, id := range ids {
		names[id] = docker(t, "inspect", "-f", "{{.Name}}", id)
	}
	out := map[int]string{}
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for id, name := range names {
			if strings.Contains(string(b), id) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				out[pid] = strings.TrimPrefix(name, "/")
			}
		}
	}
	return out
}

// TestListenersLoopbackOnly reads the listening sockets with ss while a
// loadgen run serves its /metrics, and fails on any socket of the stack,
// the loadgen or the engine bound beyond loopback. It also checks it saw
// each expected port, so that a change in how sockets are found cannot
// make it pass by seeing nothing.
func TestListenersLoopbackOnly(t *testing.T) {
	if os.Getenv("LISTEN") == "0.0.0.0" {
		t.Skip("LISTEN=0.0.0.0: the lab is exposed on purpose")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, lines := startRun(t, ctx, t.TempDir(), "loopback", "-tier", "3s", "-proxies", "nginx", "-origins", "fast", "-concurrency", "4", "-isolate=false")
	waitLine(t, lines, "cell=nginx.fast.simple.3s.r1", time.Minute)
	pids := stackPIDs(t)
	pids[cmd.Process.Pid] = "loadgen"
	for _, d := range []string{"dockerd", "containerd"} {
		out, _ := exec.Command("pgrep", "-x", d).Output()
		for _, f := range strings.Fields(string(out)) {
			pid, _ := strconv.Atoi(f)
			pids[pid] = d
		}
	}
	ls := listeners(t)
	for range lines {
	}
	cmd.Wait()

	seen := map[string]bool{}
	for _, l := range ls {
		for i, pid := range l.pids {
			owner, ours := pids[pid]
			if !ours {
				continue
			}
			port := l.local[strings.LastIndex(l.local, ":")+1:]
			seen[port] = true
			if !loopback(l.local) {
				t.Errorf("%s %s (%s, pid %d, %s) listens beyond loopback", l.proto, l.local, owner, pid, l.procs[i])
			}
		}
	}
	// The proxies, their TLS ports and their metrics/status ports, the
	// origins, the exporter, Prometheus, the loadgen and its live view.
	for _, port := range []string{"8882", "9882", "8982", "8885", "9885", "8985", "8883", "9883", "8983", "8884", "9884", "8984", "9101", "9102", "9103", "9104", "9400", "9090", "9500", "9600"} {
		if !seen[port] {
			t.Errorf("no socket of the stack on port %s: the check did not see what it checks", port)
		}
	}
	t.Logf("%d sockets of the stack seen, ports %v", len(seen), seen)
}

// filterSocket is the docker-filter's unix socket on the host: what the
// exporter mounts.
func filterSocket(t *testing.T) string {
	t.Helper()
	dir := docker(t, "volume", "inspect", "-f", "{{.Mountpoint}}", "proxybench_docker-filter")
	p := filepath.Join(dir, "docker.sock")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the docker filter's socket %s: %v (is proxybench-docker-filter running?)", p, err)
	}
	return p
}

// TestDockerFilterRefusesWrites talks to the engine through the socket the
// exporter uses, with the exporter's own client: everything the exporter
// reads works, and stopping, pausing, exec and creating are refused while
// the containers stay as they were.
func TestDockerFilterRefusesWrites(t *testing.T) {
	sock := filterSocket(t)
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Fatalf("ping through the filter: %v", err)
	}
	defer cli.Close()
	ctrs, err := cli.Containers(ctx, "proxybench")
	if err != nil || len(ctrs) < 10 {
		t.Fatalf("list and inspect through the filter: %d containers, %v", len(ctrs), err)
	}
	victim, err := cli.Service(ctx, "proxybench", "origin-fast")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cli.Logs(ctx, victim.ID, time.Time{}, false)
	if err != nil {
		t.Fatalf("logs through the filter: %v", err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	if _, err := cli.Stats(ctx, victim.ID); err != nil {
		t.Fatalf("stats through the filter: %v", err)
	}

	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "refused by the proxybench docker filter") {
			t.Errorf("%s through the filter: err %v, want the filter's refusal", what, err)
		}
	}
	refused("stop", cli.Stop(ctx, victim.ID, time.Second))
	refused("pause", cli.Pause(ctx, victim.ID))
	px, err := cli.Service(ctx, "proxybench", "nginx")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cli.Version(ctx, px) // `nginx -v` by exec
	refused("exec", err)

	// Raw requests the client would not make: writes, other endpoints,
	// a path that climbs out of /containers/<id>/.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for _, rq := range []struct{ method, path string }{
		{"POST", "/v1.41/containers/create"}, {"DELETE", "/containers/" + victim.ID}, {"POST", "/containers/" + victim.ID + "/kill"},
		{"GET", "/images/json"}, {"GET", "/info"}, {"GET", "/containers/../images/json"}, {"GET", "/secrets"},
		{"POST", "/containers/" + victim.ID + "/json"}, {"PUT", "/containers/" + victim.ID + "/archive?path=/"},
	} {
		req, _ := http.NewRequestWithContext(ctx, rq.method, "http://docker"+rq.path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", rq.method, rq.path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s through the filter: %s %q, want 403", rq.method, rq.path, resp.Status, body)
		}
	}
	if st := docker(t, "inspect", "-f", "{{.State.Status}}", victim.ID); st != "running" {
		t.Errorf("origin-fast is %s after the refused requests, want running", st)
	}
}

// TestPrometheusAdminAPIsOff asks Prometheus to reload, quit and snapshot.
func TestPrometheusAdminAPIsOff(t *testing.T) {
	prom := promURL()
	for _, rq := range []struct{ method, path string }{{"POST", "/-/reload"}, {"POST", "/-/quit"}, {"POST", "/api/v1/admin/tsdb/snapshot"},
		{"POST", "/api/v1/admin/tsdb/delete_series?match[]=up"}} {
		req, _ := http.NewRequest(rq.method, prom+rq.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", rq.method, rq.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Errorf("%s %s: %s %q: the API is on", rq.method, rq.path, resp.Status, body)
		}
	}
	resp, err := http.Get(prom + "/-/ready")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("Prometheus not ready after the refused requests: %v %v", resp, err)
	}
	resp.Body.Close()
}

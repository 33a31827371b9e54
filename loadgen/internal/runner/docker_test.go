package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"proxybench/internal/decide"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

// pyProxy is a tiny HTTP server that answers like a proxy in front of the
// origins; it runs in a throwaway container so the container can be killed.
const pyProxy = `
import http.server, sys
` + pyHandler + `
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`

// pyHandler is the test proxies' handler: every GET answered like an
// origin behind a proxy, and X-Tag when the program sets tag.
const pyHandler = `tag = globals().get("tag", "")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY the
    # body waits for the client's delayed ACK (40 ms), and the server's
    # rate would be set by that timer instead of its CPU.
    disable_nagle_algorithm = True
    def do_GET(self):
        b = b"proxybench origin ok\n"
        self.send_response(200)
        self.send_header("X-Origin", self.path.strip("/").split("/")[0])
        if tag:
            self.send_header("X-Tag", tag)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
`

// localImage is the newest local proxybench/debian image; tests never pull.
func localImage(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "proxybench/debian").Output()
	if err != nil {
		t.Skipf("docker images: %v", err)
	}
	if f := strings.Fields(string(out)); len(f) > 0 {
		return f[0]
	}
	t.Skip("no local proxybench/debian image (built by scripts/, never pulled)")
	return ""
}

// realEngine is the real engine for one test, under a 90 s deadline, and
// the local image its throwaway containers run; no engine skips the test.
func realEngine(t *testing.T) (context.Context, *dockerx.Client, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	dc, err := dockerx.New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	t.Cleanup(func() { dc.Close() })
	return ctx, dc, localImage(t)
}

func dockerRun(t *testing.T, project, service, role string, argv ...string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%s", project, service)
	base := []string{"run", "-d", "--name", name, "--network", "host",
		"--label", dockerx.LabelProject + "=" + project, "--label", dockerx.LabelService + "=" + service,
		"--label", dockerx.LabelRole + "=" + role, "--label", dockerx.LabelVersionCmd + "=python3 --version"}
	if role == "proxy" { // the quota of placement none, which args() asks for
		base = append(base, "--cpus", strconv.FormatFloat(unplacedStack(t).ctrs[0].CPUs, 'f', -1, 64))
	}
	out, err := exec.Command("docker", append(base, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	return strings.TrimSpace(string(out))
}

// loggedPort waits for the first line the container prints: the port its
// server bound (it asks the kernel for one, so no other test can take it).
func loggedPort(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	for ctx.Err() == nil {
		out, err := exec.CommandContext(ctx, "docker", "logs", id).Output()
		if line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n"); err == nil && line != "" {
			return line
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("container %s printed no port", id)
	return ""
}

// TestDockerIsolationAndDeath runs one proxy of a throwaway compose project
// on the real engine: while its cells run the project's other proxy is
// paused (an origin is not), the proxy's real version is recorded, the
// proxy container is killed 1 s into its first cell so that cell fails
// naming the exited container and the next is skipped, and afterwards the
// paused proxy runs again.
func TestDockerIsolationAndDeath(t *testing.T) {
	t.Parallel()
	ctx, dc, img := realEngine(t)
	project := fmt.Sprintf("pbrunner-test-%d", os.Getpid())
	proxyID := dockerRun(t, project, "nginx", "proxy", img, "python3", "-c", pyProxy)
	addr := "127.0.0.1:" + loggedPort(t, ctx, proxyID)
	otherID := dockerRun(t, project, "haproxy", "proxy", img, "sleep", "600")
	originID := dockerRun(t, project, "origin-fast", "origin", img, "sleep", "600")

	state := func(id string) string {
		c, err := dc.Inspect(ctx, id)
		if err != nil {
			return err.Error()
		}
		return c.State
	}
	var during []string
	h := &hooks{start: func(n int, _ plan.Cell) {
		if n == 1 {
			during = []string{state(otherID), state(originID)}
			time.AfterFunc(time.Second, func() {
				if err := dc.Stop(context.Background(), proxyID, 0); err != nil {
					t.Errorf("kill proxy: %v", err)
				}
			})
		}
	}}
	dir := t.TempDir()
	a := args(t, dir, "-isolate=true", "-project", project, "-tier", "2s", "-proxies", "nginx", "-origins", "fast,go", "-preflight-wait", "15s")
	code := run(ctx, a, io.Discard, io.Discard, testLog(t), env{
		target: func(string) (string, error) { return "http://" + addr, nil },
		docker: func(context.Context) (Docker, error) { return dc, nil }, clock: &sleeper{},
		display: func(d progress.Display) progress.Display { h.Display = d; return h },
	})
	if code != ExitCellsBroken {
		t.Errorf("exit %d, want %d", code, ExitCellsBroken)
	}
	if strings.Join(during, ",") != "paused,running" {
		t.Errorf("during the cell other proxy / origin were %v, want paused, running", during)
	}
	if s := state(otherID); s != "running" {
		t.Errorf("other proxy is %s after the run, want running", s)
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Versions["nginx"]; !strings.HasPrefix(v, "Python 3.") {
		t.Errorf("version %q, want the container's python3 --version", v)
	}
	if len(m.Cells) != 2 {
		t.Fatalf("%d cells", len(m.Cells))
	}
	name := project + "-nginx"
	if c := m.Cells[0]; c.Status != manifest.CellFailed || c.Reason != "proxy container "+name+" exited (code 137) during the cell" || c.Requests == 0 {
		t.Errorf("first cell %s %q with %d requests", c.Status, c.Reason, c.Requests)
	}
	if c := m.Cells[1]; c.Status != manifest.CellSkipped || !strings.Contains(c.Reason, "exited (code 137) during cell nginx.fast.simple.2s.r1") {
		t.Errorf("second cell %s %q", c.Status, c.Reason)
	}
	if m.Host.Docker == "" {
		t.Error("host docker version missing")
	}
}

// TestDockerArms runs a duet and an observer study against a throwaway
// project on the real engine, reading the engine itself at every cell's
// start: the candidate's cells see the proxy's quota at -duet-cpus and the
// plan's own cells the container's own quota; the unobserved cells see the
// project's observability container paused and the others see it running;
// after the runs everything is as it was.
func TestDockerArms(t *testing.T) {
	t.Parallel()
	ctx, dc, img := realEngine(t)
	project := fmt.Sprintf("pbarms-test-%d", os.Getpid())
	// The quota of placement none (args), which the run checks first.
	proxyID := dockerRun(t, project, "nginx", "proxy", "--cpus", "2", img, "python3", "-c", pyProxy)
	addr := "127.0.0.1:" + loggedPort(t, ctx, proxyID)
	infraID := dockerRun(t, project, "prometheus", "infra", img, "sleep", "600")

	seen := map[string]string{}
	h := &hooks{start: func(_ int, c plan.Cell) {
		n, err := dc.NanoCPUs(ctx, proxyID)
		in, ierr := dc.Inspect(ctx, infraID)
		seen[c.ID] = fmt.Sprintf("%g %s %v %v", float64(n)/1e9, in.State, err, ierr)
	}}
	for _, tc := range []struct {
		flag string
		want map[string]string
	}{
		{"-duet-cpus=0.25", map[string]string{
			"nginx.fast.simple.1s.r1": "2 running", "nginx.fast.simple.1s.candidate.r1": "0.25 running",
			"nginx.fast.simple.1s.candidate.r2": "0.25 running", "nginx.fast.simple.1s.r2": "2 running"}},
		{"-observer", map[string]string{
			"nginx.fast.simple.1s.r1": "2 running", "nginx.fast.simple.1s.unobserved.r1": "2 paused",
			"nginx.fast.simple.1s.unobserved.r2": "2 paused", "nginx.fast.simple.1s.r2": "2 running"}},
	} {
		clear(seen)
		dir := t.TempDir()
		a := args(t, dir, "-project", project, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-repeats", "2", "-control=false", tc.flag)
		code := run(ctx, a, io.Discard, io.Discard, testLog(t), env{
			target: func(string) (string, error) { return "http://" + addr, nil },
			docker: func(context.Context) (Docker, error) { return dc, nil }, clock: &sleeper{},
			display: func(d progress.Display) progress.Display { h.Display = d; return h },
		})
		if code != ExitOK {
			t.Errorf("%s: exit %d", tc.flag, code)
		}
		for id, want := range tc.want {
			if got := seen[id]; got != want+" <nil> <nil>" {
				t.Errorf("%s: at the start of %s the engine said %q, want %q", tc.flag, id, got, want)
			}
		}
		if len(seen) != len(tc.want) {
			t.Errorf("%s: cells %v", tc.flag, seen)
		}
		n, _ := dc.NanoCPUs(ctx, proxyID)
		in, _ := dc.Inspect(ctx, infraID)
		if n != 2e9 || in.State != "running" {
			t.Errorf("%s: after the run the quota is %g and the infra container %s", tc.flag, float64(n)/1e9, in.State)
		}
	}
}

// TestDockerSequentialDuet runs a sequential duet against a throwaway
// proxy on the real engine, a Python server: the baseline capped at the
// tests' 2000 req/s (args), the candidate with a tenth of a core, which
// holds it to about a quarter of that: "is the candidate's goodput
// worse by more than 20 %?" must be answered worse long before the plan's
// most pairs, so the run stops after a whole ABBA block, with the looks
// recorded in the manifest and the plan trimmed to the pairs measured.
// Then the same duet sliced, on the real engine's quota switches. The
// unit tests share the host by design (make test runs packages side by
// side), so the duet keeps the pairs the host disturbed
// (-keep-disturbed), and the margin is wide: the test is about when the
// duet stops and what a slice counts, not how finely it resolves.
func TestDockerSequentialDuet(t *testing.T) {
	t.Parallel()
	// A window per arm, then the same duet sliced: 500 ms slices, the
	// quota switched 4 times in each pair's 2 s window. Each has a proxy
	// container of its own, so the two run side by side.
	for name, mode := range map[string][]string{"window": nil, "sliced": {"-duet-slice", "500ms"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, dc, img := realEngine(t)
			project := fmt.Sprintf("pbseq-%s-test-%d", name, os.Getpid())
			proxyID := dockerRun(t, project, "nginx", "proxy", "--cpus", "2", img, "python3", "-c", pyProxy)
			addr := "127.0.0.1:" + loggedPort(t, ctx, proxyID)
			sequentialDuet(t, ctx, dc, project, proxyID, addr, mode)
		})
	}
}

func sequentialDuet(t *testing.T, ctx context.Context, dc *dockerx.Client, project, proxyID, addr string, mode []string) {
	t.Helper()
	dir := t.TempDir()
	a := args(t, dir, append([]string{"-project", project, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-repeats", "30", "-control=false",
		"-duet-cpus", "0.1", "-budget", "10m", "-keep-disturbed", "-margin", "0.2", "-run", "seq"}, mode...)...)
	code := run(ctx, a, io.Discard, os.Stderr, testLog(t), env{
		target: func(string) (string, error) { return "http://" + addr, nil },
		docker: func(context.Context) (Docker, error) { return dc, nil }, clock: &sleeper{},
	})
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	m, err := manifest.Read(filepath.Join(dir, "seq", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := m.Sequential
	if s == nil || s.Stopped != manifest.StopDecided || len(s.Looks) == 0 {
		t.Fatalf("sequential record %+v", s)
	}
	last := s.Looks[len(s.Looks)-1]
	// The candidate's quota (a tenth of a core) holds the server far
	// below the rate the baseline is capped at: a real regression far beyond the 20 % margin.
	if last.Pairs%2 != 0 || last.Pairs >= 30 || len(m.Cells) != 2*last.Pairs || len(last.Results) != 1 || last.Results[0].Outcome != decide.Worse {
		t.Fatalf("stopped after %d pairs with %d cells: %+v", last.Pairs, len(m.Cells), last.Results)
	}
	var p plan.Expanded
	if err := json.Unmarshal(m.Plan, &p); err != nil || p.Repeats != last.Pairs || len(p.Cells) != len(m.Cells) {
		t.Fatalf("manifest plan: %v, %d repeats, %d cells", err, p.Repeats, len(p.Cells))
	}
	t.Logf("%v: decided after %d pairs: %s", mode, last.Pairs, last.Results[0].Text)
	if n, _ := dc.NanoCPUs(ctx, proxyID); n != 2e9 {
		t.Errorf("after the run the quota is %g", float64(n)/1e9)
	}
	// A slice whose switch (a Docker API call: 20-150 ms on a quiet
	// host, 400 ms while other tests load the engine) left less than the
	// slice past the guard is not counted at all, so a cell may have no
	// slice; most must.
	const slice, guard = 0.5, 0.1
	counted := 0
	for _, c := range m.Cells {
		sl := c.Slices
		switch {
		case mode == nil && sl != nil:
			t.Errorf("%s: slices in a duet of a window per arm", c.ID)
		case mode == nil:
		case sl == nil || sl.Count > 2 || len(sl.Each) != sl.Count:
			t.Errorf("%s: slices %+v, want up to 2 of the pair's 4", c.ID, sl)
		case sl.Count == 0 && sl.SwitchMaxS < slice-guard:
			t.Errorf("%s: no slice counted, yet the slowest switch took %.3f s of a %.1f s slice with a %.1f s guard", c.ID, sl.SwitchMaxS, slice, guard)
		case sl.Count == 0:
		case sl.SwitchMaxS <= 0 || sl.MeasuredS > float64(sl.Count)*(slice-guard)+1e-9 || sl.MeasuredS <= 0:
			// The guard starts when the switch returns: a slow switch
			// shortens a slice's counted part, never lets it in.
			t.Errorf("%s: switch %.3f s, measured %.3f s of %d slices of %.1f s less a guard of %.3f s", c.ID, sl.SwitchMaxS, sl.MeasuredS, sl.Count, slice, sl.GuardS)
		case c.Requests == 0 || c.ProxyCPUSeconds == nil:
			t.Errorf("%s: %d requests, proxy CPU %v", c.ID, c.Requests, c.ProxyCPUSeconds)
		default:
			counted++
		}
	}
	if mode != nil && 2*counted < len(m.Cells) {
		t.Errorf("slices counted in %d cells of %d: the switches were too slow for most", counted, len(m.Cells))
	}
}

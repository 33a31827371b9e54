//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests break a real run on purpose: a proxy container killed mid-cell
// and a Ctrl-C mid-cell. Each must keep what was measured, still give a
// report, and leave the stack as it was. They run one at a time: both own
// the loadgen's :9500 and the proxies.

func bin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("PROXYBENCH_BIN_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "dist")
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not built (scripts/e2e.sh builds it): %v", name, err)
	}
	return p
}

// startRun starts `loadgen run` and returns a channel that yields each
// stderr line, so a test can act when a given cell starts.
func startRun(t *testing.T, ctx context.Context, results, run string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin(t, "loadgen"), append(runArgs(run, results), args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	return cmd, lines
}

// waitLine waits for a line holding substr and returns it.
func waitLine(t *testing.T, lines <-chan string, substr string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("loadgen ended before printing %q", substr)
			}
			if strings.Contains(l, substr) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q within %s", substr, within)
		}
	}
}

type runManifest struct {
	Status string `json:"status"`
	Cells  []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Reason   string `json:"reason"`
		Requests int64  `json:"requests"`
	} `json:"cells"`
}

func readManifest(t *testing.T, dir string) runManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m runManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// buildReport runs the reporter and returns each cell's verdict by id.
func buildReport(t *testing.T, results, run string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for id, c := range reportCells(t, results, run) {
		got[id] = c.Validity.Verdict
	}
	return got
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitHealthy waits as `make up` does: docker's own probe runs only every
// 15 s, so stack.sh also asks each container's health URL itself.
func waitHealthy(t *testing.T, name string, within time.Duration) {
	t.Helper()
	cmd := exec.Command("../scripts/stack.sh", "wait")
	cmd.Env = append(os.Environ(), fmt.Sprintf("WAIT_SECONDS=%d", int(within.Seconds())))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s not healthy again within %s: %v\n%s", name, within, err, out)
	}
}

func TestProxyKilledMidCell(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	results := t.TempDir()
	run := "fault-kill-" + time.Now().UTC().Format("150405")
	t.Cleanup(func() {
		// Leave the stack as we found it, even when the test fails.
		_ = exec.Command("docker", "start", "proxybench-traefik").Run()
		waitHealthy(t, "proxybench-traefik", 60*time.Second)
	})

	cmd, lines := startRun(t, ctx, results, run, "-tier", "3s", "-proxies", "traefik,caddy", "-origins", "fast,go", "-concurrency", "10")
	waitLine(t, lines, "cell=traefik.fast.simple.3s.r1", 60*time.Second)
	time.Sleep(1500 * time.Millisecond)
	docker(t, "kill", "proxybench-traefik")
	for range lines {
	}
	if code := exitCode(cmd.Wait()); code != 3 {
		t.Errorf("loadgen exit %d, want 3 (finished with failed cells)", code)
	}

	m := readManifest(t, filepath.Join(results, run))
	want := map[string]string{
		"traefik.fast.simple.3s.r1": "failed", "traefik.go.simple.3s.r1": "skipped",
		"caddy.fast.simple.3s.r1": "ok", "caddy.go.simple.3s.r1": "ok",
	}
	for _, c := range m.Cells {
		if want[c.ID] != c.Status {
			t.Errorf("cell %s: %s (%s), want %s", c.ID, c.Status, c.Reason, want[c.ID])
		}
		if c.ID == "traefik.fast.simple.3s.r1" && (!strings.Contains(c.Reason, "exited") || c.Requests == 0) {
			t.Errorf("killed cell: reason %q, %d requests; want the exit named and the requests before it kept", c.Reason, c.Requests)
		}
	}
	verdicts := buildReport(t, results, run)
	if v := verdicts["traefik.fast.simple.3s.r1"]; v != "invalid" {
		t.Errorf("report: killed cell verdict %q, want invalid (kept and marked)", v)
	}
	for _, id := range []string{"caddy.fast.simple.3s.r1", "caddy.go.simple.3s.r1"} {
		if v := verdicts[id]; v == "" || v == "invalid" {
			t.Errorf("report: %s verdict %q, want a measured cell", id, v)
		}
	}
	if st := docker(t, "inspect", "-f", "{{.State.Status}}", "proxybench-caddy"); st != "running" {
		t.Errorf("caddy left %s after the run, want running (isolation restored)", st)
	}
}

func TestCtrlCMidCell(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	results := t.TempDir()
	run := "fault-int-" + time.Now().UTC().Format("150405")

	cmd, lines := startRun(t, ctx, results, run, "-tier", "3s", "-proxies", "nginx,haproxy", "-origins", "fast", "-concurrency", "10")
	waitLine(t, lines, "cell=haproxy.fast.simple.3s.r1", 90*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if code := exitCode(cmd.Wait()); code != 130 {
		t.Errorf("loadgen exit %d after Ctrl-C, want 130", code)
	}
	m := readManifest(t, filepath.Join(results, run))
	if m.Status != "interrupted" {
		t.Errorf("manifest status %q, want interrupted", m.Status)
	}
	got := map[string]string{}
	for _, c := range m.Cells {
		got[c.ID] = c.Status
	}
	if got["nginx.fast.simple.3s.r1"] != "ok" || got["haproxy.fast.simple.3s.r1"] != "aborted" {
		t.Errorf("cells %v: want the finished nginx cell ok and the interrupted haproxy cell aborted", got)
	}
	verdicts := buildReport(t, results, run)
	if v := verdicts["nginx.fast.simple.3s.r1"]; v == "" || v == "invalid" {
		t.Errorf("report: finished cell verdict %q, want it measured", v)
	}
	if _, ok := verdicts["haproxy.fast.simple.3s.r1"]; !ok {
		t.Errorf("report lacks the aborted cell; it must be kept and marked")
	}
	for _, p := range []string{"proxybench-nginx", "proxybench-traefik", "proxybench-caddy", "proxybench-haproxy"} {
		if st := docker(t, "inspect", "-f", "{{.State.Status}}", p); st != "running" {
			t.Errorf("%s left %s after Ctrl-C, want running (isolation restored)", p, st)
		}
	}
}

//go:build e2e

package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"proxybench/internal/manifest"
)

var (
	root    string // repository root
	loadgen string // the loadgen binary built once for the package
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	root = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	dir, err := os.MkdirTemp("", "pb-scenarios-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/scenarios:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	loadgen = filepath.Join(dir, "loadgen")
	build := exec.Command("go", "build", "-o", loadgen, "./loadgen")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e/scenarios: build loadgen: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// requireStack fails (not skips: this suite exists to run on the stack)
// when a proxy port does not answer.
func requireStack(t *testing.T) {
	t.Helper()
	for _, port := range []string{"8882", "8883", "8884", "8885", "9104"} {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err != nil {
			t.Fatalf("stack not up (127.0.0.1:%s: %v): start it with make up", port, err)
		}
		c.Close()
	}
}

// stackLock holds .cache/stack.lock while a test sends load, as every
// command that loads the shared stack does (flock .cache/stack.lock ...).
func stackLock(t *testing.T) {
	t.Helper()
	if os.Getenv("PROXYBENCH_STACK_LOCKED") == "1" {
		return // scripts/e2e.sh holds it for the whole end-to-end suite
	}
	path := filepath.Join(root, ".cache", "stack.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", path, err)
	}
	t.Cleanup(func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
}

// run sends one short `loadgen run` on the live stack and returns its
// manifest. Isolation is off (pausing proxies is not what is tested, and
// it keeps the suite quick); Prometheus is not needed, and so neither is
// the quiet gap between cells that keeps their windows apart for it
// (settle 0: each cell's counts are the loadgen's own, and every cell
// drains its requests before the next begins). A cached instrument
// ceiling is reused for a day, as in the e2e package: the scenarios judge
// their own counts, not the ceiling's freshness, and one measured again
// costs about 2 s per run (12 s of the suite once the cache was over
// 30 min old).
func run(t *testing.T, args ...string) *manifest.Manifest {
	t.Helper()
	requireStack(t)
	stackLock(t)
	results := t.TempDir()
	id := "e2e-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	full := append([]string{"run", "-run", id, "-results", results, "-origins", "fast", "-isolate=false",
		"-settle", "0s", "-linger", "0s", "-metrics-addr", "127.0.0.1:0", "-preflight-wait", "5s", "-ceiling-max-age", "24h"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, loadgen, full...)
	cmd.Dir = root // as make bench runs it: the TLS cells trust the lab CA in .cache/tls
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	m, rerr := manifest.Read(filepath.Join(results, id, "manifest.json"))
	if rerr != nil {
		t.Fatalf("loadgen %s: %v (%v)\n%s", strings.Join(full, " "), rerr, err, out.String())
	}
	if err != nil {
		t.Errorf("loadgen %s: %v\n%s", strings.Join(full, " "), err, out.String())
	}
	return m
}

// cells splits a manifest's cells into those that ran and the skipped ones
// (both by id), failing on any other status.
func cells(t *testing.T, m *manifest.Manifest) (ran, skipped map[string]manifest.Cell) {
	t.Helper()
	ran, skipped = map[string]manifest.Cell{}, map[string]manifest.Cell{}
	for _, c := range m.Cells {
		switch c.Status {
		case manifest.CellOK:
			ran[c.ID] = c
		case manifest.CellSkipped:
			skipped[c.ID] = c
		default:
			t.Errorf("cell %s %s: %s", c.ID, c.Status, c.Reason)
		}
	}
	return ran, skipped
}

func window(c manifest.Cell) float64 { return c.End.Sub(c.Start).Seconds() }

func ok2xx(c manifest.Cell) int64 {
	var n int64
	for k, v := range c.Codes {
		if code, _ := strconv.Atoi(k); code >= 200 && code < 300 {
			n += v
		}
	}
	return n
}

// fullBodies checks that every 2xx of a payload cell carried the whole
// body: its body bytes are 2xx x body size (errored requests may have read
// part of one before failing) and its bytes/s is body size x 2xx/s; it
// returns the cell's scenario data.
func fullBodies(t *testing.T, proxy string, c manifest.Cell) *manifest.ScenarioData {
	t.Helper()
	sd := c.ScenarioData
	if sd == nil || sd.BodyBytes == 0 {
		t.Fatalf("%s %s: no payload data", proxy, c.Scenario)
	}
	ok := ok2xx(c)
	if ok != c.Requests || ok == 0 {
		t.Errorf("%s %s: %d 2xx of %d", proxy, c.Scenario, ok, c.Requests)
	}
	if min, max := ok*sd.BodyBytes, (ok+c.Errors)*sd.BodyBytes; c.Bytes < min || c.Bytes > max {
		t.Errorf("%s %s: %d body bytes for %d 2xx of %d bytes (want %d..%d)", proxy, c.Scenario, c.Bytes, ok, sd.BodyBytes, min, max)
	}
	want := float64(sd.BodyBytes) * float64(ok) / window(c)
	if math.Abs(sd.BytesPerSec-want) > 0.01*want+float64(c.Errors*sd.BodyBytes)/window(c) {
		t.Errorf("%s %s: %.0f bytes/s, body x rps = %.0f", proxy, c.Scenario, sd.BytesPerSec, want)
	}
	return sd
}

// noErrors fails on transport errors above ratio of the cell's requests.
func noErrors(t *testing.T, c manifest.Cell, ratio float64) {
	t.Helper()
	if float64(c.Errors) > ratio*float64(c.Requests+c.Errors) {
		t.Errorf("%s: %d transport errors of %d (%v), allowed %.1f%%", c.ID, c.Errors, c.Requests+c.Errors, c.ErrorReasons, 100*ratio)
	}
}

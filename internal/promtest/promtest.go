// Package promtest owns test helpers that run a real Prometheus: backfilling
// a TSDB from OpenMetrics text with promtool, and starting the pinned
// prometheus binary on a free 127.0.0.1 port, optionally scraping targets.
package promtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"proxybench/internal/lockedbuf"
)

// Version is the pinned Prometheus module version and Tags the build tags
// that scripts/gobin.sh builds prometheus and promtool with; both are part
// of the binaries' names in .cache/bin.
const (
	Version = "v0.316.0"
	Tags    = "remove_all_sd,enable_dns_sd"
)

// envNames are the variables that may name a binary, first match wins;
// the Makefile's test-unit sets PROXYBENCH_PROMETHEUS_BIN and PROMTOOL.
var envNames = map[string][]string{
	"prometheus": {"PROXYBENCH_PROMETHEUS_BIN", "PROXYBENCH_PROMETHEUS"},
	"promtool":   {"PROMTOOL", "PROXYBENCH_PROMTOOL"},
}

// Lookup finds the pinned prometheus or promtool binary: from the
// environment (envNames), else .cache/bin/<name>-<Version>-<Tags> at the
// repo root when it exists. The path is returned either way, so a caller
// can say which binary is missing.
func Lookup(name string) (path string, ok bool) {
	for _, e := range envNames[name] {
		if p := os.Getenv(e); p != "" {
			return p, true
		}
	}
	root, err := repoRoot()
	if err != nil {
		return "", false
	}
	p := filepath.Join(root, ".cache", "bin", name+"-"+Version+"-"+Tags)
	_, err = os.Stat(p)
	return p, err == nil
}

// Binary is Lookup that fails the test, with the command that builds the
// binary, when it is missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	p, ok := Lookup(name)
	if !ok {
		t.Fatalf("promtest: %s not built: run scripts/gobin.sh %s (or set %s)", p, name, strings.Join(envNames[name], " or "))
	}
	return p
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Backfill writes OpenMetrics text (with timestamps, ending in "# EOF") into
// a fresh TSDB directory with promtool and returns the directory.
func Backfill(t testing.TB, openMetrics []byte) string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.om")
	if err := os.WriteFile(in, openMetrics, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(Binary(t, "promtool"), "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", in, data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool backfill: %v\n%s", err, out)
	}
	return data
}

// Options configure a Prometheus instance.
type Options struct {
	DataDir        string        // TSDB path; a temp dir when empty
	Targets        []string      // host:port scraped as job Job
	Job            string        // default "test"
	ScrapeInterval time.Duration // default 1s
	Native         bool          // scrape native histograms (classic buckets kept too)
}

// Server is a running Prometheus.
type Server struct {
	URL string
	cmd *exec.Cmd
	log *lockedbuf.Buffer
}

// Start runs Prometheus until the test ends; it fails the test when
// Prometheus is not ready within 60 s.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	dir := t.TempDir()
	if o.DataDir == "" {
		o.DataDir = filepath.Join(dir, "data")
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = time.Second
	}
	if o.Job == "" {
		o.Job = "test"
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", o.ScrapeInterval, o.ScrapeInterval)
	if len(o.Targets) > 0 {
		cfg += fmt.Sprintf("scrape_configs:\n  - job_name: %s\n    scrape_native_histograms: %t\n    always_scrape_classic_histograms: true\n    static_configs:\n      - targets: ['%s']\n",
			o.Job, o.Native, strings.Join(o.Targets, "','"))
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &lockedbuf.Buffer{}
	// Port 0: Prometheus asks the kernel for a port and logs it, so no
	// other test can take it between picking and binding.
	cmd := exec.Command(Binary(t, "prometheus"), "--config.file="+cfgPath, "--storage.tsdb.path="+o.DataDir,
		"--storage.tsdb.retention.time=100y", "--web.listen-address=127.0.0.1:0", "--log.level=info")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, err := ListenAddr(ctx, log.String)
	if err != nil {
		t.Fatalf("prometheus: %v\n%s", err, log.String())
	}
	s := &Server{URL: "http://" + addr, cmd: cmd, log: log}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus not ready at %s: %v\n%s", s.URL, err, log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var listening = regexp.MustCompile(`msg="Listening on"[^\n]*? address=(\S+)`)

// ListenAddr waits until a Prometheus started with
// --web.listen-address=127.0.0.1:0 logs the address it bound.
func ListenAddr(ctx context.Context, log func() string) (string, error) {
	for {
		if m := listening.FindStringSubmatch(log()); m != nil {
			return m[1], nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no %q line in its log: %w", "Listening on", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

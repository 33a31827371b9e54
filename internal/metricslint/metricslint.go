// Package metricslint owns the test-time check that a /metrics exposition is
// clean: promlint always (the linter behind promtool check metrics) and the
// pinned promtool itself when it is built. Tests of every component that
// serves /metrics call it, so they all apply the same rules.
package metricslint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// PromtoolVersion is the pinned promtool (scripts/gobin.sh builds it).
const PromtoolVersion = "v0.316.0"

// Check fails t when text, a text exposition, breaks Prometheus's naming
// and format rules. promtool is found through $PROMTOOL or the project's
// .cache/bin; without it only promlint runs, which the test log says.
func Check(t testing.TB, text []byte) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", err, problems)
	}
	bin := os.Getenv("PROMTOOL")
	if bin == "" {
		bin = filepath.Join(repoRoot(), ".cache", "bin", "promtool-"+PromtoolVersion)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Logf("promtool not built (%s): skipping promtool check metrics", bin)
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// repoRoot is two levels above this file (internal/metricslint).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

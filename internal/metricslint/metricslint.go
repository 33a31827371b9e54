// Package metricslint owns the test-time check that a /metrics exposition is
// clean: promlint always (the linter behind promtool check metrics) and the
// pinned promtool itself when it is built. Tests of every component that
// serves /metrics call it, so they all apply the same rules.
package metricslint

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"proxybench/internal/promtest"
)

// Check fails t when text, a text exposition, breaks Prometheus's naming
// and format rules. promtool is found as promtest.Lookup finds it ($PROMTOOL
// or the project's .cache/bin); without it only promlint runs, which the
// test log says.
func Check(t testing.TB, text []byte) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", err, problems)
	}
	bin, ok := promtest.Lookup("promtool")
	if !ok {
		t.Logf("promtool not built (%s): skipping promtool check metrics", bin)
		return
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

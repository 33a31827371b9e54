//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/studydata"
)

// runStudy runs `loadgen study -study name -scale tiny` for real, within
// the time given, and returns its record (study.json, read as the reporter
// reads it), which must be done, and how long the study took. Every line
// the study logs goes to the test's log and, when onLine is set, to it as
// it comes (a test acting while the study runs).
func runStudy(t *testing.T, name string, within time.Duration, onLine func(string)) (*studydata.Record, time.Duration) {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	run := "e2e-" + name + "-" + time.Now().UTC().Format("20060102T150405.000Z")
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t, "loadgen"), "study", "-study", name, "-scale", "tiny", "-run", run, "-results", results, "-repo", repo)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Log(sc.Text())
		if onLine != nil {
			onLine(sc.Text())
		}
	}
	err = cmd.Wait()
	took := time.Since(start)
	t.Logf("loadgen study %s -scale tiny took %s", name, took.Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("loadgen study %s: %v (within %v)", name, err, within)
	}
	r, err := studydata.Read(filepath.Join(results, run, "study.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "done" {
		t.Fatalf("study %s status %q (%s), want done", name, r.Status, r.Error)
	}
	if left := docker(t, "ps", "-aq", "--filter", "label=proxybench.study="+run); strings.TrimSpace(left) != "" {
		t.Errorf("study containers left behind: %s", left)
	}
	return r, took
}

// studyChecks fails the test for every check of r that failed and returns
// each check's detail by name.
func studyChecks(t *testing.T, r *studydata.Record) map[string]string {
	t.Helper()
	details := map[string]string{}
	for _, c := range r.Checks {
		details[c.Name] = c.Detail
		if !c.OK {
			t.Errorf("check %q failed: %s", c.Name, c.Detail)
		}
	}
	return details
}

// mustHaveChecks fails the test for every name that is not a check of the
// study.
func mustHaveChecks(t *testing.T, checks map[string]string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := checks[n]; !ok {
			t.Errorf("no check %q", n)
		}
	}
}

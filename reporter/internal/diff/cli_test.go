package diff

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// reporterBin builds the real reporter command into dir.
func reporterBin(t *testing.T, dir string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "reporter")
	if out, err := exec.Command(gobin, "build", "-o", bin, "proxybench/reporter").CombinedOutput(); err != nil {
		t.Fatalf("go build proxybench/reporter: %v\n%s", err, out)
	}
	return bin
}

// TestCLIExitCodes runs `reporter diff` on report.json files written to a
// results directory and checks its exit code and what it names.
func TestCLIExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reporter")
	}
	t.Parallel()
	bin := reporterBin(t, t.TempDir())
	byName := map[string]int{}
	all := gateCases()
	for i, tc := range all {
		byName[tc.name] = i
	}
	for _, tc := range []struct {
		name  string
		extra []string
		code  int
		out   []string
	}{
		{"proxy_died", nil, 4, []string{"haproxy.fast.simple.quick: missing in B", "haproxy.go.simple.quick: missing in B"}},
		{"proxy_died", []string{"-require-significance"}, 4, []string{"missing in B"}},
		{"skipped", nil, 4, []string{"skipped in B: proxy haproxy exited (code 137)"}},
		{"failed", nil, 4, []string{"nginx.go.simple.quick: failed in B: "}},
		{"invalid_share", nil, 4, []string{"invalid repeats 0/3 → 2/3"}},
		{"errors_in_invalid_repeat", []string{"-require-significance"}, 4, []string{"regressed (error ratio beyond threshold)"}},
		{"identical", nil, 0, []string{"No regression"}},
		{"one_repeat", nil, 4, []string{"| 10000 | n/a | 8000 | n/a | -20.0 % | n/a |"}},
		{"one_repeat", []string{"-require-significance"}, 0, []string{"regressed (too few repeats to confirm)"}},
		{"only_in_b", nil, 0, []string{"Only in B (not gated)"}},
	} {
		t.Run(tc.name+strings.Join(tc.extra, ""), func(t *testing.T) {
			t.Parallel()
			g := all[byName[tc.name]]
			res := writeRuns(t, g.a, g.b)
			args := append([]string{"diff", "-a", "A", "-b", "B", "-results", res}, tc.extra...)
			code, stdout, stderr := runBin(t, bin, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.out {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q\n%s", s, stdout)
				}
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		res := writeRuns(t, all[0].a, all[0].b)
		if code, _, stderr := runBin(t, bin, "diff", "-a", "A", "-b", "nope", "-results", res); code != 1 || !strings.Contains(stderr, "make report RUN=nope") {
			t.Errorf("missing run: exit %d, stderr %q; want 1 and how to build it", code, stderr)
		}
		if code, _, _ := runBin(t, bin, "diff", "-a", "A"); code != 2 {
			t.Errorf("without -b: exit %d, want 2", code)
		}
	})
}

func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	default:
		t.Fatalf("run %s: %v", bin, err)
		return -1, "", ""
	}
}

package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"proxybench/internal/cellid"
	"proxybench/reporter/internal/synth"
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
		{"one_repeat", nil, 4, []string{"| 10000 | n/a | 8000 | n/a | -20.0 % | n/a | ±5 % | n/a | n/a | 1/1 |"}},
		{"one_repeat", []string{"-threshold", "25%"}, 0, []string{"not measured (1 repeat): -threshold 25 % stands in"}},
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
		if code, _, _ := runBin(t, bin, "diff", "-a", "A", "-b", "B", "-run", "A"); code != 2 {
			t.Errorf("-run with -a and -b: exit %d, want 2", code)
		}
		if code, _, stderr := runBin(t, bin, "diff", "-run", "A", "-results", res); code != 1 || !strings.Contains(stderr, "no cells besides the plan's own") {
			t.Errorf("-run of a run without arms: exit %d, stderr %q; want 1 and why", code, stderr)
		}
	})
	t.Run("interleaved", func(t *testing.T) {
		t.Parallel()
		duet := synth.Noisy{Seed: 21, Run: "duet", CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate, ArmGoodput: 0.7, ArmP99: 1.5}.Report()
		same := synth.Noisy{Seed: 22, Run: "same", CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate}.Report()
		obs := synth.Noisy{Seed: 23, Run: "obs", CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmUnobserved}.Report()
		res := writeRuns(t, duet, same)
		writeRuns(t, obs, nil, res)
		if code, stdout, stderr := runBin(t, bin, "diff", "-run", "duet", "-results", res); code != 4 || !strings.Contains(stdout, "| nginx.fast.simple.quick | goodput_rps | ") || !strings.Contains(stdout, "**regressed**") {
			t.Errorf("duet with a 30 %% cut: exit %d, want 4\n%s%s", code, stdout, stderr)
		}
		if code, stdout, stderr := runBin(t, bin, "diff", "-run", "same", "-results", res); code != 0 || !strings.Contains(stdout, "**No regression beyond the noise floor.**") {
			t.Errorf("duet of an unchanged candidate: exit %d, want 0\n%s%s", code, stdout, stderr)
		}
		out := filepath.Join(t.TempDir(), "observer.json")
		code, stdout, stderr := runBin(t, bin, "diff", "-run", "obs", "-results", res, "-json", out)
		if code != 0 || !strings.Contains(stdout, "## Observer effect: unobserved against observed") {
			t.Errorf("observer: exit %d, want 0\n%s%s", code, stdout, stderr)
		}
		var js struct {
			Schema string `json:"schema"`
			Mode   string `json:"mode"`
			Arms   []struct {
				Arm string `json:"arm"`
			} `json:"arms"`
		}
		if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &js) != nil || js.Schema != JSONSchema || js.Mode != ModeRun || js.Arms[0].Arm != cellid.ArmUnobserved {
			t.Errorf("observer JSON %+v, %v", js, err)
		}
		code, stdout, _ = runBin(t, bin, "diff", "-a", "duet", "-b", "same", "-results", res, "-json", "-")
		if code != 0 || json.Unmarshal([]byte(stdout), &js) != nil || js.Mode != ModeRuns {
			t.Errorf("two runs, -json -: exit %d, mode %q\n%s", code, js.Mode, stdout)
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

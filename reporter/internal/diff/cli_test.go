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
	"proxybench/reporter/internal/report"
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
		// A missing key gates at any margin.
		{"proxy_died", []string{"-margin", "50%"}, 4, []string{"missing in B"}},
		{"skipped", nil, 4, []string{"skipped in B: proxy haproxy exited (code 137)"}},
		{"failed", nil, 4, []string{"nginx.go.simple.quick: failed in B: "}},
		{"invalid_share", nil, 4, []string{"invalid repeats 0/3 → 2/3"}},
		{"errors_in_invalid_repeat", nil, 0, []string{"| 3/3 | not resolved at ±0.5 pp |"}},
		{"errors_in_invalid_repeat", []string{"-error-margin", "1%"}, 0, []string{"(the error ratio: ±1 pp)", "| 3/3 | not resolved at ±1 pp |"}},
		{"identical", nil, 0, []string{"No regression"}},
		{"goodput_cut", nil, 4, []string{"- nginx.fast.simple.quick goodput_rps: worse by more than 5.0 %: -30.0 %", "| 3/3 | **worse by > 5 %** |"}},
		{"goodput_cut", []string{"-margin", "0.5"}, 0, []string{"| 3/3 | equivalent within ±50 % |"}},
		{"open_loop", nil, 4, []string{"- haproxy.go.simple.quick p99_seconds: worse by more than 5.0 %"}},
		{"one_repeat", nil, 0, []string{"| 10000 | n/a | 8000 | n/a | -20.0 % | n/a | n/a | n/a | 1/1 | no data |"}},
		{"one_repeat", []string{"-margin", "25%"}, 0, []string{"Each metric is answered at the margin ±25 %", "not measured (1 repeat)"}},
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
		// 10 pairs, not the synth default 5: the duet's anytime-valid
		// interval (Lai's confidence sequence, tightest at 20 pairs) is
		// unbounded at 5 pairs and could not call even a 30 % cut.
		duet := synth.Noisy{Seed: 21, Run: "duet", Repeats: 10, CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate, ArmGoodput: 0.7, ArmP99: 1.5}.Report()
		same := synth.Noisy{Seed: 22, Run: "same", Repeats: 10, CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate}.Report()
		obs := synth.Noisy{Seed: 23, Run: "obs", CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmUnobserved}.Report()
		// A run decided at its own margin of 50 %: -run takes it unless
		// -margin is given, also when only -error-margin is.
		wide := synth.Noisy{Seed: 24, Run: "wide", Repeats: 10, CV: 0.03, LatencyCV: 0.06, Control: true, Arm: cellid.ArmCandidate}.Report()
		wide.Question = &report.Question{Margin: 0.5, ErrorMargin: 0.005, Alpha: 0.05}
		res := writeRuns(t, duet, same)
		writeRuns(t, obs, wide, res)
		if code, stdout, stderr := runBin(t, bin, "diff", "-run", "duet", "-results", res); code != 4 || !strings.Contains(stdout, "| nginx.fast.simple.quick | ● goodput_rps | ") ||
			!strings.Contains(stdout, "**worse by > 5 %**") || !strings.Contains(stdout, "- nginx.fast.simple.quick goodput_rps: worse by more than 5.0 %") {
			t.Errorf("duet with a 30 %% cut: exit %d, want 4\n%s%s", code, stdout, stderr)
		}
		if code, stdout, stderr := runBin(t, bin, "diff", "-run", "same", "-results", res); code != 0 ||
			!strings.Contains(stdout, "**No regression: no cell missing, failed or newly invalid, and no gated metric worse by more than ±5 %.**") || strings.Contains(stdout, "worse by >") {
			t.Errorf("duet of an unchanged candidate: exit %d, want 0 and nothing worse\n%s%s", code, stdout, stderr)
		}
		for _, args := range [][]string{nil, {"-error-margin", "1%"}} {
			code, stdout, stderr := runBin(t, bin, append([]string{"diff", "-run", "wide", "-results", res}, args...)...)
			if code != 0 || !strings.Contains(stdout, "answered at the margin ±50 %") {
				t.Errorf("run with its own margin of 50 %%, %v: exit %d, want 0 at ±50 %%\n%s%s", args, code, stdout, stderr)
			}
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

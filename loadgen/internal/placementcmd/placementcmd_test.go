package placementcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"proxybench/internal/placement"
)

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	custom := filepath.Join(dir, "custom.yaml")
	if err := os.WriteFile(custom, []byte("placement:\n  proxy: \"2-3\"\n  loadgen: \"1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("placement:\n  proxy: \"7\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	four := func() (placement.CPUSet, error) { return placement.CPUSet{0, 1, 2, 3}, nil }
	for _, tc := range []struct {
		name        string
		args        []string
		code        int
		out, errHas string
	}{
		{name: "auto", code: 0,
			out: "PROXY_CPUSET=3\nPROXY_CPUS=1\nPROXY_WORKERS=1\nORIGIN_CPUSET=2\nORIGIN_WORKERS=1\nINFRA_CPUSET=0\n", errHas: "placement auto (online CPUs 0-3): loadgen 1, proxy 3"},
		{name: "none", args: []string{"-placement", "none"}, code: 0,
			out: "PROXY_CPUSET=\nPROXY_CPUS=2\nPROXY_WORKERS=2\nORIGIN_CPUSET=\nORIGIN_WORKERS=2\nINFRA_CPUSET=\n", errHas: "placement none"},
		{name: "plan file", args: []string{"-plan", custom}, code: 0,
			out: "PROXY_CPUSET=2-3\nPROXY_CPUS=2\nPROXY_WORKERS=2\nORIGIN_CPUSET=0-1\nORIGIN_WORKERS=2\nINFRA_CPUSET=0-1\n", errHas: "loadgen 1, proxy 2-3"},
		{name: "flag wins", args: []string{"-plan", custom, "-placement", "none"}, code: 0,
			out: "PROXY_CPUSET=\nPROXY_CPUS=2\nPROXY_WORKERS=2\nORIGIN_CPUSET=\nORIGIN_WORKERS=2\nINFRA_CPUSET=\n"},
		{name: "offline CPU", args: []string{"-plan", bad}, code: 2, errHas: `placement.proxy "7": CPU 7 not online (online: 0-3)`},
		{name: "bad mode", args: []string{"-placement", "on"}, code: 2, errHas: `placement.mode "on"`},
		{name: "no file", args: []string{"-plan", filepath.Join(dir, "nope.yaml")}, code: 2, errHas: "nope.yaml"},
		{name: "stray", args: []string{"auto"}, code: 2, errHas: `unexpected argument "auto"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb strings.Builder
			code := run(tc.args, &out, &errb, four)
			if code != tc.code || out.String() != tc.out || !strings.Contains(errb.String(), tc.errHas) {
				t.Errorf("exit %d, stdout\n%s\nstderr %s\nwant exit %d, stdout\n%s\nstderr with %q", code, out.String(), errb.String(), tc.code, tc.out, tc.errHas)
			}
		})
	}
}

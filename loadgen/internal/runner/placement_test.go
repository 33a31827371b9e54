package runner

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/placement"
)

// stackOnly is a Docker whose project holds the given containers and
// which does nothing else: enough for the placement check at run start.
type stackOnly struct{ ctrs []dockerx.Container }

var errStackOnly = errors.New("not part of this fake engine")

func (s stackOnly) Containers(context.Context, string) ([]dockerx.Container, error) {
	return s.ctrs, nil
}
func (s stackOnly) Service(context.Context, string, string) (dockerx.Container, error) {
	return dockerx.Container{}, errStackOnly
}
func (s stackOnly) Inspect(context.Context, string) (dockerx.Container, error) {
	return dockerx.Container{}, errStackOnly
}
func (s stackOnly) Version(context.Context, dockerx.Container) (string, error) {
	return "", errStackOnly
}
func (s stackOnly) Pause(context.Context, string) error               { return errStackOnly }
func (s stackOnly) Unpause(context.Context, string) error             { return errStackOnly }
func (s stackOnly) Stop(context.Context, string, time.Duration) error { return errStackOnly }
func (s stackOnly) Start(context.Context, string) error               { return errStackOnly }
func (s stackOnly) Kill(context.Context, string, string) error        { return errStackOnly }
func (s stackOnly) docker(context.Context) (Docker, error)            { return s, nil }
func ctr(name, role, cpuset string, cpus float64) dockerx.Container {
	return dockerx.Container{Name: name, Service: strings.TrimPrefix(name, "proxybench-"), State: "running", Running: true,
		Labels: map[string]string{dockerx.LabelRole: role}, Cpuset: cpuset, CPUs: cpus}
}

// unplacedStack is the stack as placement none starts it on this host.
func unplacedStack(t *testing.T) stackOnly {
	t.Helper()
	online, err := placement.Online()
	if err != nil {
		t.Fatal(err)
	}
	none, err := placement.Resolve(placement.Spec{Mode: placement.None}, online)
	if err != nil {
		t.Fatal(err)
	}
	return stackOnly{ctrs: []dockerx.Container{
		ctr("proxybench-nginx", "proxy", "", none.ProxyCPUs),
		ctr("proxybench-caddy", "proxy", "", none.ProxyCPUs),
		ctr("proxybench-origin-fast", "origin", "", 0),
		ctr("proxybench-prometheus", "infra", "", 0),
		ctr("proxybench-stranger", "", "0", 0), // no role: not placed, not recorded
	}}
}

// TestPlacementRecorded: a stack that runs the run's placement is checked
// and recorded in the manifest, the plan beside the measured cpusets and
// the loadgen's affinity read back.
func TestPlacementRecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := map[string]*httptest.Server{"nginx": fakeProxy(t, nil)}
	stack := unplacedStack(t)
	code := run(context.Background(), args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast"), io.Discard, io.Discard, testLog(t),
		env{target: targets(srv), docker: stack.docker, clock: &sleeper{}})
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	m, err := manifest.Read(filepath.Join(dir, "t1", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Placement
	if p == nil {
		t.Fatal("manifest has no placement")
	}
	if p.Mode != placement.None || p.CPUs == 0 || p.Online == "" || p.Planned != (manifest.RoleCPUs{}) ||
		p.ProxyCPUs != stack.ctrs[0].CPUs || p.Workers != int(p.ProxyCPUs) {
		t.Errorf("placement %+v", p)
	}
	// In role order, then by name.
	if len(p.Containers) != 4 || p.Containers[1] != (manifest.ContainerCPUs{Name: "proxybench-nginx", Service: "nginx", Role: placement.RoleProxy,
		State: "running", CPUs: p.ProxyCPUs}) || p.Containers[0].Name != "proxybench-caddy" ||
		p.Containers[2].Role != placement.RoleOrigins || p.Containers[3].Role != placement.RoleObservability {
		t.Errorf("containers %+v", p.Containers)
	}
	// Placement none pins nothing: the loadgen keeps the CPUs it started with.
	a, err := placement.SelfAffinity()
	if err != nil {
		t.Fatal(err)
	}
	if p.Loadgen.CPUs != a.CPUs.String() || p.Loadgen.Threads == 0 || p.Loadgen.GOMAXPROCS == 0 || p.Loadgen.Error != "" {
		t.Errorf("loadgen affinity %+v, this process runs on %s", p.Loadgen, a.CPUs)
	}
}

// TestPlacementMismatchRefused: a run asking a placement the stack does
// not run stops before anything is written or sent, saying what differs
// and how to bring the two together.
func TestPlacementMismatchRefused(t *testing.T) {
	t.Parallel()
	online, err := placement.Online()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 {
		t.Skip("on 1 CPU auto places nothing, so it matches every stack without cpusets")
	}
	cut := unplacedStack(t)
	cut.ctrs[1].CPUs = 0.7 // one proxy's quota cut by hand
	for _, tc := range []struct {
		name  string
		stack stackOnly
		flags []string
		want  []string
	}{
		{name: "auto asked, none running", stack: unplacedStack(t), flags: []string{"-placement", "auto"},
			want: []string{"the stack runs placement none, the run asks placement auto", "proxybench-nginx (proxy) runs on CPUs all", "make up PLACEMENT=auto"}},
		{name: "parity broken", stack: cut, flags: []string{"-placement", "none"},
			want: []string{"the stack runs another placement", "proxybench-caddy has a CPU quota of 0.7", "make up PLACEMENT=none", "docker rm -f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var stderr strings.Builder
			a := append(args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast"), tc.flags...)
			code := run(context.Background(), a, io.Discard, &stderr, testLog(t),
				env{target: targets(map[string]*httptest.Server{"nginx": fakeProxy(t, nil)}), docker: tc.stack.docker, clock: &sleeper{}})
			if code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "t1")); err == nil {
				t.Error("a refused run wrote results")
			}
		})
	}
}

// TestPlacementInvalid: a placement that does not fit the host is a usage
// error in the plan's words.
func TestPlacementInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("placement:\n  proxy: \"8191\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	a := args(t, dir, "-tier", "1s", "-proxies", "nginx", "-origins", "fast", "-plan", plan)
	a = append(a[:len(a):len(a)], "-placement", "") // the file's section, not the helper's none
	code := run(context.Background(), a, io.Discard, &stderr, testLog(t), env{docker: noDocker, clock: &sleeper{}})
	if code != ExitUsage || !strings.Contains(stderr.String(), `invalid plan:`) || !strings.Contains(stderr.String(), `placement.proxy "8191": CPU 8191 not online`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

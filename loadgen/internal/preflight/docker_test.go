package preflight

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"proxybench/internal/dockerx"

	"proxybench/loadgen/internal/routecheck/routechecktest"
)

// TestRunVersionFromContainer: the version column comes from the running
// container's own binary (a throwaway container of a local image whose
// version command is python3 --version); a stopped one says so.
func TestRunVersionFromContainer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dc, err := dockerx.New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	defer dc.Close()
	out, err := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "proxybench/debian").Output()
	if err != nil || len(strings.Fields(string(out))) == 0 {
		t.Skip("no local proxybench/debian image (never pulled)")
	}
	img := strings.Fields(string(out))[0]
	project := fmt.Sprintf("pbpreflight-test-%d", os.Getpid())
	start := func(service string, run bool) {
		name := project + "-" + service
		args := []string{"create", "--name", name, "--network", "none", "--label", dockerx.LabelProject + "=" + project,
			"--label", dockerx.LabelService + "=" + service, "--label", dockerx.LabelVersionCmd + "=python3 --version", img, "sleep", "300"}
		if b, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker create: %v %s", err, b)
		}
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
		if run {
			if b, err := exec.Command("docker", "start", name).CombinedOutput(); err != nil {
				t.Fatalf("docker start: %v %s", err, b)
			}
		}
	}
	start("nginx", true)
	start("caddy", false)
	s := routechecktest.FakeProxy(t, nil)
	var buf bytes.Buffer
	code := Run(ctx, Options{Proxies: []string{"nginx", "caddy", "haproxy"}, Origins: []string{"fast"}, Project: project, Timeout: time.Second,
		Target: func(string) (string, error) { return s.URL, nil }, Docker: dc}, &buf, io.Discard)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"nginx    ok    Python 3.", "caddy    ok    ? (created)", "haproxy  ok    ? (no container)",
		"versions unknown:\n  caddy: container " + project + "-caddy is created\n  haproxy: no container for service \"haproxy\""} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

package info

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"proxybench/internal/dockerx"
)

// TestInfoFromLabels labels real containers of the local base image as the
// nginx and haproxy proxies (one declaring its version, one not), an
// origin, and a stopped proxy, and checks only the running proxies get an
// info series, with the declared version or unknown.
func TestInfoFromLabels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	defer cli.Close()
	b, _ := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "proxybench/debian").Output()
	if len(strings.Fields(string(b))) == 0 {
		t.Skip("no local proxybench/debian image (never pulled)")
	}
	img := strings.Fields(string(b))[0]
	project := fmt.Sprintf("proxybench-info-test-%d", os.Getpid())
	start := func(service, role string, run bool, extra ...string) {
		args := append([]string{"create", "--name", project + "-" + service, "--network", "none",
			"--label", dockerx.LabelProject + "=" + project, "--label", dockerx.LabelService + "=" + service, "--label", dockerx.LabelRole + "=" + role},
			extra...)
		args = append(args, img, "sleep", "60")
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker create: %v\n%s", err, out)
		}
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
		if run {
			if err := cli.Start(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	start("nginx", "proxy", true, "--label", LabelVersion+"=nginx/1.22.1")
	start("haproxy", "proxy", true)
	start("origin-go", "origin", true)
	start("caddy", "proxy", false)

	c := New(cli, project, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Refresh(ctx)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	imageID := strings.TrimSpace(run(t, "image", "inspect", "--format", "{{.Id}}", img))
	want := fmt.Sprintf(`
# HELP proxybench_proxy_info A proxy container of the stack: its image, image id and the version its image declares (org.opencontainers.image.version; unknown when none).
# TYPE proxybench_proxy_info gauge
proxybench_proxy_info{container="%[1]s-haproxy",image="%[2]s",image_id="%[3]s",service="haproxy",version="unknown"} 1
proxybench_proxy_info{container="%[1]s-nginx",image="%[2]s",image_id="%[3]s",service="nginx",version="nginx/1.22.1"} 1
`, project, img, imageID)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	b, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Fatalf("docker %v: %v", args, err)
	}
	return string(b)
}

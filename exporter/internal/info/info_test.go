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

// TestInfoFromRealBinaries labels containers of the local base image as
// the nginx and haproxy proxies (the real Debian binaries are in it), an
// origin, and a stopped proxy, and checks only the running proxies get an
// info series, with the versions their binaries print.
func TestInfoFromRealBinaries(t *testing.T) {
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
	start := func(service, role string, run bool) {
		args := []string{"create", "--name", project + "-" + service, "--network", "none",
			"--label", dockerx.LabelProject + "=" + project, "--label", dockerx.LabelService + "=" + service, "--label", dockerx.LabelRole + "=" + role,
			img, "sleep", "60"}
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
	start("nginx", "proxy", true)
	start("haproxy", "proxy", true)
	start("origin-go", "origin", true)
	start("caddy", "proxy", false)

	c := New(cli, project, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Refresh(ctx)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	imageID := strings.TrimSpace(run(t, "image", "inspect", "--format", "{{.Id}}", img))
	hv := strings.Fields(run(t, "run", "--rm", "--network", "none", img, "haproxy", "-v"))[2]
	want := fmt.Sprintf(`
# HELP proxybench_proxy_info A proxy container of the stack: its image, image id and the version its binary reports.
# TYPE proxybench_proxy_info gauge
proxybench_proxy_info{container="%[1]s-haproxy",image="%[2]s",image_id="%[3]s",service="haproxy",version="HAProxy %[4]s"} 1
proxybench_proxy_info{container="%[1]s-nginx",image="%[2]s",image_id="%[3]s",service="nginx",version="nginx/1.22.1"} 1
`, project, img, imageID, hv)
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

package containers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"proxybench/internal/dockerx"
)

func TestCgroupContainerID(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("ab12", 16)
	for _, tc := range []struct{ cg, want string }{
		{"/docker/" + id, id},
		{"/system.slice/docker-" + id + ".scope", id},
		{"/docker", ""},
		{"/", ""},
		{"/system.slice/containerd.service", ""},
		{"/docker/" + id[:63] + "x", ""},
	} {
		if got := CgroupContainerID(tc.cg); got != tc.want {
			t.Errorf("CgroupContainerID(%q) = %q, want %q", tc.cg, got, tc.want)
		}
	}
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	b, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return strings.TrimSpace(string(b))
}

// TestStatsForProjectContainersOnly embeds cAdvisor against the real
// cgroups of two real containers, one in the project and one not, and
// checks the project's container is exported with its names and a CPU
// counter matching the kernel's own, and the other is not exported.
func TestStatsForProjectContainersOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := dockerx.New(ctx)
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	defer cli.Close()
	img := strings.Fields(run(t, "images", "--format", "{{.Repository}}:{{.Tag}}", "proxybench/debian") + " ")
	if len(img) == 0 {
		t.Skip("no local proxybench/debian image (never pulled)")
	}
	project := fmt.Sprintf("proxybench-containers-test-%d", os.Getpid())
	in := run(t, "run", "-d", "--name", project+"-busy", "--network", "none", "--cpus", "0.3", "--memory", "64m",
		"--label", dockerx.LabelProject+"="+project, "--label", dockerx.LabelService+"=busy",
		img[0], "sh", "-c", "while :; do :; done")
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", in).Run() })
	out := run(t, "run", "-d", "--name", project+"-outsider", "--network", "none", img[0], "sleep", "60")
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", out).Run() })

	reg := prometheus.NewRegistry()
	cfg := DefaultConfig
	cfg.Project = project
	st, err := Start(ctx, cfg, cli, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	time.Sleep(3 * time.Second)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	cpu := byName["container_cpu_usage_seconds_total"]
	if cpu == nil {
		t.Fatalf("no container_cpu_usage_seconds_total among %d families", len(mfs))
	}
	var got float64
	var sampled time.Time
	for _, m := range cpu.Metric {
		l := map[string]string{}
		for _, lp := range m.Label {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["name"] != project+"-busy" {
			t.Errorf("series for a container outside the project: %v", l)
			continue
		}
		if l["service"] != "busy" || l["image"] != img[0] || l["id"] != "/docker/"+in {
			t.Errorf("labels %v, want service busy, image %s, id /docker/%s", l, img[0], in)
		}
		got += m.GetCounter().GetValue()
		sampled = time.UnixMilli(m.GetTimestampMs())
	}
	// The kernel's counter now is at least what cAdvisor read at its sample
	// time, and at most 0.3 CPU x the time since then more (a loaded
	// machine delays housekeeping, so the bound follows the sample's own
	// timestamp), plus a little for the read itself.
	b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/docker/" + in + "/cpuacct.usage")
	if err != nil {
		t.Skipf("not cgroup v1 cgroupfs here: %v", err)
	}
	age := time.Since(sampled)
	ns, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	t.Logf("cAdvisor %.3f s CPU sampled %v ago, kernel %.3f s", got, age.Round(time.Millisecond), ns/1e9)
	if age < 0 || age > 4*time.Second {
		t.Errorf("sample is %v old; housekeeping every 1-2 s should keep it under 2 s plus delays", age)
	}
	if kernel := ns / 1e9; got <= 0 || got > kernel || kernel-got > 0.3*age.Seconds()+0.1 {
		t.Errorf("cpu usage %v s, kernel says %v s %v after the sample", got, kernel, age)
	}
	for _, name := range []string{"container_memory_working_set_bytes", "container_memory_rss", "container_spec_memory_limit_bytes", "container_spec_cpu_quota"} {
		if byName[name] == nil || len(byName[name].Metric) != 1 {
			t.Errorf("%s: want one series, got %v", name, byName[name])
		}
	}
	if lim := byName["container_spec_memory_limit_bytes"]; lim != nil && len(lim.Metric) == 1 && lim.Metric[0].GetGauge().GetValue() != 64<<20 {
		t.Errorf("memory limit %v, want %d", lim.Metric[0].GetGauge().GetValue(), 64<<20)
	}
}

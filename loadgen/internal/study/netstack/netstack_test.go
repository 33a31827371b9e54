package netstack

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"proxybench/loadgen/internal/attack"
	"proxybench/loadgen/internal/study"
)

func TestNetstackRate(t *testing.T) {
	rate, smallest, which := fixedRate(map[string]float64{modeBare: 58000, modeHost: 59000, modeBridge: 12489}, 0.4, 500)
	if rate != 4500 || smallest != 12489 || which != modeBridge {
		t.Errorf("fixedRate = %v %v %q, want 4500 (40 %% of 12489 rounded down to 500) 12489 bridge", rate, smallest, which)
	}
	if rate, _, _ := fixedRate(map[string]float64{modeBare: 100}, 0.4, 500); rate != 500 {
		t.Errorf("a tiny capacity gives %v, want at least one step", rate)
	}
	if rate, _, which := fixedRate(nil, 0.4, 500); rate != 0 || which != "" {
		t.Errorf("no capacity gives %v %q", rate, which)
	}
}

func TestNetstackOrderRotates(t *testing.T) {
	want := [][]string{
		{modeBare, modeHost, modeBridge},
		{modeHost, modeBridge, modeBare},
		{modeBridge, modeBare, modeHost},
		{modeBare, modeHost, modeBridge},
	}
	for i, w := range want {
		if got := modeOrder(i + 1); !reflect.DeepEqual(got, w) {
			t.Errorf("repeat %d: order %v, want %v", i+1, got, w)
		}
	}
	if !reflect.DeepEqual(modes, []string{modeBare, modeHost, modeBridge}) {
		t.Errorf("modeOrder changed the base order: %v", modes)
	}
}

func TestNetstackConfig(t *testing.T) {
	c := nginxConfig(2)
	for _, want := range []string{"worker_processes 2;", "access_log off;", "keepalive_requests 1000000;", "keepalive_timeout 60s;",
		"include listen.conf;", "pid nginx.pid;", `return 200 "netstack ok\n";`} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
	if !strings.Contains(nginxConfig(0), "worker_processes 1;") {
		t.Error("0 workers should give 1")
	}
	if l := listenConf("127.0.0.1:1234"); l != "listen 127.0.0.1:1234 reuseport backlog=65535;\n" {
		t.Errorf("listen line %q", l)
	}
}

// TestNetstackConfigParses runs `nginx -t` on the config when the host has
// nginx (the study's preflight demands it; a unit test only skips).
func TestNetstackConfigParses(t *testing.T) {
	bin, err := hostNginx()
	if err != nil {
		t.Skip("no nginx on this host (apt-get install nginx):", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(nginxConfig(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "listen.conf"), []byte(listenConf("127.0.0.1:1")), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(nginxArgs(bin, dir)[1:], "-t", "-q")
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Errorf("nginx -t: %v\n%s", err, out)
	}
}

func TestNetstackParseNetDev(t *testing.T) {
	text := `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0:  123456    789    0    0    0     0          0         0     2000      10    0    0    0     0       0          0
`
	if n, err := parseNetDevRx(text, "eth0"); err != nil || n != 789 {
		t.Errorf("eth0 rx = %d %v, want 789", n, err)
	}
	if n, err := parseNetDevRx(text, "lo"); err != nil || n != 0 {
		t.Errorf("lo rx = %d %v", n, err)
	}
	if _, err := parseNetDevRx(text, "eth1"); err == nil {
		t.Error("a missing interface is an error")
	}
}

func TestNetstackContainerCgroup(t *testing.T) {
	for cg, want := range map[string]bool{
		"9:name=systemd:/\n4:memory:/process_api/2553\n0::/\n":                                       false,
		"9:name=systemd:/docker/b2af9205fc80\n8:pids:/docker/b2af9205fc80\n":                         true,
		"0::/system.slice/docker-b2af9205fc80.scope\n":                                               true,
		"0::/user.slice/user-1000.slice/session-2.scope\n":                                           false,
		"1:cpu:/kubepods/burstable/pod1/containerd-abc\n":                                            true,
		"12:devices:/system.slice/ssh.service\n11:cpu,cpuacct:/system.slice/ssh.service\n0::/init\n": false,
	} {
		if got := inContainerCgroup(cg); got != want {
			t.Errorf("inContainerCgroup(%q) = %v, want %v", cg, got, want)
		}
	}
}

func TestComposeImage(t *testing.T) {
	dir := t.TempDir()
	if got := study.ComposeImage(dir, "NGINX_IMAGE", "nginx:1.22.1"); got != "nginx:1.22.1" {
		t.Errorf("no file: %q", got)
	}
	if err := os.MkdirAll(filepath.Join(dir, "compose"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := "# written by scripts/images.sh\nHAPROXY_IMAGE=x\nNGINX_IMAGE=proxybench/nginx:1.22-debian12\nOFFLINE=1\n"
	if err := os.WriteFile(filepath.Join(dir, "compose", "images.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := study.ComposeImage(dir, "NGINX_IMAGE", "nginx:1.22.1"); got != "proxybench/nginx:1.22-debian12" {
		t.Errorf("from images.env: %q", got)
	}
	if got := study.ComposeImage(dir, "CADDY_IMAGE", "caddy"); got != "caddy" {
		t.Errorf("missing key: %q", got)
	}
}

func TestNetstackBadResponses(t *testing.T) {
	if s := badResponses(&attack.Result{Requests: 10, Codes: map[int]int64{200: 10}}); s != "" {
		t.Errorf("all 200: %q", s)
	}
	s := badResponses(&attack.Result{Requests: 10, Errors: 2, Codes: map[int]int64{200: 9, 502: 1},
		ErrorReasons: map[string]int64{"connect": 2}})
	if !strings.Contains(s, "2 transport errors (2 connect)") || !strings.Contains(s, "1 × 502") {
		t.Errorf("bad responses: %q", s)
	}
}

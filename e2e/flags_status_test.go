//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testProxy runs nginx from the stack's image as the `custom` proxy slot
// (port 8881, the compose project's labels, host networking) with conf as
// the server block's routes for /fast/. It writes an access log of
// "$msec $status" lines the test reads as its own count of completions.
func testProxy(t *testing.T, routes string) {
	t.Helper()
	img := docker(t, "inspect", "-f", "{{.Config.Image}}", "proxybench-nginx")
	dir := t.TempDir()
	conf := `worker_processes 2;
pid /tmp/nginx.pid;
error_log stderr warn;
events { worker_connections 4096; }
http {
    log_format pb '$msec $status';
    access_log /tmp/access.log pb;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    keepalive_requests 1000000;
    upstream fast { server 127.0.0.1:9104; keepalive 64; }
    upstream go { server 127.0.0.1:9103; keepalive 64; }
    upstream node { server 127.0.0.1:9101; keepalive 64; }
    proxy_read_timeout 60s;
    # Faults spare a connection's first request: preflight sends one GET
    # per route on a fresh connection, and must see a healthy route.
    map $connection_requests $pb_warm { 1 0; default 1; }
    map $pb_warm $pb_up { 1 go; default fast; }
    map $pb_warm $pb_up_node { 1 fast; default node; }
    map "$pb_warm$pb_split" $pb_fault { 1a 404; 1b 502; 1c rare404; 1h hang; default ""; }
    split_clients "${request_id}" $pb_split {
        30%   a;
        5%    b;
        0.05% c;
        1%    h;
        *     "";
    }
    server {
        listen 127.0.0.1:8881 reuseport;
        location = /fast/healthz { proxy_pass http://fast/healthz; }
` + routes + `
    }
}
`
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// The CPUs and quota of the stack's proxies (its placement): a run
	// refuses a proxy placed otherwise (parity).
	cpuset, nano, _ := strings.Cut(docker(t, "inspect", "-f", "{{.HostConfig.CpusetCpus}}|{{.HostConfig.NanoCpus}}", "proxybench-nginx"), "|")
	cores, _ := strconv.ParseFloat(nano, 64)
	_ = exec.Command("docker", "rm", "-f", "proxybench-custom").Run()
	run := []string{"run", "-d", "--name", "proxybench-custom", "--network", "host", "--memory", "512m",
		"--cpus", strconv.FormatFloat(cores/1e9, 'f', -1, 64), "--cpuset-cpus", cpuset,
		"--label", "com.docker.compose.project=proxybench", "--label", "com.docker.compose.service=custom",
		"--label", "proxybench.role=proxy", "--label", "proxybench.version-cmd=nginx -v",
		"-v", dir + ":/etc/proxybench:ro", img, "nginx", "-c", "/etc/proxybench/nginx.conf", "-g", "daemon off;"}
	docker(t, run...)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", "proxybench-custom").Run() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:8881/fast/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			logs, _ := exec.Command("docker", "logs", "proxybench-custom").CombinedOutput()
			t.Fatalf("test proxy not answering: %v\n%s", err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// accessLog returns the test proxy's completions: time and status.
func accessLog(t *testing.T) (at []time.Time, status []string) {
	t.Helper()
	out, err := exec.Command("docker", "exec", "proxybench-custom", "cat", "/tmp/access.log").Output()
	if err != nil {
		t.Fatalf("read the test proxy's access log: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		sec, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		at = append(at, time.Unix(0, int64(sec*1e9)))
		status = append(status, f[1])
	}
	return at, status
}

const passthrough = `        location /fast/ { proxy_pass http://fast/; }`

// TestFlagUnexpectedStatus: a proxy that answers 30 % of requests with a
// cheap 404 is invalid (unexpected_status) and cannot win its origin; then,
// in one run, one fault per origin: 5 % of 502s in front of go is invalid
// for errors (5xx are errors, not unexpected statuses), node's route to
// another origin is misrouted, and 0.05 % of 404s in front of fast stay
// under the threshold.
func TestFlagUnexpectedStatus(t *testing.T) {
	results := t.TempDir()
	t.Run("404s", func(t *testing.T) {
		testProxy(t, `        location /fast/ { if ($pb_fault = 404) { return 404; } proxy_pass http://fast/; }`)
		// The honest proxy beside it, for the winners table.
		cells := runCells(t, results, "st-404s", nil, "-tier", "3s", "-proxies", "nginx,custom", "-origins", "fast", "-concurrency", "20", "-isolate=false")
		c := cell(t, cells, "custom.fast.simple.3s.r1")
		mustFire(t, c, "unexpected_status", "invalid", "404")
		mustStayQuiet(t, c, "misrouted")
		honest := cell(t, cells, "nginx.fast.simple.3s.r1")
		mustStayQuiet(t, honest, "unexpected_status", "errors", "misrouted")
		if c.Goodput == nil || c.RPS == nil || *c.Goodput > 0.75**c.RPS {
			t.Errorf("custom: goodput %v of %v req/s: want the 404s left out of goodput", c.Goodput, c.RPS)
		}
		md, err := os.ReadFile(filepath.Join(results, "st-404s", "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(md), "\n") {
			if strings.HasPrefix(l, "| fast ") && strings.Contains(l, "| custom |") {
				t.Errorf("the 404ing proxy won its origin: %s", l)
			}
		}
	})
	testProxy(t, `        location /fast/ { if ($pb_fault = rare404) { return 404; } proxy_pass http://fast/; }
        location /go/ { if ($pb_fault = 502) { return 502; } proxy_pass http://go/; }
        location /node/ { proxy_pass http://$pb_up_node/; }`)
	cells := runCells(t, results, "st-origins", nil, "-tier", "3s", "-proxies", "custom", "-origins", "fast,go,node", "-concurrency", "20", "-isolate=false")
	for _, tc := range []struct {
		name, origin string
		fire         []string
		quiet        []string
		reasonHas    string
	}{
		{"502s", "go", []string{"errors"}, []string{"unexpected_status"}, "5xx"}, // 5xx are judged by errors alone, at its own threshold
		{"wrongorigin", "node", []string{"misrouted"}, []string{"unexpected_status"}, "X-Origin"},
		{"rare404", "fast", nil, []string{"unexpected_status", "errors", "misrouted"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cell(t, cells, "custom."+tc.origin+".simple.3s.r1")
			for _, f := range tc.fire {
				mustFire(t, c, f, "invalid")
			}
			if len(tc.fire) > 0 {
				mustFire(t, c, tc.fire[0], "", tc.reasonHas)
			}
			mustStayQuiet(t, c, tc.quiet...)
			if len(tc.fire) == 0 && c.Validity.Verdict == "invalid" {
				t.Errorf("control %s invalid: %s", c.ID, c.flags())
			}
		})
	}
}

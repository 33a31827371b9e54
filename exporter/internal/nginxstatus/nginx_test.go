package nginxstatus

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A body captured from nginx 1.22.1 (Debian bookworm) under load.
const realBody = "Active connections: 291 \nserver accepts handled requests\n 16630948 16630948 31070465 \nReading: 6 Writing: 179 Waiting: 106 \n"

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       Status
		err        string
	}{
		{name: "real", body: realBody, want: Status{Active: 291, Accepted: 16630948, Handled: 16630948, Requests: 31070465, Reading: 6, Writing: 179, Waiting: 106}},
		{name: "crlf", body: strings.ReplaceAll(realBody, "\n", "\r\n"), want: Status{Active: 291, Accepted: 16630948, Handled: 16630948, Requests: 31070465, Reading: 6, Writing: 179, Waiting: 106}},
		{name: "html", body: "<html>404</html>", err: "is the URL an nginx stub_status page"},
		{name: "word changed", body: strings.Replace(realBody, "Writing:", "Sending:", 1), err: `"Sending:"`},
		{name: "negative", body: strings.Replace(realBody, "291", "-1", 1), err: "field 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(realBody))
	f.Add([]byte("Active connections: 1\nserver accepts handled requests\n 1 1 1\nReading: 0 Writing: 1 Waiting: 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err == nil && s.Handled > 0 && !strings.Contains(string(b), fmt.Sprint(s.Handled)) {
			t.Fatalf("handled %d not in input", s.Handled)
		}
	})
}

func TestDownIsReported(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New("http://"+addr+"/stub_status", http.DefaultClient, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil))))
	want := `
# HELP nginx_up Whether the last scrape of nginx stub_status succeeded.
# TYPE nginx_up gauge
nginx_up 0
# HELP proxybench_exporter_scrape_collector_success Whether a collector succeeded.
# TYPE proxybench_exporter_scrape_collector_success gauge
proxybench_exporter_scrape_collector_success{collector="nginx"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "nginx_up", "proxybench_exporter_scrape_collector_success", "nginx_http_requests_total"); err != nil {
		t.Error(err)
	}
}

// TestRealNginx scrapes a real nginx 1.22 (from the local base image) on
// a free loopback port after sending it a known number of requests.
func TestRealNginx(t *testing.T) {
	b, err := exec.Command("docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "proxybench/debian").Output()
	if err != nil || len(strings.Fields(string(b))) == 0 {
		t.Skip("no docker or no local proxybench/debian image")
	}
	img := strings.Fields(string(b))[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := fmt.Sprintf(`events {} http { access_log off; server { listen 127.0.0.1:%d; location = /stub_status { stub_status; } location / { return 200 "ok\n"; } } }`, port)
	out, err := exec.Command("docker", "run", "-d", "--rm", "--network", "host", img, "sh", "-c",
		"printf '%s' \"$0\" > /tmp/nginx.conf && exec nginx -c /tmp/nginx.conf -g 'daemon off; error_log stderr;'", conf).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run nginx: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if r, err := http.Get(base + "/stub_status"); err == nil {
			r.Body.Close()
			break
		}
		if i > 50 {
			t.Fatal("nginx did not come up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 0; i < 10; i++ {
		r, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	c := New(base+"/stub_status", &http.Client{}, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	got, err := testutil.GatherAndCount(reg)
	if err != nil || got != 10 {
		t.Fatalf("%d series, %v; want 10", got, err)
	}
	s, err := c.fetch()
	if err != nil {
		t.Fatal(err)
	}
	// At least: the readiness probe, 10 requests, the gather and this one.
	if s.Requests < 13 || s.Active < 1 || s.Accepted < 1 || s.Handled != s.Accepted {
		t.Errorf("status %+v after 13 requests", s)
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New("http://127.0.0.1:1/stub_status", http.DefaultClient, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil))))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

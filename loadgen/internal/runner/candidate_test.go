package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/plan"
	"proxybench/loadgen/internal/progress"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCandidateConfig: the candidate's config takes the place of the
// proxy's config mount (a file, or one file of a directory by its name, or
// a whole directory), every listener port of the proxy moves by
// stack.CandidateShift and no other number does, and a config that would
// not listen where the loadgen sends is refused, naming what to do.
func TestCandidateConfig(t *testing.T) {
	caddy, _ := stack.LookupProxy("caddy")
	traefik, _ := stack.LookupProxy("traefik")
	d := t.TempDir()
	write(t, d+"/caddy/Caddyfile", "admin 127.0.0.1:2019\n:8884 {}\nhttps://:9884 {}\n:8984 {}\nupstream 127.0.0.1:9104 timeout 18884\n")
	write(t, d+"/traefik/traefik.yml", `address: ":8883"`+"\n"+`tls: ":9883"`+"\n"+`ping: ":8983"`+"\n")
	write(t, d+"/traefik/dynamic.yml", "url: http://127.0.0.1:9104\n")
	write(t, d+"/mine/dynamic.yml", "url: http://127.0.0.1:9104\nmiddleware: accesslog\n")
	write(t, d+"/mine/other.yml", "x\n")
	write(t, d+"/noport.conf", "listen 8080\n")

	// Only the image changes: the proxy's own file, its ports moved.
	dst, src, err := candidateConfig(caddy, map[string]string{"/etc/proxybench/Caddyfile": d + "/caddy/Caddyfile", "/pbhealth": "/x"}, "", d+"/out1")
	if err != nil || dst != "/etc/proxybench/Caddyfile" || src != d+"/out1/Caddyfile" {
		t.Fatalf("got %s %s %v", dst, src, err)
	}
	if got, want := read(t, src), "admin 127.0.0.1:12019\n:18884 {}\nhttps://:19884 {}\n:18984 {}\nupstream 127.0.0.1:9104 timeout 18884\n"; got != want {
		t.Errorf("caddy's config:\n%s\nwant\n%s", got, want)
	}
	if read(t, d+"/caddy/Caddyfile") == read(t, src) {
		t.Error("the proxy's own config was changed")
	}

	// One file of Traefik's directory, by its name; the other stays.
	own := map[string]string{"/etc/proxybench": d + "/traefik", "/etc/proxybench-tls": d}
	dst, src, err = candidateConfig(traefik, own, d+"/mine/dynamic.yml", d+"/out2")
	if err != nil || dst != "/etc/proxybench" || src != d+"/out2" {
		t.Fatalf("got %s %s %v", dst, src, err)
	}
	if !strings.Contains(read(t, src+"/dynamic.yml"), "accesslog") || !strings.Contains(read(t, src+"/traefik.yml"), `":18883"`) {
		t.Errorf("traefik's candidate config: %q %q", read(t, src+"/dynamic.yml"), read(t, src+"/traefik.yml"))
	}
	// A file named after none of them is refused with the names it may take.
	if _, _, err := candidateConfig(traefik, own, d+"/mine/other.yml", d+"/out3"); err == nil || !strings.Contains(err.Error(), "dynamic.yml, traefik.yml") {
		t.Errorf("a file of another name: %v", err)
	}
	// A config without the proxy's traffic port would not be where the
	// loadgen sends the candidate's traffic.
	if _, _, err := candidateConfig(caddy, map[string]string{"/etc/proxybench/Caddyfile": d + "/caddy/Caddyfile"}, d+"/noport.conf", d+"/out4"); err == nil || !strings.Contains(err.Error(), "port 8884") {
		t.Errorf("a config without the port: %v", err)
	}
	if _, _, err := candidateConfig(caddy, map[string]string{"/pbhealth": "/x"}, "", d+"/out5"); err == nil {
		t.Error("no config mount: no error")
	}
	if u, err := shiftURL("https://127.0.0.1:9884"); err != nil || u != "https://127.0.0.1:19884" {
		t.Errorf("shiftURL: %s %v", u, err)
	}
}

// pyConfProxy answers like pyProxy on the port its config file names, and
// says which config served the request (X-Tag).
const pyConfProxy = `
import http.server
port, tag = open("/etc/proxybench/proxy.conf").read().split()
` + pyHandler + `
http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), H).serve_forever()
`

// TestDockerCandidateContainer runs a duet whose candidate is another
// config of the proxy on the real engine: the candidate runs in a clone of
// the proxy's container (same quota), on its config with the port moved;
// in its cells the proxy is paused (so every answer came from the
// candidate), in the proxy's cells the candidate is; the config measured
// is kept with the run, and the clone is gone afterwards.
func TestDockerCandidateContainer(t *testing.T) {
	t.Parallel()
	ctx, dc, img := realEngine(t)
	px, _ := stack.LookupProxy("custom")
	project := fmt.Sprintf("pbcand-test-%d", os.Getpid())
	conf := t.TempDir()
	write(t, conf+"/proxy.conf", fmt.Sprintf("%d A\n", px.Port))
	mine := filepath.Join(t.TempDir(), "proxy.conf")
	write(t, mine, fmt.Sprintf("%d B\n", px.Port))
	proxyID := dockerRun(t, project, "custom", "proxy", "-v", conf+":/etc/proxybench:ro", img, "python3", "-c", pyConfProxy)
	// The run's preflight does not wait (-preflight-wait 0s): wait here
	// until the proxy answers.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/fast/", px.Port))
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy never answered: %v", err)
		}
	}
	candName := project + "-" + stack.CandidateService("custom")
	t.Cleanup(func() { dc.Remove(context.WithoutCancel(ctx), candName) })

	seen := map[string]string{}
	h := &hooks{start: func(_ int, c plan.Cell) {
		p, perr := dc.Inspect(ctx, proxyID)
		cd, cerr := dc.Inspect(ctx, candName)
		seen[c.ID] = fmt.Sprintf("proxy %s, candidate %s %g %v %v", p.State, cd.State, cd.CPUs, perr, cerr)
	}}
	dir := t.TempDir()
	a := args(t, dir, "-project", project, "-tier", "1s", "-proxies", "custom", "-origins", "fast", "-repeats", "2", "-control=false",
		"-isolate=true", "-candidate-config", mine, "-run", "cand")
	code := run(ctx, a, io.Discard, io.Discard, testLog(t), env{
		target: func(string) (string, error) { return fmt.Sprintf("http://127.0.0.1:%d", px.Port), nil },
		docker: func(context.Context) (Docker, error) { return dc, nil }, clock: &sleeper{},
		display: func(d progress.Display) progress.Display { h.Display = d; return h },
	})
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	quota := fmt.Sprint(unplacedStack(t).ctrs[0].CPUs)
	for id, want := range map[string]string{
		"custom.fast.simple.1s.r1": "proxy running, candidate paused", "custom.fast.simple.1s.candidate.r1": "proxy paused, candidate running",
		"custom.fast.simple.1s.candidate.r2": "proxy paused, candidate running", "custom.fast.simple.1s.r2": "proxy running, candidate paused",
	} {
		if got := seen[id]; got != want+" "+quota+" <nil> <nil>" {
			t.Errorf("at the start of %s the engine said %q, want %q", id, got, want+" "+quota)
		}
	}
	m, err := manifest.Read(filepath.Join(dir, "cand", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Cells {
		if c.Status != manifest.CellOK || c.Requests == 0 || c.Errors != 0 {
			t.Errorf("cell %s: %s %s, %d requests, %d errors %v", c.ID, c.Status, c.Reason, c.Requests, c.Errors, c.ErrorReasons)
		}
		if c.Arm == cellid.ArmCandidate && c.ProxyCPUSeconds == nil {
			t.Errorf("cell %s: no CPU reading of the candidate's container", c.ID)
		}
	}
	if got := read(t, filepath.Join(dir, "cand", "candidate", "custom", "proxy.conf")); got != fmt.Sprintf("%d B\n", px.Port+stack.CandidateShift) {
		t.Errorf("the candidate's config kept with the run: %q", got)
	}
	if v := m.Versions[stack.CandidateService("custom")]; !strings.HasPrefix(v, "Python") {
		t.Errorf("the candidate's version: %q (versions %v)", v, m.Versions)
	}
	if _, err := dc.Inspect(ctx, candName); !dockerx.IsNotFound(err) {
		t.Errorf("the candidate container is still there after the run: %v", err)
	}
	if p, _ := dc.Inspect(ctx, proxyID); p.State != "running" {
		t.Errorf("after the run the proxy is %s", p.State)
	}
}
